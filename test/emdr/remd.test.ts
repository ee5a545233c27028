import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { exitOf } from '../support/cli.js';
import { startCallbackReceiver, type CallbackReceiver, type ReceivedCallback } from '../support/callback-receiver.js';
import { addClinic, authHeaders, FIXTURE_SIGNATURE, FIXTURE_XML, ORGANIZATION, post, registerBody } from '../support/emdr.js';
import { statusLineOf } from '../support/raw-http.js';
import { spawnServe } from '../support/processes.js';
import { gatewayEndpointIn, registerDocumentResult, sha256, soapMessage, startRemdStandIn, type RemdStandIn } from '../support/remd-stand-in.js';
import { startTestService, type TestService } from '../support/service.js';
import { until } from '../support/until.js';

/**
 * Interface B connected to the federal registry (REGISTRY=remd) as it works: SOAP 1.2, answers days
 * later at the gateway's own endpoint, documents pulled from the gateway (getDocumentFile). The
 * registry is the SOAP stand-in of test/support/remd-stand-in.ts over real HTTP.
 */

const CLIENT_ENTITY_ID = '17c74e63-dc38-438d-a27a-a1aa063ee7b8';
const CALLBACK = 'http://egisz.rosminzdrav.ru/iehr/emdr/callback/';

const of = (queueMessageId: string) => (received: ReceivedCallback[]) => received.filter((callback) => callback.body.queueMessageId === queueMessageId);

/** REGISTRY=remd, the stand-in's; the worker's endpoint for the registry binds a port of its own (0), read from its log. */
function remdEnv(standIn: RemdStandIn, extra: Record<string, string> = {}): Record<string, string> {
  return {
    REGISTRY: 'remd',
    REMD_URL: standIn.url,
    REMD_CLIENT_ENTITY_ID: CLIENT_ENTITY_ID,
    REMD_CALLBACK_HOST: '127.0.0.1',
    REMD_CALLBACK_PORT: '0',
    REMD_ALLOWED_SOURCES: '127.0.0.1,::1',
    CALLBACK_RETRY_SCHEDULE: '0,200ms,200ms',
    ...extra,
  };
}

/** The endpoint an in-process service bound, once its log line has reached `log` (the stream gets it a moment after the start). */
const endpointIn = async (log: () => string): Promise<string> =>
  (await until(
    "the gateway's endpoint for the registry in its log",
    async () => gatewayEndpointIn(log()),
    (url) => url !== undefined,
  ))!;

const getDocumentFile = (localUid: string, organization = ORGANIZATION) =>
  soapMessage({
    uri: CALLBACK,
    name: 'r:getDocumentFileRequest',
    content: [
      { uri: CALLBACK, name: 'r:localUid', content: localUid },
      { uri: CALLBACK, name: 'r:organization', content: organization },
    ],
  });

