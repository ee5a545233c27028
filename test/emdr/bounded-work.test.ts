import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { addClinic, authHeaders, largeXml, registerBody } from '../support/emdr.js';
import { scrapeOne, scrapeSeries } from '../support/metrics.js';
import { startServeProcess, type ServeProcess } from '../support/processes.js';
import { chunkedBody, postHead, rawExchange } from '../support/raw-http.js';
import { until } from '../support/until.js';

/**
 * Issue 21, H1 and M4: interface B bounds the work of a body before it is done. Its shape (members,
 * nesting) is checked while it arrives, at most 20 errors are reported, its bytes are taken from
 * BYTE_QUOTA by its Content-Length before it is read, and the body bytes a process takes in at once
 * are bounded per clinic and in all, the rest waiting unread. Against `serve` as its own process.
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

describe('M4: body bytes taken in at once, per clinic and per process; more wait unread', () => {
  let serve: ServeProcess;
  let clinics: CreatedClinicAccount[];
  let port: number;
  const MIB = 1024 * 1024;

  beforeAll(async () => {
    // A clinic's budget fits one body of ~3 MiB, the process's one and a half; no cut-off of the held uploads on a slow machine.
    serve = await startServeProcess({
      RATE_LIMIT: '0',
      BYTE_QUOTA: '0',
      BODY_MIN_RATE: '0',
      BODY_LIMIT: '4mb',
      BODY_BYTES_IN_FLIGHT_PER_CLINIC: '4mb',
      BODY_BYTES_IN_FLIGHT_PER_PROCESS: '5mb',
    });
    const service = { databaseUrl: serve.env.DATABASE_URL!, dataKey: Buffer.from(serve.env.DATA_KEY!, 'hex') };
    clinics = [await addClinic(service, 'http://127.0.0.1:9'), await addClinic(service, 'http://127.0.0.1:9'), await addClinic(service, 'http://127.0.0.1:9')];
    port = Number(new URL(serve.publicUrl).port);
  });

  afterAll(async () => {
    await serve?.stop();
  });

  /** A valid RegisterDocument body of about 3 MiB: two of one clinic pass its budget, two of any clinics the process's. */
  const largeBody = () => Buffer.from(JSON.stringify(registerBody({ document: largeXml(2.25 * MIB).toString('base64') })));

  /** ehr_gateway_intake_requests{state} and ehr_gateway_intake_body_bytes of the serve process. */
  const intake = async () => {
    const reading = 'ehr_gateway_intake_requests{state="reading"}';
    const waiting = 'ehr_gateway_intake_requests{state="waiting"}';
    const bytes = 'ehr_gateway_intake_body_bytes';
    const values = await scrapeSeries(serve.internalUrl, [reading, waiting, bytes]);
    return { reading: values[reading], waiting: values[waiting], bytes: values[bytes] };
  };

  /**
   * An upload that sends its head and `sent` bytes of its body, the rest when `finish` is called;
   * what the gateway answered it, once it did.
   */
  const upload = (clinic: CreatedClinicAccount, body: Buffer, sent: number) => {
    const socket = net.connect(port, '127.0.0.1');
    const state = { answer: '' };
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      state.answer += chunk.toString('latin1');
      // One answer is all it waits for (a half-close before it would abort the request).
      if (state.answer.includes('\r\n\r\n')) socket.end();
    });
    const answered = new Promise<string>((resolve) => socket.on('close', () => resolve(state.answer)));
    socket.once('connect', () => {
      socket.write(postHead('/api/RegisterDocument', authHeaders(clinic), body.length));
      socket.write(body.subarray(0, sent));
    });
    return {
      socket,
      state,
      answered,
      finish: () => socket.write(body.subarray(sent)),
    };
  };
  const small = async (clinic: CreatedClinicAccount) => {
    const body = Buffer.from(JSON.stringify(registerBody()));
    return rawExchange(port, postHead('/api/RegisterDocument', authHeaders(clinic), body.length), body, { waitMs: 60_000 });
  };

  /**
   * `holder`'s large upload is taken in and held half sent; `waiter`'s, sent whole, must then wait
   * unread (for its clinic's bytes or the process's), while `other`'s small body is served. Once the
   * first is finished both are stored and every byte given back.
   */
  const heldThenWaiting = async (holder: CreatedClinicAccount, waiter: CreatedClinicAccount, other: CreatedClinicAccount) => {
    const heldBody = largeBody();
    const waitingBody = largeBody();
    const uploads: Array<ReturnType<typeof upload>> = [];
    try {
      const held = upload(holder, heldBody, 1);
      uploads.push(held);
      await until('the held upload taken in', intake, (now) => now.reading === 1, 120_000);
      // Sent whole: it waits for bytes, not for its own body.
      const waiting = upload(waiter, waitingBody, waitingBody.length);
      uploads.push(waiting);
      await until('the second upload waiting', intake, (now) => now.waiting === 1, 60_000);
      expect(await intake()).toEqual({ reading: 1, waiting: 1, bytes: heldBody.length });
      const answer = await small(other);
      expect(answer.status, answer.body).toBe(200);
      expect(waiting.state.answer).toBe('');
      held.finish();
      expect(await held.answered).toMatch(/^HTTP\/1\.1 200 /);
      expect(await waiting.answered).toMatch(/^HTTP\/1\.1 200 /);
      await until('the bytes given back', intake, (now) => now.bytes === 0 && now.reading === 0 && now.waiting === 0);
    } finally {
      for (const started of uploads) started.socket.destroy();
    }
  };

  it("holds a clinic's body past its bytes unread until its earlier one is stored, while another clinic is served", async () => {
    // Before, a clinic's second large body was read beside its first (4 at once, whatever their size).
    await heldThenWaiting(clinics[0]!, clinics[0]!, clinics[1]!);
  });

  it("holds a large body past the process's bytes until another clinic's is stored, and takes small bodies meanwhile", async () => {
    // The waiter's clinic holds nothing: it waits for the process's bytes (before: 503 at LARGE_BODIES_PER_PROCESS,
    // else read at once); a small body passes the process's bytes.
    await heldThenWaiting(clinics[0]!, clinics[1]!, clinics[2]!);
  });
});

