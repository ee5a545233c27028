/**
 * The liveness listener (HEALTH_PORT), in a thread of its own: GET /healthz answers from here, so
 * a probe is answered within milliseconds while the event loop works through a large body or a
 * garbage collection of the main heap (this thread has its own small heap). It still tells the
 * truth about the service: the event loop stores the time every HEARTBEAT_EVERY_MS (liveness.ts),
 * and /healthz answers 503 `stalled` once that heartbeat is older than `stallMs`, so a process
 * whose loop is stuck fails its liveness probe and is restarted. Node runs this file as it is (its
 * types stripped under the tests, compiled in dist/): it imports nothing of ours.
 *
 * Messages to the parent: `{port}` once listening, or `{code, message}` when it cannot listen.
 */
import http, { type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parentPort, workerData } from 'node:worker_threads';

export interface LivenessThreadData {
  host: string;
  port: number;
  /** One BigInt64 (epoch ms): the event loop's last heartbeat. */
  heartbeat: SharedArrayBuffer;
  /** A heartbeat older than this answers 503. */
  stallMs: number;
}

const { host, port, heartbeat, stallMs } = workerData as LivenessThreadData;
const lastBeat = new BigInt64Array(heartbeat);

/** The same security headers as the other listeners' answers (http/listener.ts). */
const HEADERS = { 'Content-Type': 'application/json; charset=utf-8', 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-store' };

function send(res: ServerResponse, status: number, body: unknown, extra: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { ...HEADERS, 'Content-Length': String(Buffer.byteLength(text)), ...extra });
  res.end(text);
}

const server = http.createServer({ headersTimeout: 5_000, requestTimeout: 5_000 }, (req, res) => {
  const path = (req.url ?? '/').split('?')[0];
  if (path !== '/healthz') {
    send(res, 404, { error: 'Not Found', message: 'the liveness listener (HEALTH_PORT) answers GET /healthz only' });
    return;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    send(res, 405, { error: 'Method Not Allowed' }, { Allow: 'GET, HEAD' });
    return;
  }
  const ageMs = Math.max(0, Date.now() - Number(Atomics.load(lastBeat, 0)));
  const alive = ageMs <= stallMs;
  send(res, alive ? 200 : 503, { status: alive ? 'ok' : 'stalled', eventLoopHeartbeatAgeMs: ageMs });
});
// A probe or two, from the orchestrator: nothing here is worth holding many connections for.
server.maxConnections = 64;
server.keepAliveTimeout = 5_000;
server.once('error', (error: NodeJS.ErrnoException) => parentPort!.postMessage({ code: error.code, message: error.message }));
server.listen(port, host, () => parentPort!.postMessage({ port: (server.address() as AddressInfo).port }));