describe('a registration through РЭМД, the worker killed (kill -9) while it waits for the answer', () => {
  let standIn: RemdStandIn;
  let receiver: CallbackReceiver;
  let api: TestService;

  beforeAll(async () => {
    standIn = await startRemdStandIn({ clientEntityId: CLIENT_ENTITY_ID });
    receiver = await startCallbackReceiver();
    // The intake in this process; the workers as processes of their own, to be killed.
    api = await startTestService(remdEnv(standIn), ['emdr']);
  });

  afterAll(async () => {
    await standIn?.close();
    await api?.stop();
    await receiver?.close();
  });

  it('waits durably: the answer that comes after a restart reaches the clinic once, both callbacks in order, the registration sent once', async () => {
    const clinic = await addClinic(api, receiver.url);
    receiver.signingSecret = clinic.signingSecret;
    const workerEnv = { ...remdEnv(standIn), ...api.env };
    const body = registerBody();
    // The registry takes the registration at once and answers only once the worker is gone.
    standIn.hold();
    const { body: ack } = await post(api.publicUrl, '/api/RegisterDocument', authHeaders(clinic), body);
    const queueMessageId = ack.queueMessageId as string;

    // Its ports, the endpoint's among them, are ones it binds itself (0), read from its output.
    const first = await spawnServe('worker-1', ['serve', '--only', 'worker'], workerEnv);
    standIn.gatewayUrl = gatewayEndpointIn(first.output());
    const state = async () => (await fetch(`${api.publicUrl}/api/messages/${queueMessageId}`, { headers: authHeaders(clinic) })).json();
    try {
      expect(standIn.gatewayUrl, 'the endpoint for the registry, in the log of worker-1').toBeDefined();
      // Submitted, and the acceptance callback delivered (so the kill cuts no delivery short).
      await until('submitted to the registry', state, (current) => current.state === 'submitted' && current.callbacks[0]?.state === 'delivered', 90_000);
    } catch (error) {
      first.child.kill('SIGKILL');
      throw new Error(`${(error as Error).message}; the worker said: ${first.output()}`);
    }
    expect(standIn.taken.filter((taken) => taken.operation === 'registerDocument').map((taken) => taken.messageId)).toEqual([queueMessageId]);
    first.child.kill('SIGKILL');
    expect(await exitOf(first.child)).toBeNull();
    // The registry answers while no worker runs (pulling the document, then its result); it keeps trying, as the federal one does.
    standIn.release();

    // The registry knows one address of the gateway (by design): the restarted worker binds the port the first
    // one got, free since the kill. Unlike the first bind, this one cannot be left to the OS.
    const endpointPort = new URL(standIn.gatewayUrl!).port;
    const second = await spawnServe('worker-2', ['serve', '--only', 'worker'], { ...workerEnv, REMD_CALLBACK_PORT: endpointPort });
    try {
      expect(gatewayEndpointIn(second.output())).toBe(standIn.gatewayUrl);
      expect((await fetch(`${second.internalUrl}/readyz`)).status).toBe(200);
      const callbacks = await receiver.waitFor((received) => of(queueMessageId)(received).length >= 2, 90_000);
      const mine = of(queueMessageId)(callbacks);
      expect(mine.map((callback) => callback.name)).toEqual(['SendRegisterDocumentResponse', 'SendRegisterDocumentResultResponse']);
      expect(mine.every((callback) => callback.signatureValid)).toBe(true);
      const document = [...standIn.documents.values()].find((item) => item.localUid === body.localUid)!;
      expect(mine[1]!.body).toMatchObject({ queueMessageId, localUid: body.localUid, status: 'success', emdrId: document.emdrId });
      // What the registry pulled is what the clinic sent, byte for byte; its signature went with the registration.
      expect(sha256(document.content)).toBe(sha256(FIXTURE_XML));
      expect(standIn.taken.find((taken) => taken.messageId === queueMessageId)!.signatures[0]!.signature).toBe(FIXTURE_SIGNATURE.toString('base64'));
      expect(await state()).toMatchObject({ state: 'completed', emdrId: document.emdrId });
    } finally {
      second.child.kill('SIGTERM');
      expect(await exitOf(second.child)).toBe(0);
    }
    expect(standIn.repeatedMessageIds).toEqual([]);
    expect(standIn.taken.filter((taken) => taken.operation === 'registerDocument')).toHaveLength(1);
    expect(of(queueMessageId)(receiver.received)).toHaveLength(2);
    expect(standIn.violations).toEqual([]);
    expect(receiver.schemaViolations).toEqual([]);
  }, 240_000);
});

