import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.js';

/**
 * Issue 21, M1: the connections of one client address are capped (MAX_CONNECTIONS_PER_CLIENT), so a
 * client that keeps many busy keep-alive connections cannot fill MAX_CONNECTIONS and lock everyone
 * else out; idle keep-alive connections end after KEEP_ALIVE_TIMEOUT and a connection carries at
 * most MAX_REQUESTS_PER_CONNECTION requests. Clients on loopback are told apart by their source
 * address (127.0.0.2, 127.0.0.3, …).
 */

const portOf = (url: string) => Number(new URL(url).port);

/** A keep-alive connection from `localAddress` that asks GET /healthz every `everyMs` (a busy connection, never idle long). */
function busyConnection(port: number, localAddress: string, everyMs: number): { socket: net.Socket; stop(): void } {
  const socket = net.connect({ port, host: '127.0.0.1', localAddress });
  socket.on('error', () => undefined);
  socket.on('data', () => undefined);
  const ask = () => socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  socket.once('connect', ask);
  const timer = setInterval(ask, everyMs);
  socket.once('close', () => clearInterval(timer));
  return {
    socket,
    stop: () => {
      clearInterval(timer);
      socket.destroy();
    },
  };
}

/** GET /healthz from `localAddress` on a connection of its own: the status, or the error code. */
function healthzFrom(url: string, localAddress: string): Promise<number | string> {
  return new Promise((resolve) => {
    const request = http.get(`${url}/healthz`, { localAddress, agent: false, timeout: 5_000 }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode!));
    });
    request.on('timeout', () => request.destroy(Object.assign(new Error('timeout'), { code: 'TIMEOUT' })));
    request.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

describe('M1: connections per client address, keep-alive idle and requests per connection', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ MAX_CONNECTIONS: '40', MAX_CONNECTIONS_PER_CLIENT: '10', KEEP_ALIVE_TIMEOUT: '1s', MAX_REQUESTS_PER_CONNECTION: '3' }, [
      'ehr',
      'emdr',
    ]);
  });

  afterAll(async () => {
    await service?.stop();
  });

  it('keeps a client with 60 busy keep-alive connections to its 10, and serves another client meanwhile', async () => {
    const port = portOf(service.publicUrl);
    const abuser = Array.from({ length: 60 }, () => busyConnection(port, '127.0.0.2', 300));
    try {
      // The connections beyond the client's 10 are closed as they arrive.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(abuser.filter((connection) => !connection.socket.destroyed).length).toBeLessThanOrEqual(10);
      // Before: the abuser held all 40 of MAX_CONNECTIONS and every other client failed.
      const honest: Array<number | string> = [];
      for (let request = 0; request < 15; request += 1) honest.push(await healthzFrom(service.publicUrl, '127.0.0.3'));
      expect(honest).toEqual(Array.from({ length: 15 }, () => 200));
    } finally {
      for (const connection of abuser) connection.stop();
    }
  });

  it('closes an idle keep-alive connection after KEEP_ALIVE_TIMEOUT', async () => {
    const socket = net.connect(portOf(service.publicUrl), '127.0.0.1');
    socket.on('error', () => undefined);
    const answered = new Promise<number>((resolve) => socket.once('data', () => resolve(Date.now())));
    const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now())));
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    const idle = (await closed) - (await answered);
    // KEEP_ALIVE_TIMEOUT=1s (Node checks its timers about once a second); Node's default would hold it 5 s.
    expect(idle).toBeGreaterThanOrEqual(900);
    expect(idle).toBeLessThan(3_000);
  });

  it('answers the last request a connection may carry with Connection: close', async () => {
    const socket = net.connect(portOf(service.publicUrl), '127.0.0.1');
    socket.on('error', () => undefined);
    let answers = '';
    let waiting: (() => void) | undefined;
    socket.on('data', (chunk: Buffer) => {
      answers += chunk.toString('latin1');
      waiting?.();
    });
    const closed = new Promise((resolve) => socket.once('close', resolve));
    await new Promise((resolve) => socket.once('connect', resolve));
    for (let request = 1; request <= 3; request += 1) {
      const answered = new Promise<void>((resolve) => (waiting = () => (answers.match(/HTTP\/1\.1 \d{3} /g) ?? []).length >= request && resolve()));
      socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      await answered;
    }
    await closed;
    expect(
      answers
        .split('HTTP/1.1 ')
        .slice(1)
        .map((answer) => /\r\nconnection: close\r\n/i.test(answer)),
    ).toEqual([false, false, true]);
  });
});

describe('TRUSTED_PROXIES: the client behind a proxy', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ TRUSTED_PROXIES: '127.0.0.7', MAX_CONNECTIONS_PER_CLIENT: '2', RPC_RATE_LIMIT: '5' }, ['ehr']);
  });

  afterAll(async () => {
    await service?.stop();
  });

  it("counts a trusted proxy's clients by X-Forwarded-For, and does not cap the proxy's own connections", async () => {
    const port = portOf(service.publicUrl);
    const { VERSION } = await import('../ehr/support/rpc.js');
    const call = (forwardedFor: string, localAddress = '127.0.0.7') =>
      new Promise<number>((resolve, reject) => {
        const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'patient.get_patient', params: {} });
        const request = http.request(
          {
            port,
            host: '127.0.0.1',
            path: `/${VERSION}/`,
            method: 'POST',
            localAddress,
            agent: false,
            headers: { 'content-type': 'application/json', 'x-forwarded-for': forwardedFor },
          },
          (response) => {
            response.resume();
            response.on('end', () => resolve(response.statusCode!));
          },
        );
        request.on('error', reject);
        request.end(body);
      });
    // Six calls of one client through the proxy: the sixth is over RPC_RATE_LIMIT; another client's are not.
    const first = await Promise.all(Array.from({ length: 6 }, () => call('198.51.100.1')));
    expect(first.filter((status) => status === 429)).toHaveLength(1);
    expect(await call('203.0.113.9, 198.51.100.2')).toBe(200);
    // A client that writes X-Forwarded-For itself, not through the proxy, is its own address.
    expect(await call('198.51.100.2', '127.0.0.8')).toBe(200);
    // The proxy holds more than MAX_CONNECTIONS_PER_CLIENT connections.
    const held = Array.from({ length: 6 }, () => busyConnection(port, '127.0.0.7', 200));
    try {
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(held.filter((connection) => !connection.socket.destroyed)).toHaveLength(6);
    } finally {
      for (const connection of held) connection.stop();
    }
  });
});
