import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { DocumentCheckPool, MAX_XML_DEPTH } from '../../src/emdr/pipeline/document-check/document-check.js';
import { startCallbackReceiver, type CallbackReceiver, type ReceivedCallback } from '../support/callback-receiver.js';
import { addClinic, authHeaders, FIXTURE_XML, largeXml, post, registerBody } from '../support/emdr.js';
import { startServeProcess, type ServeProcess } from '../support/processes.js';
import { startTestService, type TestService } from '../support/service.js';

/** `<a>` nested `depth` deep: 7 bytes per level. */
const nested = (depth: number) => Buffer.from(`<?xml version="1.0"?>${'<a>'.repeat(depth)}${'</a>'.repeat(depth)}`);

async function* slices(bytes: Buffer, size = 48 * 1024): AsyncGenerator<Buffer> {
  for (let offset = 0; offset < bytes.length; offset += size) yield bytes.subarray(offset, offset + size);
}

/** One worker, so that every check below runs on a worker that checked others before. */
const pool = new DocumentCheckPool(1);
afterAll(() => pool.close());

/** Why the document fails: not well-formed, or not checked within the limit. */
const failureOf = ({ xmlFailure, limitFailure }: { xmlFailure: string | undefined; limitFailure?: string }) => limitFailure ?? xmlFailure;
const check = async (xml: string | Buffer, timeoutMs = 30_000) => failureOf(await pool.check(slices(Buffer.from(xml)), { timeoutMs }));
const checkWhole = async (xml: Buffer) => failureOf(await pool.check(xml, { timeoutMs: 30_000 }));

/** Milliseconds of one GET /healthz on a connection of its own. */
async function healthzMs(url: string): Promise<number> {
  const sent = performance.now();
  await new Promise<void>((resolve, reject) => {
    http.get(`${url}/healthz`, { agent: false }, (response) => response.resume().on('end', resolve)).on('error', reject);
  });
  return performance.now() - sent;
}

const acceptanceOf = (receiver: CallbackReceiver, queueMessageId: string, timeoutMs?: number) =>
  receiver
    .waitFor((received) => received.some((callback) => callback.body.queueMessageId === queueMessageId), timeoutMs)
    .then((received) => received.find((callback) => callback.body.queueMessageId === queueMessageId) as ReceivedCallback);

describe('the XML check', () => {
  it('takes well-formed documents and their namespaces as saxes does', async () => {
    expect(await check(FIXTURE_XML)).toBeUndefined();
    expect(await check('<r xmlns="urn:a" xmlns:p="urn:p"><p:x p:y="1"><z xmlns:p="urn:q" p:w="2"/></p:x><p:v/></r>')).toBeUndefined();
    expect(await check('<r xmlns:p="urn:p"><p:a><p:b xmlns:p="urn:other"/></p:a></r>')).toBeUndefined();
    expect(await check('<r><p:x xmlns:p="urn:p" p:y="1"/></r>')).toBeUndefined();
    expect(await check(`<x xml:lang="ru"/>`)).toBeUndefined();
  });

  it.each([
    ['an unbound element prefix', '<r><p:x/></r>', /unbound namespace prefix: "p"/],
    ['a prefix bound only in a closed sibling', '<r><a xmlns:p="urn:p"/><p:x/></r>', /unbound namespace prefix: "p"/],
    ['an unbound attribute prefix', '<r q:a="1"/>', /unbound namespace prefix: "q"/],
    ['a prefix named like an Object member', '<r><constructor:x/></r>', /unbound namespace prefix: "constructor"/],
    ['the same attribute twice under two prefixes', '<r xmlns:a="urn:x" xmlns:b="urn:x" a:k="1" b:k="2"/>', /duplicate attribute/],
    ['mismatched tags', '<a><b></a>', /not well-formed/],
    ['bytes that are not UTF-8', Buffer.from([0x3c, 0x61, 0x3e, 0xff, 0x3c, 0x2f, 0x61, 0x3e]), /not UTF-8/],
  ])('refuses %s', async (_name, xml, message) => {
    expect(await check(xml)).toMatch(message);
  });

  it(`takes elements nested ${MAX_XML_DEPTH} deep and refuses one level more, naming the limit`, async () => {
    expect(await check(nested(MAX_XML_DEPTH))).toBeUndefined();
    expect(await check(nested(MAX_XML_DEPTH + 1))).toBe(`the document nests elements deeper than ${MAX_XML_DEPTH} levels, the limit`);
  });

  it('checks a whole document given in one piece the same way', async () => {
    expect(await checkWhole(FIXTURE_XML)).toBeUndefined();
    expect(await checkWhole(nested(MAX_XML_DEPTH + 1))).toBe(`the document nests elements deeper than ${MAX_XML_DEPTH} levels, the limit`);
    expect(await checkWhole(Buffer.from('<a><b></a>'))).toMatch(/not well-formed/);
  });

  it('gives up when its time budget is spent, and the pool goes on with a fresh worker', async () => {
    // 16 MiB take the parser well over 5 ms on any machine.
    expect(await check(largeXml(16 * 1024 * 1024), 5)).toBe('the document could not be checked within 0.005 s, the limit');
    expect(await check(FIXTURE_XML)).toBeUndefined();
    expect(await check('<a><b></a>')).toMatch(/not well-formed/);
  });

  it("starts a check's time budget once a new worker has loaded its modules, not while it loads them", async () => {
    // A new worker loads its modules in 140-210 ms on a quiet 2-core machine, in seconds under a CPU
    // hog; once it is up, a tiny document takes it about a millisecond.
    const fresh = new DocumentCheckPool(1);
    try {
      expect(failureOf(await fresh.check(Buffer.from('<a/>'), { timeoutMs: 100 }))).toBeUndefined();
    } finally {
      await fresh.close();
    }
  });
});