describe('interface B against РЭМД', () => {
  let standIn: RemdStandIn;
  let receiver: CallbackReceiver;
  let service: TestService;
  let clinic: CreatedClinicAccount;
  const logs = new PassThrough();
  let logText = '';

  beforeAll(async () => {
    standIn = await startRemdStandIn({ clientEntityId: CLIENT_ENTITY_ID, answerDelayMs: 100 });
    receiver = await startCallbackReceiver();
    logs.on('data', (chunk: Buffer) => (logText += chunk.toString()));
    service = await startTestService({ ...remdEnv(standIn), REGISTRY_DEADLINE: '3s', LOG_LEVEL: 'info' }, undefined, logs);
    standIn.gatewayUrl = await endpointIn(() => logText);
    clinic = await addClinic(service, receiver.url);
    receiver.signingSecret = clinic.signingSecret;
  });

  afterAll(async () => {
    await standIn?.close();
    await service?.stop();
    await receiver?.close();
  });

  async function register(overrides: Record<string, unknown> = {}) {
    const body = registerBody(overrides);
    const { body: ack } = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), body);
    return { body, queueMessageId: ack.queueMessageId as string };
  }

  const callbacksOf = async (queueMessageId: string, count: number) =>
    of(queueMessageId)(await receiver.waitFor((received) => of(queueMessageId)(received).length >= count));
  const stateOf = async (queueMessageId: string) =>
    (await fetch(`${service.publicUrl}/api/messages/${queueMessageId}`, { headers: authHeaders(clinic) })).json();

  it('maps a refusal at once and one in the result into the result callback, with the classifier codes', async () => {
    standIn.refuseNext({
      operation: 'registerDocument',
      code: 'PATIENT_MPI_MISMATCH',
      message: 'Данные пациента отличаются от зарегистрированных в ГИП',
      when: 'at-once',
    });
    const atOnce = await register();
    standIn.refuseNext({ operation: 'registerDocument', code: 'DIGEST_MISMATCH', message: 'Хеш-сумма документа не соответствует', when: 'in-result' });
    const inResult = await register();
    const [acceptance, result] = await callbacksOf(atOnce.queueMessageId, 2);
    expect(acceptance!.body.status).toBe('success');
    expect(result!.body).toMatchObject({
      status: 'error',
      errors: [{ code: 'PATIENT_MPI_MISMATCH', message: 'Данные пациента отличаются от зарегистрированных в ГИП' }],
    });
    const [, later] = await callbacksOf(inResult.queueMessageId, 2);
    expect(later!.body).toMatchObject({ status: 'error', errors: [{ code: 'DIGEST_MISMATCH' }] });
    expect(await stateOf(atOnce.queueMessageId)).toMatchObject({ state: 'failed', errors: [{ code: 'PATIENT_MPI_MISMATCH' }] });
    // Ended, neither keeps its document for the registry any more.
    const answer = await standIn.post(getDocumentFile(inResult.body.localUid as string));
    expect(answer.status).toBe(200);
    expect(answer.body).toMatch(/<[^>]*status>error</);
    expect(answer.body).toContain('REGISTRY_ITEM_NOT_FOUND');
  });

  it('keeps a request while the registry is unreachable and sends it once it is back: nothing lost, sent once', async () => {
    standIn.down();
    const { queueMessageId } = await register();
    await callbacksOf(queueMessageId, 1);
    // The submission fails (503) and is tried again after 1 s, 2 s, …: the request waits, accepted.
    await until(
      'a failed attempt',
      async () => logText,
      (text) => text.includes(queueMessageId) && text.includes('the registry did not take the request'),
    );
    expect((await stateOf(queueMessageId)).state).toBe('accepted');
    expect(standIn.taken.some((taken) => taken.messageId === queueMessageId)).toBe(false);
    // A search, which needs the registry at once, is answered 503 with Retry-After meanwhile.
    const search = await fetch(`${service.publicUrl}/api/SearchRegistryItem`, { method: 'POST', headers: authHeaders(clinic), body: '{}' });
    expect(search.status).toBe(503);
    expect(search.headers.get('retry-after')).toBe('30');
    expect((await search.json()).errors[0].code).toBe('SERVICE_UNAVAILABLE');
    standIn.up();
    const [, result] = await callbacksOf(queueMessageId, 2);
    expect(result!.body.status).toBe('success');
    expect(standIn.taken.filter((taken) => taken.messageId === queueMessageId)).toHaveLength(1);
  });

  it('acknowledges a repeated registerDocumentResult and changes nothing; refuses one for a message it did not send with a fault, and logs it', async () => {
    const { queueMessageId } = await register();
    await callbacksOf(queueMessageId, 2);
    await standIn.idle();
    const repeated = await standIn.resend(queueMessageId);
    expect(repeated.status).toBe(200);
    expect(repeated.body).toContain('registerDocumentResultResponse');
    const unknown = randomUUID();
    const refused = await standIn.post(registerDocumentResult(unknown, { code: 'INTERNAL_ERROR', message: 'x' }));
    expect(refused.status).toBe(400);
    expect(refused.body).toMatch(/<[^>]*Fault[ >]/);
    expect(refused.body).toMatch(/<[^>]*Value>[A-Za-z0-9]+:Sender</);
    await until(
      'the unknown answer logged',
      async () => logText,
      (text) => text.includes('did not send') && text.includes(unknown),
    );
    // The clinic saw the result once; the repeated answer reached no one.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(of(queueMessageId)(receiver.received).map((callback) => callback.name)).toEqual([
      'SendRegisterDocumentResponse',
      'SendRegisterDocumentResultResponse',
    ]);
  });

  it('serves getDocumentFile for a document it keeps (the registry has not answered) and not for a dropped one', async () => {
    standIn.silent = true;
    try {
      const { body, queueMessageId } = await register();
      await until(
        'submitted',
        () => stateOf(queueMessageId),
        (state) => state.state === 'submitted',
      );
      const kept = await standIn.post(getDocumentFile(body.localUid as string));
      expect(kept.status).toBe(200);
      const content = /<[^>]*content>([^<]*)</.exec(kept.body)?.[1];
      expect(Buffer.from(content!, 'base64').equals(FIXTURE_XML)).toBe(true);
      expect(kept.body).toContain(FIXTURE_SIGNATURE.toString('base64'));
      // Another organization's document of that localUid is not this one.
      expect((await standIn.post(getDocumentFile(body.localUid as string, '1.2.643.5.1.13.13.12.2.77.1'))).body).toContain('REGISTRY_ITEM_NOT_FOUND');
      // No answer within REGISTRY_DEADLINE (3 s here): ASYNC_RESPONSE_TIMEOUT, and the document is dropped.
      const [, result] = await callbacksOf(queueMessageId, 2);
      expect(result!.body).toMatchObject({ status: 'error', errors: [{ code: 'ASYNC_RESPONSE_TIMEOUT' }] });
      expect(await stateOf(queueMessageId)).toMatchObject({ state: 'failed', errors: [{ code: 'ASYNC_RESPONSE_TIMEOUT' }] });
      expect((await standIn.post(getDocumentFile(body.localUid as string))).body).toContain('REGISTRY_ITEM_NOT_FOUND');
      // The registry's answer after the deadline changes nothing.
      const late = await standIn.post(registerDocumentResult(queueMessageId, { code: 'INTERNAL_ERROR', message: 'late' }));
      expect(late.status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(of(queueMessageId)(receiver.received)).toHaveLength(2);
    } finally {
      standIn.silent = false;
    }
  });

  it('demands a registered document end to end: found and checked with getRegistryItem, the file from the registry, byte-identical', async () => {
    const { queueMessageId } = await register();
    const emdrId = (await callbacksOf(queueMessageId, 2))[1]!.body.emdrId as string;
    const search = await post(service.publicUrl, '/api/SearchRegistryItem', authHeaders(clinic), { patientSnils: '11223344595' });
    expect(search.body.items.map((item: { emdrId: string }) => item.emdrId)).toContain(emdrId);
    const demand = await post(service.publicUrl, '/api/DemandContent', authHeaders(clinic), { emdrId });
    const [acceptance, file] = await callbacksOf(demand.body.queueMessageId as string, 2);
    expect(acceptance!.body).toMatchObject({ status: 'success', emdrId });
    expect(file!.name).toBe('SendDocumentFileResultResponse');
    const document = file!.body.document as { content: string; signature: string; version: number };
    expect(Buffer.from(document.content, 'base64').equals(FIXTURE_XML)).toBe(true);
    expect(Buffer.from(document.signature, 'base64').equals(FIXTURE_SIGNATURE)).toBe(true);
    expect(standIn.taken.filter((taken) => taken.operation === 'getRegistryItem').map((taken) => taken.fields.emdrId)).toContain(emdrId);
    // An emdrId the registry does not know reads as REGISTRY_ITEM_NOT_FOUND at acceptance.
    const unknown = await post(service.publicUrl, '/api/DemandContent', authHeaders(clinic), { emdrId: '26.01.999999999' });
    const [refused] = await callbacksOf(unknown.body.queueMessageId as string, 1);
    expect(refused!.body).toMatchObject({ status: 'error', errors: [{ code: 'REGISTRY_ITEM_NOT_FOUND' }] });
  });

  it("reads a record with GetRegistryItem from the registry's getRegistryItem: its patient and storeTillDate; unknown as 404; unreachable as 503", async () => {
    const { queueMessageId, body } = await register();
    const emdrId = (await callbacksOf(queueMessageId, 2))[1]!.body.emdrId as string;
    const read = (id: string) => post(service.publicUrl, '/api/GetRegistryItem', authHeaders(clinic), { emdrId: id });
    const answer = await read(emdrId);
    expect(answer.status).toBe(200);
    expect(answer.body.item).toMatchObject({
      emdrId,
      localUid: body.localUid,
      organization: ORGANIZATION,
      patientSnils: '11223344595',
      storeTillDate: '2046-09-11+03:00',
      version: 1,
    });
    expect(standIn.taken.filter((taken) => taken.operation === 'getRegistryItem').map((taken) => taken.fields.emdrId)).toContain(emdrId);
    const unknown = await read('26.01.999999998');
    expect(unknown.status).toBe(404);
    expect(unknown.body.errors).toEqual([{ code: 'REGISTRY_ITEM_NOT_FOUND', message: 'no registry item with this emdrId', path: '/requestBody/emdrId' }]);
    standIn.down();
    try {
      const unreachable = await fetch(`${service.publicUrl}/api/GetRegistryItem`, {
        method: 'POST',
        headers: { ...authHeaders(clinic), 'content-type': 'application/json' },
        body: JSON.stringify({ emdrId }),
      });
      expect(unreachable.status).toBe(503);
      expect(unreachable.headers.get('retry-after')).toBe('30');
      expect(((await unreachable.json()) as { errors: Array<{ code: string }> }).errors[0]!.code).toBe('SERVICE_UNAVAILABLE');
    } finally {
      standIn.up();
    }
  });

  it('bounds its endpoint: a path, a method, a media type, a size and XML it does not take are refused before they cost anything', async () => {
    const port = Number(new URL(standIn.gatewayUrl!).port);
    expect((await fetch(`http://127.0.0.1:${port}/other`, { method: 'POST', headers: { 'content-type': 'application/soap+xml' }, body: '<a/>' })).status).toBe(
      404,
    );
    expect((await fetch(standIn.gatewayUrl!, { method: 'GET' })).status).toBe(405);
    expect((await standIn.post(getDocumentFile(randomUUID()), 'application/json')).status).toBe(415);
    expect(
      await statusLineOf(port, `POST /emdr/callback HTTP/1.1\r\nHost: x\r\nContent-Type: application/soap+xml\r\nContent-Length: 999999999999\r\n\r\n`),
    ).toBe('HTTP/1.1 413 Payload Too Large');
    const doctype = await standIn.post('<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e "boom">]><x>&e;</x>');
    expect(doctype.status).toBe(400);
    expect(doctype.body).toContain('DOCTYPE');
    const deep = await standIn.post(`${'<a>'.repeat(100)}${'</a>'.repeat(100)}`);
    expect(deep.status).toBe(400);
    expect(deep.body).toContain('deeper than 32');
  });

  it('sent only messages the registry takes, and callback bodies that match specs/openapi.yaml', () => {
    expect(standIn.violations).toEqual([]);
    expect(standIn.repeatedMessageIds).toEqual([]);
    expect(receiver.schemaViolations).toEqual([]);
  });
});

describe('REMD_ALLOWED_SOURCES', () => {
  it('refuses a caller not listed, before reading its message', async () => {
    const standIn = await startRemdStandIn({ clientEntityId: CLIENT_ENTITY_ID });
    const logs = new PassThrough();
    let logText = '';
    logs.on('data', (chunk: Buffer) => (logText += chunk.toString()));
    const service = await startTestService({ ...remdEnv(standIn), REMD_ALLOWED_SOURCES: '10.9.9.9/32', LOG_LEVEL: 'info' }, ['worker'], logs);
    try {
      standIn.gatewayUrl = await endpointIn(() => logText);
      const refused = await standIn.post(getDocumentFile(randomUUID()));
      expect(refused.status).toBe(403);
      expect(refused.body).toContain('may not call');
    } finally {
      await service.stop();
      await standIn.close();
    }
  });
});
