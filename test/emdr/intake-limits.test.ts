import fs from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { responseProblems } from '../support/contract.js';
import { addClinic, authHeaders, registerBody } from '../support/emdr.js';
import { startServeProcess, type ServeProcess } from '../support/processes.js';
import { statusLineOf } from '../support/raw-http.js';

/** 32 KB of gzip that inflates to 32 MB of `[{},{},…]`: the bomb. */
const BOMB = gzipSync(Buffer.from(`[${'{},'.repeat(10_666_666)}{}]`), { level: 9 });

async function peakRssMiB(pid: number): Promise<number> {
  return Number(/VmHWM:\s+(\d+) kB/.exec(await fs.readFile(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}

/**
 * Interface B refuses what it will not take before reading a byte of the body: the route, the
 * clinic's headers and its rate, then Content-Encoding, Content-Type and Content-Length. Against
 * `serve` as its own process, so its memory is measured alone.
 */
describe('interface B: checks before the body', () => {
  let serve: ServeProcess;
  let clinic: CreatedClinicAccount;
  let port: number;

  beforeAll(async () => {
    serve = await startServeProcess({ RATE_LIMIT: '30' });
    clinic = await addClinic({ databaseUrl: serve.env.DATABASE_URL!, dataKey: Buffer.from(serve.env.DATA_KEY!, 'hex') }, 'http://127.0.0.1:9');
    port = Number(new URL(serve.publicUrl).port);
  });

  afterAll(async () => {
    await serve?.stop();
  });

  const send = async (route: string, init: RequestInit) => {
    const response = await fetch(`${serve.publicUrl}${route}`, init);
    return {
      status: response.status,
      headers: response.headers,
      body: (await response.json()) as { errors: Array<{ code: string; path?: string; message: string }> },
    };
  };

  it.each([
    ['RegisterDocument without credentials', '/api/RegisterDocument', 401, 'UNAUTHENTICATED'],
    ['an unknown operation', '/api/nope', 404, 'NOT_FOUND'],
  ])('answers a gzip bomb to %s without inflating it (peak RSS grows by far less than the 32 MB it inflates to)', async (_name, route, status, code) => {
    const pid = serve.child.pid!;
    // Reset the peak, so that it measures this request alone.
    await fs.writeFile(`/proc/${pid}/clear_refs`, '5');
    const before = await peakRssMiB(pid);
    const answer = await send(route, { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: BOMB });
    expect(answer.status).toBe(status);
    expect(answer.body.errors[0]!.code).toBe(code);
    // Inflating and parsing it took 0.4-1.1 GB; reading nothing of it takes next to nothing.
    expect((await peakRssMiB(pid)) - before).toBeLessThan(32);
  });

  it('refuses a compressed body from a known clinic with 415, uninflated', async () => {
    const answer = await send('/api/DemandContent', { method: 'POST', headers: { ...authHeaders(clinic), 'content-encoding': 'gzip' }, body: BOMB });
    expect(answer).toMatchObject({ status: 415, body: { errors: [{ code: 'UNSUPPORTED_MEDIA_TYPE' }] } });
  });

  it.each([['application/json; charset=latin1'], ['text/plain'], ['application/x-www-form-urlencoded']])(
    'refuses Content-Type %s with 415 in the error shape',
    async (type) => {
      const answer = await send('/api/DemandContent', {
        method: 'POST',
        headers: { ...authHeaders(clinic), 'content-type': type },
        body: JSON.stringify({ emdrId: '26.11.000000001' }),
      });
      expect(answer).toMatchObject({ status: 415, body: { status: 'Error', errors: [{ code: 'UNSUPPORTED_MEDIA_TYPE' }] } });
      expect(responseProblems('POST', '/api/DemandContent', answer.status, answer.body)).toEqual([]);
    },
  );

  it('answers a Content-Length over the limit with 413 before a byte of the body arrives', async () => {
    const head = `POST /api/DemandContent HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\nbusinessId: ${clinic.businessId}\r\nuser: ${clinic.user}\r\ntoken: ${clinic.token}\r\n\r\n`;
    expect(await statusLineOf(port, head)).toBe('HTTP/1.1 413 Payload Too Large');
  });

  it('gives every operation but RegisterDocument a small body limit (64 KiB)', async () => {
    const padded = `{"emdrId":"26.11.000000001"${' '.repeat(70 * 1024)}}`;
    const demand = await send('/api/DemandContent', { method: 'POST', headers: authHeaders(clinic), body: padded });
    expect(demand).toMatchObject({ status: 413, body: { errors: [{ code: 'REQUEST_TOO_LARGE' }] } });
    const search = await send('/api/SearchRegistryItem', { method: 'POST', headers: authHeaders(clinic), body: `{${' '.repeat(70 * 1024)}}` });
    expect(search.status).toBe(413);
    // RegisterDocument keeps BODY_LIMIT: the same padding is no problem there.
    const register = await send('/api/RegisterDocument', {
      method: 'POST',
      headers: authHeaders(clinic),
      body: `${JSON.stringify(registerBody())}${' '.repeat(70 * 1024)}`,
    });
    expect(register.status).toBe(200);
  });

  it('checks the credentials before the body: a request without them is answered 401 with its body never sent', async () => {
    expect(await statusLineOf(port, 'POST /api/RegisterDocument HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n')).toBe(
      'HTTP/1.1 401 Unauthorized',
    );
  });

  it('answers a JSON null body as a missing body', async () => {
    const answer = await send('/api/DemandContent', { method: 'POST', headers: authHeaders(clinic), body: 'null' });
    expect(answer).toMatchObject({ status: 400, body: { errors: [{ code: 'VALIDATION_ERROR', path: '/requestBody' }] } });
    expect(answer.body.errors[0]!.message).not.toMatch(/not valid JSON/);
  });

  it('answers a lone UTF-16 surrogate in a stored string with 400 at its path', async () => {
    const body = JSON.stringify(registerBody()).replace('"localUid"', '"documentNumber":"\\ud800 КП-1","localUid"');
    const answer = await send('/api/RegisterDocument', { method: 'POST', headers: authHeaders(clinic), body });
    expect(answer).toMatchObject({ status: 400, body: { errors: [{ code: 'VALIDATION_ERROR', path: '/requestBody/documentNumber' }] } });
  });

  it.each([['0000-01-01T00:00:00Z'], ['0999-12-31T23:59:59Z'], ['2026-01-15T09:30:00+23:00']])(
    'refuses creationDateTime %s with 400 VALIDATION_ERROR',
    async (creationDateTime) => {
      const answer = await send('/api/RegisterDocument', {
        method: 'POST',
        headers: authHeaders(clinic),
        body: JSON.stringify(registerBody({ creationDateTime })),
      });
      expect(answer).toMatchObject({ status: 400, body: { errors: [{ code: 'VALIDATION_ERROR', path: '/requestBody/creationDateTime' }] } });
    },
  );

  it('answers a malformed percent-escape in a path with a JSON 400, never HTML', async () => {
    const answer = await send('/api/messages/%', { method: 'GET', headers: authHeaders(clinic) });
    expect(answer).toMatchObject({ status: 400, body: { status: 'Error', errors: [{ code: 'VALIDATION_ERROR', path: '/path' }] } });
  });

  it('puts nosniff and no-store on its answers', async () => {
    const answer = await send('/api/nope', { method: 'POST', headers: authHeaders(clinic), body: '{}' });
    expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
    expect(answer.headers.get('cache-control')).toBe('no-store');
  });

  it('checks the rate limit before the body: over RATE_LIMIT, 429 with Retry-After while the body is still unsent', async () => {
    // Up to RATE_LIMIT (30) more requests than the window has left: a loaded machine may cross into the next minute's window.
    const exhaust = async () => {
      let status = 0;
      for (let i = 0; i < 70 && status !== 429; i += 1)
        status = (await send('/api/SearchRegistryItem', { method: 'POST', headers: authHeaders(clinic), body: '{}' })).status;
      expect(status).toBe(429);
    };
    const head = `POST /api/SearchRegistryItem HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nbusinessId: ${clinic.businessId}\r\nuser: ${clinic.user}\r\ntoken: ${clinic.token}\r\n\r\n`;
    await exhaust();
    let statusLine = await statusLineOf(port, head);
    // Once more if the minute turned between the last 429 and this request.
    if (statusLine !== 'HTTP/1.1 429 Too Many Requests') {
      await exhaust();
      statusLine = await statusLineOf(port, head);
    }
    expect(statusLine).toBe('HTTP/1.1 429 Too Many Requests');
  });
});