describe('M4: a body waiting its turn is not cut off as too slow', () => {
  let serve: ServeProcess;
  let clinic: CreatedClinicAccount;
  let port: number;

  beforeAll(async () => {
    // BODY_MIN_RATE as by default (1kb): a body that does not come for 10 s is cut, unless the gateway holds it.
    serve = await startServeProcess({ RATE_LIMIT: '0', BYTE_QUOTA: '0', BODY_LIMIT: '4mb', BODY_BYTES_IN_FLIGHT_PER_CLINIC: '4mb' });
    const service = { databaseUrl: serve.env.DATABASE_URL!, dataKey: Buffer.from(serve.env.DATA_KEY!, 'hex') };
    clinic = await addClinic(service, 'http://127.0.0.1:9');
    port = Number(new URL(serve.publicUrl).port);
  });

  afterAll(async () => {
    await serve?.stop();
  });

  const intake = (state: 'reading' | 'waiting') => scrapeOne(serve.internalUrl, `ehr_gateway_intake_requests{state="${state}"}`);
  const waiting = () => intake('waiting');

  /** An upload that sends its head and `sent` bytes of its body; the gateway's answer once it came. */
  const upload = (whole: Buffer, sent: number) => {
    const socket = net.connect(port, '127.0.0.1');
    let answer = '';
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString('latin1');
      if (answer.includes('\r\n\r\n')) socket.end();
    });
    socket.once('connect', () =>
      socket.write(Buffer.concat([Buffer.from(postHead('/api/RegisterDocument', authHeaders(clinic), whole.length)), whole.subarray(0, sent)])),
    );
    return { socket, answer: new Promise<string>((resolve) => socket.on('close', () => resolve(answer))) };
  };

  it('keeps a request waiting for its clinic’s bytes past BODY_MIN_RATE’s 10 s, then reads it', async () => {
    const body = () => Buffer.from(JSON.stringify(registerBody({ document: largeXml(2.25 * 1024 * 1024).toString('base64') })));
    const first = body();
    const second = body();
    // The first trickles (fast enough for BODY_MIN_RATE) and holds the clinic's bytes; the second is sent whole and waits.
    const held = upload(first, 1);
    let sent = 1;
    const trickle = setInterval(() => {
      held.socket.write(first.subarray(sent, sent + 4096));
      sent += 4096;
    }, 500);
    let queued: ReturnType<typeof upload> | undefined;
    try {
      await until(
        'the first request read',
        () => intake('reading'),
        (count) => count === 1,
        120_000,
      );
      queued = upload(second, second.length);
      await until('the second request waiting', waiting, (count) => count === 1, 120_000);
      const since = Date.now();
      // Past the watchdog's window (10 s, checked every second): before, the waiting body counted as a stalled one and was cut.
      const after = await until(
        'BODY_MIN_RATE’s window passed with the second request waiting',
        async () => ({ waiting: await waiting(), elapsedMs: Date.now() - since }),
        (state) => state.waiting !== 1 || state.elapsedMs > 13_000,
        60_000,
      );
      expect(after.waiting).toBe(1);
    } finally {
      clearInterval(trickle);
    }
    held.socket.write(first.subarray(sent));
    const [firstAnswer, secondAnswer] = await Promise.all([held.answer, queued!.answer]);
    expect(firstAnswer).toMatch(/^HTTP\/1\.1 200 /);
    expect(secondAnswer).toMatch(/^HTTP\/1\.1 200 /);
  });
});
