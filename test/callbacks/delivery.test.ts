import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { exitOf, runCli, spawnCli } from '../support/cli.js';
import { startCallbackReceiver, SUCCESS, type CallbackReceiver, type ReceivedCallback } from '../support/callback-receiver.js';
import { addClinic, authHeaders, pipelineSnapshot, post, registerBody } from '../support/emdr.js';
import { startTestService, type TestService } from '../support/service.js';
import { until } from '../support/until.js';

const SCHEDULE = '0,200ms,200ms';

const forRequest = (queueMessageId: string) => (received: ReceivedCallback[]) => received.filter((callback) => callback.body.queueMessageId === queueMessageId);

async function messageState(service: TestService, clinic: CreatedClinicAccount, queueMessageId: string) {
  return (await fetch(`${service.publicUrl}/api/messages/${queueMessageId}`, { headers: authHeaders(clinic) })).json();
}

describe('callback retries in one service', () => {
  let service: TestService;
  let receiver: CallbackReceiver;
  let clinic: CreatedClinicAccount;

  beforeAll(async () => {
    receiver = await startCallbackReceiver();
    service = await startTestService({ CALLBACK_RETRY_SCHEDULE: SCHEDULE });
    clinic = await addClinic(service, receiver.url);
    receiver.signingSecret = clinic.signingSecret;
  });

  afterAll(async () => {
    await service?.stop();
    await receiver?.close();
  });

  it('retries a failing and a not-Success answer until Success, with the same webhook-id, and holds the result until then', async () => {
    const body = registerBody();
    let acceptanceCalls = 0;
    receiver.reply = (callback) => {
      if (callback.body.localUid !== body.localUid || callback.name !== 'SendRegisterDocumentResponse') return SUCCESS;
      acceptanceCalls += 1;
      if (acceptanceCalls === 1) return { status: 503, body: { status: 'Error' } };
      if (acceptanceCalls === 2) return { status: 200, body: { status: 'Received' } };
      return SUCCESS;
    };
    const { body: ack } = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), body);
    const callbacks = forRequest(ack.queueMessageId)(await receiver.waitFor((received) => forRequest(ack.queueMessageId)(received).length >= 4));
    expect(callbacks.map((callback) => callback.name)).toEqual([
      'SendRegisterDocumentResponse',
      'SendRegisterDocumentResponse',
      'SendRegisterDocumentResponse',
      'SendRegisterDocumentResultResponse',
    ]);
    expect(new Set(callbacks.slice(0, 3).map((callback) => callback.headers['webhook-id'])).size).toBe(1);
    expect(callbacks.every((callback) => callback.signatureValid)).toBe(true);
    const state = await messageState(service, clinic, ack.queueMessageId);
    expect(state.callbacks[0]).toMatchObject({
      state: 'delivered',
      lastError: 'answer status is "Received", not "Success"',
      attempts: [
        { attempt: 1, httpStatus: 503, error: 'HTTP 503' },
        { attempt: 2, httpStatus: 200, error: 'answer status is "Received", not "Success"' },
        { attempt: 3, httpStatus: 200 },
      ],
    });
  });

  it('reads no more than 64 KiB of an answer: a longer one is not a delivery, and the next attempt is', async () => {
    const body = registerBody();
    let answers = 0;
    receiver.reply = (callback) => {
      if (callback.body.localUid !== body.localUid || callback.name !== 'SendRegisterDocumentResponse') return SUCCESS;
      answers += 1;
      return answers === 1 ? { status: 200, body: { status: 'Success', padding: 'x'.repeat(1024 * 1024) } } : SUCCESS;
    };
    const { body: ack } = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), body);
    await receiver.waitFor((received) => forRequest(ack.queueMessageId)(received).length >= 3);
    const state = await messageState(service, clinic, ack.queueMessageId);
    expect(state.callbacks[0]).toMatchObject({
      state: 'delivered',
      attempts: [
        { attempt: 1, httpStatus: 200, error: 'answer is longer than 65536 bytes' },
        { attempt: 2, httpStatus: 200 },
      ],
    });
  });

  it('marks a callback failed when the schedule is exhausted, holds the result, and `callbacks replay` delivers both', async () => {
    const body = registerBody();
    let refusing = true;
    receiver.reply = (callback) => (refusing && callback.body.localUid === body.localUid ? { status: 500, body: {} } : SUCCESS);
    const { body: ack } = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), body);
    await receiver.waitFor((received) => forRequest(ack.queueMessageId)(received).length >= 3);
    const state = await until(
      'the acceptance callback failed',
      () => messageState(service, clinic, ack.queueMessageId),
      (answer) => answer.callbacks[0]?.state === 'failed',
    );
    expect(state.callbacks[0]).toMatchObject({ state: 'failed', lastError: 'HTTP 500' });
    expect(state.callbacks[0].attempts).toHaveLength(3);
    // The registration went on, but its callback waits for the acceptance callback.
    expect(state).toMatchObject({ state: 'completed', callbacks: [{}, { name: 'SendRegisterDocumentResultResponse', state: 'waiting', attempts: [] }] });

    const shown = await runCli(['messages', 'show', ack.queueMessageId], { ...service.env, LOG_LEVEL: 'silent' });
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ queueMessageId: ack.queueMessageId, callbacks: [{ state: 'failed' }, { state: 'waiting' }] });

    refusing = false;
    const replay = await runCli(['callbacks', 'replay', ack.queueMessageId], { ...service.env, LOG_LEVEL: 'silent', CALLBACK_RETRY_SCHEDULE: SCHEDULE });
    expect(replay.code).toBe(0);
    expect(JSON.parse(replay.stdout).replayed).toEqual([state.callbacks[0].webhookId]);
    const callbacks = forRequest(ack.queueMessageId)(
      await receiver.waitFor((received) => forRequest(ack.queueMessageId)(received).some((callback) => callback.name === 'SendRegisterDocumentResultResponse')),
    );
    expect(callbacks.map((callback) => callback.name)).toEqual([...Array(4).fill('SendRegisterDocumentResponse'), 'SendRegisterDocumentResultResponse']);
  });

  it('sent only callback bodies that match their schemas in specs/openapi.yaml', () => {
    expect(receiver.received.length).toBeGreaterThan(0);
    expect(receiver.schemaViolations).toEqual([]);
  });
});

