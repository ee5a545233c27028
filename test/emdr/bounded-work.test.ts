import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { addClinic, authHeaders, largeXml, registerBody } from '../support/emdr.js';
import { startServeProcess, type ServeProcess } from '../support/processes.js';
import { chunkedBody, postHead, rawExchange } from '../support/raw-http.js';
import { until } from '../support/until.js';

/**
 * Issue 21, H1 and M4: interface B bounds the work of a body before it is done. Its shape (members,
 * nesting) is checked while it arrives, at most 20 errors are reported, its bytes are taken from
 * BYTE_QUOTA by its Content-Length before it is read, and large bodies are read a few at a time per
 * clinic and per process. Against `serve` as its own process.
 */

type Errors = { errors: Array<{ code: string; message: string; path?: string }> };

/** `{"0":0,"1":0,…}`: `count` members no schema names. */
function manyMembers(count: number): Buffer {
  const parts: string[] = [];
  for (let index = 0; index < count; index += 1) parts.push(`"${index}":0`);
  return Buffer.from(`{${parts.join(',')}}`);
}

describe('H1: a body is bounded in shape while it arrives, and at most 20 errors are reported', () => {
  let serve: ServeProcess;
  let clinic: CreatedClinicAccount;
  let port: number;

  beforeAll(async () => {
    serve = await startServeProcess({ RATE_LIMIT: '0', BYTE_QUOTA: '0' });
    clinic = await addClinic({ databaseUrl: serve.env.DATABASE_URL!, dataKey: Buffer.from(serve.env.DATA_KEY!, 'hex') }, 'http://127.0.0.1:9');
    port = Number(new URL(serve.publicUrl).port);
  });

  afterAll(async () => {
    await serve?.stop();
  });

  const send = (body: Buffer, sendAtMost?: number) =>
    rawExchange(port, postHead('/api/RegisterDocument', authHeaders(clinic), body.length), body, sendAtMost === undefined ? {} : { sendAtMost });

  it('answers 2 million unknown members (18 MB) with 400 at the member that crosses the limit, before the rest is sent, never a 500', async () => {
    const body = manyMembers(2_000_000);
    expect(body.length).toBeGreaterThan(18_000_000);
    // The limit falls within the first 200 KB: the answer comes while 18 MB are still unsent.
    const answer = await send(body, 200_000);
    // Before: HTTP 500, a RangeError of errors.push(...validate.errors) after the whole body was parsed and validated.
    expect(answer.status).toBe(400);
    expect((JSON.parse(answer.body) as Errors).errors).toEqual([
      { code: 'VALIDATION_ERROR', message: 'the body holds more than 10000 members and items, the limit', path: '/requestBody' },
    ]);
  });

  it('answers 120,000 members (1 MB) in a small answer, not one error per member', async () => {
    const answer = await send(manyMembers(120_000), 200_000);
    expect(answer.status).toBe(400);
    // Before: 12.3 MB of errors.
    expect(answer.bodyBytes).toBeLessThan(1024);
  });

  it('reports at most 20 of the schema errors of a body within the limits', async () => {
    const answer = await send(manyMembers(5_000));
    expect(answer.status).toBe(400);
    const { errors } = JSON.parse(answer.body) as Errors;
    expect(errors).toHaveLength(20);
    expect(errors.every((error) => error.code === 'VALIDATION_ERROR')).toBe(true);
  });

  it('refuses 16 MB of nested [ at the 33rd level, at once', async () => {
    const started = Date.now();
    const answer = await send(Buffer.alloc(16 * 1024 * 1024, '['), 64 * 1024);
    expect(answer.status).toBe(400);
    expect((JSON.parse(answer.body) as Errors).errors[0]).toEqual({
      code: 'VALIDATION_ERROR',
      message: 'the body nests arrays and objects deeper than 32 levels, the limit',
      path: '/requestBody',
    });
    // Refused at its 33rd byte, with 16 MB unsent, not after 16 MB were parsed (3.3 s of a blocked event loop before).
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(answer.headers.connection).toBe('close');
  });

  it('still takes a large valid document, whose base64 member is skipped, not walked', async () => {
    const document = largeXml(6 * 1024 * 1024).toString('base64');
    const body = Buffer.from(JSON.stringify(registerBody({ document })));
    const answer = await send(body);
    expect(answer.status, answer.body).toBe(200);
  });
});

