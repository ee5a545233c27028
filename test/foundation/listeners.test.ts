import fs from 'node:fs';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openRpcSpecPath } from '../../src/config/paths.js';
import { trickle } from '../support/raw-http.js';
import { startTestService, type TestService } from '../support/service.js';
import { SERVED_VERSIONS } from '../ehr/support/rpc.js';

const VERSION = (JSON.parse(fs.readFileSync(openRpcSpecPath, 'utf8')) as { info: { version: string } }).info.version;

/** Sends raw bytes on a fresh connection and returns everything the server sent until it closed. */
function rawExchange(port: number, bytes: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(bytes));
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(answer));
    setTimeout(() => socket.destroy(), 10_000);
  });
}

const portOf = (url: string) => Number(new URL(url).port);

/**
 * The limits every listener puts on a client (HEADERS_TIMEOUT, BODY_MIN_RATE, MAX_CONNECTIONS),
 * against the real service on loopback. The bounds are generous; before these limits a trickling
 * client kept its connection for 88 s (headers) or 328 s (body).
 */
describe('slow and greedy clients', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ HEADERS_TIMEOUT: '2s', BODY_MIN_RATE: '1kb', MAX_CONNECTIONS: '8' }, ['ehr', 'emdr']);
  });

  afterAll(async () => {
    await service?.stop();
  });

  it('cuts off a client that trickles its headers, and one that trickles its body, while a normal request is served', async () => {
    const port = portOf(service.publicUrl);
    const slowHeaders = trickle(port, 'POST /api/DemandContent HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ', 'a', 500, 60_000);
    const slowBody = trickle(
      port,
      `POST /${VERSION}/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n[`,
      ' ',
      500,
      60_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const normal = await fetch(`${service.publicUrl}/healthz`);
    expect(normal.status).toBe(200);
    const [headers, body] = await Promise.all([slowHeaders, slowBody]);
    // HEADERS_TIMEOUT (2 s) plus Node's check interval; answered in JSON.
    expect(headers.heldMs).toBeLessThan(10_000);
    expect(headers.answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(headers.answer).toMatch(/"error":/);
    // Two bytes a second is far under 1 KiB/s: cut after the 10 s window.
    expect(body.heldMs).toBeGreaterThanOrEqual(9_000);
    expect(body.heldMs).toBeLessThan(25_000);
  });

  it('closes connections beyond MAX_CONNECTIONS as they arrive, and serves again once one is free', async () => {
    const port = portOf(service.internalUrl);
    const open = async () => {
      const socket = net.connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      await new Promise((resolve) => socket.once('connect', resolve));
      return socket;
    };
    const held = await Promise.all(Array.from({ length: 8 }, open));
    const extra = await open();
    const closed = await new Promise<boolean>((resolve) => {
      extra.once('close', () => resolve(true));
      setTimeout(() => resolve(false), 3000);
    });
    expect(closed).toBe(true);
    for (const socket of held) socket.destroy();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await fetch(`${service.internalUrl}/healthz`)).status).toBe(200);
  });

  it('answers a request Node cannot parse in JSON, with the security headers', async () => {
    const answer = await rawExchange(portOf(service.publicUrl), 'GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toMatch(/x-content-type-options: nosniff/i);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({ error: expect.any(String), supportedVersions: SERVED_VERSIONS });
  });
});