describe("the retry schedule's first entry", () => {
  let service: TestService;
  let receiver: CallbackReceiver;
  let clinic: CreatedClinicAccount;

  beforeAll(async () => {
    receiver = await startCallbackReceiver();
    receiver.reply = () => ({ status: 503, body: { status: 'Error' } });
    service = await startTestService({ CALLBACK_RETRY_SCHEDULE: '1500ms,200ms' });
    clinic = await addClinic(service, receiver.url);
    receiver.signingSecret = clinic.signingSecret;
  });

  afterAll(async () => {
    await service?.stop();
    await receiver?.close();
  });

  it('is the delay of the first attempt: 1500ms,200ms tries 1.5 s after the callback is due, once more 0.2 s later, then fails', async () => {
    const acknowledged = Date.now();
    const { body: ack } = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody());
    const state = await until(
      'the acceptance callback failed',
      () => messageState(service, clinic, ack.queueMessageId),
      (answer) => answer.callbacks[0]?.state === 'failed',
    );
    const attempts = state.callbacks[0].attempts as Array<{ at: string }>;
    expect(attempts).toHaveLength(2);
    // Lower bounds only: a busy machine may be later, never earlier.
    expect(Date.parse(attempts[0]!.at) - acknowledged).toBeGreaterThanOrEqual(1500);
    expect(Date.parse(attempts[1]!.at) - Date.parse(attempts[0]!.at)).toBeGreaterThanOrEqual(200);
    expect(forRequest(ack.queueMessageId)(receiver.received)).toHaveLength(2);
  });
});

describe('a worker killed between acknowledgement and delivery', () => {
  let api: TestService;
  let receiver: CallbackReceiver;

  beforeAll(async () => {
    receiver = await startCallbackReceiver();
    api = await startTestService({ CALLBACK_RETRY_SCHEDULE: SCHEDULE }, ['emdr']);
  });

  afterAll(async () => {
    await api?.stop();
    await receiver?.close();
  });

  it('loses nothing: after kill -9 and a restart every callback is delivered, in order, under the same webhook-id', { timeout: 900_000 }, async () => {
    const clinic = await addClinic(api, receiver.url);
    receiver.signingSecret = clinic.signingSecret;
    // Every role has an internal listener (health, /metrics): the workers' on ports of their own.
    const workerEnv = { ...api.env, CALLBACK_RETRY_SCHEDULE: SCHEDULE, JOB_EXPIRY: '2s', LOG_LEVEL: 'info', INTERNAL_PORT: '0' };
    // The first delivery attempt never gets an answer: the worker is killed while it waits.
    receiver.reply = (callback) => (receiver.received.filter((item) => item.name === callback.name).length === 0 ? 'hang' : SUCCESS);
    /** A worker's output, for the message of a wait that fails. */
    const said = (child: ReturnType<typeof spawnCli>) => {
      let output = '';
      child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      return () => output.slice(-3000);
    };
    const waitOrTell = <T>(waiting: Promise<T>, name: string, output: () => string) =>
      waiting.catch(async (error: Error) =>
        Promise.reject(
          new Error(
            `${error.message}; ${name} said: ${output()}; the pipeline: ${await pipelineSnapshot(api.databaseUrl)}; the callbacks received: ${receiver.received.map((callback) => callback.rawBody).join(' ')}`,
          ),
        ),
      );

    const { body: ack } = await post(api.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody());
    expect(ack.queueMessageId).toEqual(expect.any(String));
    const first = spawnCli(['serve', '--only', 'worker'], workerEnv);
    const firstSaid = said(first);
    // A worker's start takes seconds, or minutes on a machine under a CPU hog and other work (load 15-20).
    await waitOrTell(
      receiver.waitFor((received) => received.length >= 1, 300_000),
      'worker 1',
      firstSaid,
    );
    first.kill('SIGKILL');
    expect(await exitOf(first)).toBeNull();

    const second = spawnCli(['serve', '--only', 'worker'], workerEnv);
    const secondSaid = said(second);
    try {
      // The second worker starts and takes the callback once its lease (JOB_EXPIRY) ran out.
      const callbacks = await waitOrTell(
        receiver.waitFor((received) => received.some((callback) => callback.name === 'SendRegisterDocumentResultResponse'), 300_000),
        'worker 2',
        secondSaid,
      );
      expect(callbacks.map((callback) => callback.name)).toEqual([
        'SendRegisterDocumentResponse',
        'SendRegisterDocumentResponse',
        'SendRegisterDocumentResultResponse',
      ]);
      expect(callbacks[0]!.headers['webhook-id']).toBe(callbacks[1]!.headers['webhook-id']);
      expect(callbacks.every((callback) => callback.signatureValid)).toBe(true);
    } finally {
      // The result's first attempt hangs too: the worker finishes it (15 s) before it exits.
      second.kill('SIGTERM');
      expect(await exitOf(second, 120_000)).toBe(0);
    }
  });

  it('sent only callback bodies that match their schemas in specs/openapi.yaml', () => {
    expect(receiver.received.length).toBeGreaterThan(0);
    expect(receiver.schemaViolations).toEqual([]);
  });
});
