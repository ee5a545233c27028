import net from 'node:net';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { exitOf, outcomeOf, spawnCli } from '../support/cli.js';
import { createTestDatabase } from '../support/database.js';
import { startServeProcess } from '../support/processes.js';
import { keepAliveClients } from '../support/raw-http.js';
import { until } from '../support/until.js';

/** Reads one HTTP/1.1 response (with Content-Length) from a socket that stays open. */
function readResponse(socket: net.Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    if (socket.destroyed) reject(new Error('the connection is closed'));
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString();
      const end = text.indexOf('\r\n\r\n');
      const length = Number(/content-length: (\d+)/i.exec(text)?.[1] ?? NaN);
      if (end >= 0 && text.length >= end + 4 + length) {
        socket.off('data', onData);
        socket.off('close', onClose);
        resolve(text);
      }
    };
    const onClose = () => reject(new Error(`the connection closed; got ${JSON.stringify(text)}`));
    socket.on('data', onData);
    socket.on('close', onClose);
  });
}

describe('serve as a process', () => {
  it('exits with one line naming PORT, every time, when the port is taken', async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', () => resolve()));
    const taken = (blocker.address() as net.AddressInfo).port;
    const env = {
      DATABASE_URL: await createTestDatabase(),
      USER_SIGN_KEY: randomBytes(32).toString('hex'),
      HOST: '127.0.0.1',
      PORT: String(taken),
      LOG_LEVEL: 'warn',
    };
    try {
      for (let attempt = 0; attempt < 4; attempt += 1) {
        // It used to print `listen EADDRINUSE` and hang in most tries. A start that gets as far as the
        // listeners takes seconds, or half a minute on a loaded machine: two minutes tell a hang from that.
        const result = await outcomeOf(spawnCli(['serve'], { ...env, INTERNAL_PORT: '0' }), 120_000);
        expect(result.code).toBe(1);
        expect(result.stderr.trim().split('\n')).toEqual([`ehr-gateway: PORT: 127.0.0.1:${taken} is already in use (another ehr-gateway serve?)`]);
      }
    } finally {
      blocker.close();
    }
  });

  it('drains on SIGTERM without cutting a keep-alive connection a client reuses: the answer says Connection: close', async () => {
    const serve = await startServeProcess();
    const socket = net.connect(Number(new URL(serve.publicUrl).port), '127.0.0.1');
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.once('connect', resolve));
    const request = 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
    socket.write(request);
    expect(await readResponse(socket)).toMatch(/^HTTP\/1\.1 200 [\s\S]*connection: keep-alive/i);

    serve.child.kill('SIGTERM');
    // It says so as it stops accepting (the same tick): from then on every answer says Connection: close.
    await until(
      'serve began to drain',
      async () => serve.output(),
      (output) => output.includes('shutting down'),
    );
    // The connection was idle when the stop began; the client now reuses it.
    expect(socket.destroyed).toBe(false);
    socket.write(request);
    const during = await readResponse(socket);
    expect(during).toMatch(/^HTTP\/1\.1 200 /);
    expect(during).toMatch(/connection: close/i);
    socket.destroy();
    expect(await exitOf(serve.child)).toBe(0);
  });

  it('gives keep-alive clients that keep calling through a SIGTERM no reset connection', async () => {
    const serve = await startServeProcess();
    const clients = keepAliveClients(`${serve.publicUrl}/healthz`, 4);
    await until(
      'the clients are answered',
      async () => clients.answered(),
      (answered) => answered >= 8,
    );
    serve.child.kill('SIGTERM');
    await until(
      'serve stopped listening',
      async () => serve.output(),
      (output) => output.includes('ehr-gateway stopped'),
    );
    const { answered, failures } = await clients.stop();
    await exitOf(serve.child);
    expect(answered).toBeGreaterThan(0);
    // Refused new connections are fine (the listener is closed); a connection cut under a request is not.
    expect(failures.filter((code) => code !== 'ECONNREFUSED')).toEqual([]);
  });
});