describe('RegisterDocument with a deeply nested document, against serve as its own process', () => {
  let serve: ServeProcess;
  let receiver: CallbackReceiver;
  let clinic: CreatedClinicAccount;

  beforeAll(async () => {
    receiver = await startCallbackReceiver();
    serve = await startServeProcess();
    clinic = await addClinic({ databaseUrl: serve.env.DATABASE_URL!, dataKey: Buffer.from(serve.env.DATA_KEY!, 'hex') }, receiver.url);
    receiver.signingSecret = clinic.signingSecret;
  });

  afterAll(async () => {
    await serve?.stop();
    await receiver?.close();
  });

  it('is rejected in bounded time with XML_NOT_WELL_FORMED while /healthz keeps answering fast', async () => {
    // 420 KB, 60,000 levels: the document that held the event loop for about a minute.
    const xml = nested(60_000);
    const started = performance.now();
    const { body: ack } = await post(serve.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody({ document: xml.toString('base64') }));
    let settled = false;
    const latencies: number[] = [];
    const probing = (async () => {
      while (!settled) {
        latencies.push(await healthzMs(serve.publicUrl));
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    const acceptance = await acceptanceOf(receiver, ack.queueMessageId, 30_000).finally(() => (settled = true));
    await probing;
    const elapsedMs = performance.now() - started;
    expect(acceptance.body).toMatchObject({
      status: 'error',
      errors: [{ code: 'XML_NOT_WELL_FORMED', message: `the document nests elements deeper than ${MAX_XML_DEPTH} levels, the limit` }],
    });
    expect(acceptance.signatureValid).toBe(true);
    // Generous bounds for a loaded 2-core machine: before, the check took about a minute and /healthz waited for it.
    expect(elapsedMs).toBeLessThan(20_000);
    expect(latencies.length).toBeGreaterThan(0);
    expect(Math.max(...latencies)).toBeLessThan(1_000);
  });
});

describe('XML_CHECK_TIMEOUT', () => {
  let service: TestService;
  let receiver: CallbackReceiver;

  beforeAll(async () => {
    receiver = await startCallbackReceiver();
    service = await startTestService({ XML_CHECK_TIMEOUT: '1ms' });
  });

  afterAll(async () => {
    await service?.stop();
    await receiver?.close();
  });

  it('turns a check that outlives its budget into DOCUMENT_CHECK_LIMIT (not a verdict on the XML or the signature)', async () => {
    const clinic = await addClinic(service, receiver.url);
    receiver.signingSecret = clinic.signingSecret;
    // A 4 MiB signed document: its check takes far longer than 1 ms on any machine (a small one may not).
    const document = largeXml(4 * 1024 * 1024).toString('base64');
    const { body: ack } = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody({ document }));
    expect((await acceptanceOf(receiver, ack.queueMessageId)).body).toMatchObject({
      status: 'error',
      errors: [{ code: 'DOCUMENT_CHECK_LIMIT', message: 'the document and its signatures could not be checked within 0.001 s, the limit' }],
    });
  });
});
