import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { constantRate, httpRequest } from '../../scripts/bench/lib/http-load.js';

/**
 * The bench's constant-rate generator keeps idle keep-alive connections for the next requests due.
 * The service closes one that stays idle for KEEP_ALIVE_TIMEOUT (5 s), which a round of more than
 * 5 s reaches after a burst: the generator must then open another, not write into the closed one
 * and wait for an answer forever (which the run then did: it never ended).
 */
describe('the constant-rate load generator', () => {
  let server: http.Server | undefined;

  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  it('finishes every request when the server closed some of its idle connections', async () => {
    const burst = 5;
    const held: Array<() => void> = [];
    // 1: the first `burst` requests are held together, so the generator opens a connection for each;
    // 2: then answered at once, so one connection carries the rest and the others idle until closed;
    // 3: once one is and 20 more requests are answered, `burst` are held together again (once), so the
    //    generator takes every idle connection it keeps, the closed one among them.
    // No more than one closed is waited for: on a busy machine late answers keep several connections in
    // use, and a run waiting for four closed once ended before the second burst came.
    let phase: 1 | 2 | 3 = 1;
    let closedByServer = 0;
    let answeredSinceClosed = 0;
    let heldAgain = false;
    server = http.createServer((request, response) => {
      request.resume();
      const answer = () => response.end('{}');
      if (phase === 2 && !heldAgain && closedByServer >= 1 && (answeredSinceClosed += 1) > 20) phase = 3;
      if (phase === 2) return answer();
      held.push(answer);
      if (held.length < burst) return;
      if (phase === 3) heldAgain = true;
      phase = 2;
      for (const release of held.splice(0)) release();
    });
    server.keepAliveTimeout = 100;
    server.on('connection', (socket) => socket.on('close', () => (closedByServer += 1)));
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;

    const result = await constantRate({
      port,
      ratePerSecond: 100,
      durationMs: 10_000,
      next: () => ({ bytes: httpRequest('POST', '/', { 'content-type': 'application/json' }, '{}') }),
    });

    expect(heldAgain, 'the second burst came while the run lasted').toBe(true);
    // Every request due was answered, or failed when the server closed its connection just as it
    // was sent (keep-alive's own race, which a busy machine can meet): none was left waiting.
    expect(result.requests + result.errors).toBe(1000);
    expect(result.requests).toBeGreaterThan(900);
  }, 60_000);
});