describe('M4: BYTE_QUOTA is taken before a body is read', () => {
  let serve: ServeProcess;
  let clinics: CreatedClinicAccount[];
  let port: number;

  beforeAll(async () => {
    serve = await startServeProcess({ RATE_LIMIT: '0', BODY_LIMIT: '4mb', BYTE_QUOTA: '4mb' });
    const service = { databaseUrl: serve.env.DATABASE_URL!, dataKey: Buffer.from(serve.env.DATA_KEY!, 'hex') };
    clinics = [await addClinic(service, 'http://127.0.0.1:9'), await addClinic(service, 'http://127.0.0.1:9')];
    port = Number(new URL(serve.publicUrl).port);
  });

  afterAll(async () => {
    await serve?.stop();
  });

  /** A RegisterDocument body of about 2.8 MB: one fits the minute's 4 MB, two do not. */
  const body = Buffer.from(JSON.stringify(registerBody({ document: largeXml(2 * 1024 * 1024).toString('base64') })));

  it("refuses a body over the rest of the minute's quota by its Content-Length, before a byte of it is sent", async () => {
    const first = await rawExchange(port, postHead('/api/RegisterDocument', authHeaders(clinics[0]!), body.length), body);
    expect(first.status, first.body).toBe(200);
    // The head alone: the answer comes without the body (before, the gateway waited for it, read it whole, then refused it).
    const second = await rawExchange(port, postHead('/api/RegisterDocument', authHeaders(clinics[0]!), body.length), undefined, { waitMs: 5_000 });
    expect(second.status).toBe(429);
    expect(Number(second.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect((JSON.parse(second.body) as Errors).errors[0]!.message).toMatch(/too many bytes this minute/);
  });

  it('takes the quota of a body without Content-Length as it arrives, and stops reading it once spent', async () => {
    const first = await rawExchange(port, postHead('/api/RegisterDocument', authHeaders(clinics[1]!), undefined), chunkedBody(body));
    expect(first.status, first.body).toBe(200);
    const second = await rawExchange(port, postHead('/api/RegisterDocument', authHeaders(clinics[1]!), undefined), chunkedBody(body));
    expect(second.status).toBe(429);
    expect(second.headers.connection).toBe('close');
  });
});

describe('M4: large bodies are read a few at a time per clinic and per process', () => {
  let serve: ServeProcess;
  let clinics: CreatedClinicAccount[];
  let port: number;

  beforeAll(async () => {
    serve = await startServeProcess({ RATE_LIMIT: '0', BYTE_QUOTA: '0', LARGE_BODIES_PER_CLINIC: '2', LARGE_BODIES_PER_PROCESS: '3' });
    const service = { databaseUrl: serve.env.DATABASE_URL!, dataKey: Buffer.from(serve.env.DATA_KEY!, 'hex') };
    clinics = [await addClinic(service, 'http://127.0.0.1:9'), await addClinic(service, 'http://127.0.0.1:9'), await addClinic(service, 'http://127.0.0.1:9')];
    port = Number(new URL(serve.publicUrl).port);
  });

  afterAll(async () => {
    await serve?.stop();
  });

  const document = (bytes: number) => Buffer.from(JSON.stringify(registerBody({ document: largeXml(bytes).toString('base64') })));

  it('reads LARGE_BODIES_PER_CLINIC bodies of a clinic at once (429 beyond), LARGE_BODIES_PER_PROCESS in all (503 beyond), and lets small bodies in', async () => {
    const length = 3 * 1024 * 1024;
    /** An upload that sends its head and a little of its body, then holds; what the gateway answers it, if anything. */
    const hold = (clinic: CreatedClinicAccount) => {
      const socket = net.connect(port, '127.0.0.1');
      const upload = { socket, answer: '' };
      socket.on('error', () => undefined);
      socket.on('data', (chunk: Buffer) => (upload.answer += chunk.toString('latin1')));
      socket.once('connect', () => socket.write(`${postHead('/api/RegisterDocument', authHeaders(clinic), length)}{"localUid":`));
      return upload;
    };
    const answered = (uploads: Array<{ answer: string }>) => uploads.filter((upload) => upload.answer.includes('\r\n\r\n'));
    const uploads: Array<ReturnType<typeof hold>> = [];
    try {
      // Three at once from one clinic: two are read (they wait for their bodies), the third is refused.
      const first = [hold(clinics[0]!), hold(clinics[0]!), hold(clinics[0]!)];
      uploads.push(...first);
      const refused = await until(
        'one of three uploads refused',
        async () => answered(first),
        (list) => list.length >= 1,
      );
      // Before, every upload was read at once, whatever their number (64 of 24 MiB: +1.49 GiB RSS).
      expect(refused[0]!.answer).toMatch(/^HTTP\/1\.1 429 /);
      expect(refused[0]!.answer).toMatch(/large bodies of this clinic account/);
      // Two from another clinic: the process reads 3 at most, so one is refused with 503.
      const second = [hold(clinics[1]!), hold(clinics[1]!)];
      uploads.push(...second);
      const busy = await until(
        'one of two uploads refused',
        async () => answered(second),
        (list) => list.length >= 1,
      );
      expect(busy[0]!.answer).toMatch(/^HTTP\/1\.1 503 /);
      expect(busy[0]!.answer).toMatch(/\r\nretry-after: 1\r\n/i);
      expect(busy[0]!.answer).toMatch(/SERVICE_UNAVAILABLE/);
      // The others are still read: nobody answered them.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(answered(uploads)).toHaveLength(2);
      // A body of at most 1 MiB needs no slot.
      const small = document(64 * 1024);
      const answer = await rawExchange(port, postHead('/api/RegisterDocument', authHeaders(clinics[2]!), small.length), small);
      expect(answer.status, answer.body).toBe(200);
    } finally {
      for (const upload of uploads) upload.socket.destroy();
    }
    // The slots come back with the connections.
    const large = document(1536 * 1024);
    await until(
      'a large body read again',
      () => rawExchange(port, postHead('/api/RegisterDocument', authHeaders(clinics[0]!), large.length), large),
      (answer) => answer.status === 200,
    );
  });
});
