import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCallbackReceiver, type CallbackReceiver } from '../support/callback-receiver.js';
import { addClinic, authHeaders, post, registerBody, VALID_SNILS } from '../support/emdr.js';
import type { TestService } from '../support/service.js';
import { until } from '../support/until.js';
import { authenticatedUser, MARIA, startEhrTestService } from '../ehr/support/fixtures.js';
import { VERSION } from '../ehr/support/rpc.js';

interface LogLine {
  level: number;
  msg: string;
  requestId?: string;
  [field: string]: unknown;
}

/** The service's log lines, parsed as they are written. */
function logCapture(): { stream: Writable; lines: LogLine[] } {
  const lines: LogLine[] = [];
  let partial = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      const text = partial + chunk.toString();
      const complete = text.split('\n');
      partial = complete.pop()!;
      for (const line of complete) if (line) lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  return { stream, lines };
}

const INFO = 30;
const WARN = 40;
const DEBUG = 20;

/**
 * Issue 22, item 4: what terminal 1 shows. An access line per request at info (no query string, no
 * personal data), each failed callback attempt at warn, and a start line with both URLs.
 */
describe('the log a newcomer reads', () => {
  let service: TestService;
  let receiver: CallbackReceiver;
  const log = logCapture();

  beforeAll(async () => {
    receiver = await startCallbackReceiver();
    receiver.reply = () => ({ status: 503, body: { status: 'Error' } });
    service = await startEhrTestService({ LOG_LEVEL: 'debug', CALLBACK_RETRY_SCHEDULE: '0,50ms' }, undefined, log.stream);
  });

  afterAll(async () => {
    await service?.stop();
    await receiver?.close();
  });

  const accessLines = () => log.lines.filter((line) => line.msg === 'request');

  it('starts with a line that names both URLs', () => {
    const started = log.lines.find((line) => line.msg.startsWith('ehr-gateway started'))!;
    expect(started.level).toBe(INFO);
    expect(started.msg).toBe(
      `ehr-gateway started: ${service.publicUrl} (public: interface A at /${VERSION}/, interface B at /api/*, /docs, /console), ${service.internalUrl} (internal: the internal methods of interface A, /metrics)`,
    );
    expect(started).toMatchObject({ publicUrl: service.publicUrl, internalUrl: service.internalUrl });
  });

  it('logs each request at info once answered: method, path without its query, status, duration and request id; no personal data', async () => {
    const clinic = await addClinic(service, receiver.url);
    const requestId = `access-${Date.now()}`;
    // A careless client's query string with a secret in it (refused: the spec names no such parameter).
    const answer = await fetch(`${service.publicUrl}/api/messages?state=failed&token=${clinic.token}`, {
      headers: { ...authHeaders(clinic), 'x-request-id': requestId },
    });
    expect(answer.status).toBe(400);
    const line = await until('the access line', async () => accessLines().find((candidate) => candidate.requestId === requestId), Boolean);
    expect(line).toMatchObject({ level: INFO, listener: 'public', method: 'GET', path: '/api/messages', status: 400, requestId });
    expect(line!.durationMs).toEqual(expect.any(Number));
    expect(JSON.stringify(line)).not.toContain(clinic.token);

    // Interface A: the patient's data is in the body, never in the line.
    const { cred } = await authenticatedUser(service, MARIA);
    const rpcId = `access-rpc-${Date.now()}`;
    await fetch(`${service.publicUrl}/${VERSION}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': rpcId },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'patient.get_patient', params: {}, cred }),
    });
    const rpcLine = await until('the interface A access line', async () => accessLines().find((candidate) => candidate.requestId === rpcId), Boolean);
    expect(rpcLine).toMatchObject({ method: 'POST', path: `/${VERSION}/`, status: 200 });
    const everything = JSON.stringify(log.lines);
    for (const personal of ['Иванова', 'иванова', '89161234567', '+79161234567', cred.token, VALID_SNILS]) expect(everything).not.toContain(personal);

    // Probes are for machines: debug, not info.
    await fetch(`${service.internalUrl}/readyz`, { headers: { 'x-request-id': `probe-${rpcId}` } });
    const probe = await until('the probe line', async () => accessLines().find((candidate) => candidate.requestId === `probe-${rpcId}`), Boolean);
    expect(probe).toMatchObject({ level: DEBUG, listener: 'internal', path: '/readyz' });
  });

  it('logs each failed callback attempt at warn with its request id and the next attempt, then the schedule running out', async () => {
    const clinic = await addClinic(service, receiver.url);
    receiver.signingSecret = clinic.signingSecret;
    const requestId = `failing-${Date.now()}`;
    const { body: ack } = await post(
      service.publicUrl,
      '/api/RegisterDocument',
      { ...authHeaders(clinic), 'x-request-id': requestId },
      registerBody({ patientSnils: VALID_SNILS }),
    );
    const failures = await until(
      'two failed attempts and the end of the schedule',
      async () => log.lines.filter((line) => line.requestId === requestId && line.level === WARN),
      (lines) => lines.length >= 3,
      30_000,
    );
    const [first, second, exhausted] = failures;
    expect(first).toMatchObject({
      msg: 'callback attempt failed',
      queueMessageId: ack.queueMessageId,
      callback: 'SendRegisterDocumentResponse',
      url: `${receiver.url}/api/SendRegisterDocumentResponse`,
      httpStatus: 503,
      error: 'HTTP 503',
      nextAttemptInMs: 50,
    });
    expect(second).toMatchObject({ msg: 'callback attempt failed', nextAttemptInMs: null });
    expect(exhausted!.msg).toMatch(/^callback failed: retry schedule exhausted; replay it from \/console/);
  });
});
