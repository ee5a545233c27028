import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { ORGANIZATION, registerBody } from '../../../test/support/emdr.js';

/**
 * The honest side of a hostile-load scenario, measured from outside the service: a clinic sending
 * RegisterDocument at a steady rate (a new connection each, as a clinic that opens one per request
 * does, so the connection caps are in its way too), its callback receiver, and a prober of
 * /healthz. Each runs in the suite's own process; the abuser runs in another (abuser.ts), so its
 * load does not distort these clocks.
 */

/** Loopback addresses stand for clients on different machines: the service tells them apart by source address. */
export const ADDRESSES = { honest: '127.0.0.1', abuser: '127.0.0.2', prober: '127.0.0.3' } as const;

export interface ClinicHeaders {
  businessId: string;
  user: string;
  token: string;
}

/** A clinic account made by the measured checkout's own `clients add`, calling back to `callbackUrl`. */
export async function addClinic(root: string, env: Record<string, string>, callbackUrl: string): Promise<ClinicHeaders> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      '--import',
      'tsx',
      path.join(root, 'src/main.ts'),
      'clients',
      'add',
      '--business-id',
      `hostile-${randomUUID().slice(0, 8)}`,
      '--user',
      'mis',
      '--callback-url',
      callbackUrl,
      '--organization',
      ORGANIZATION,
    ],
    { cwd: root, env: { ...process.env, ...env, LOG_LEVEL: 'warn' } },
  );
  const created = JSON.parse(stdout) as ClinicHeaders;
  return { businessId: created.businessId, user: created.user, token: created.token };
}

/** Callbacks as they arrive: the first one of each request (its acceptance), by queueMessageId. */
export interface Receiver {
  url: string;
  firstCallbackAt: Map<string, number>;
  close(): Promise<void>;
}

/**
 * A clinic's receiver that answers every callback Success at once and notes when each request's
 * first one came; or, with `hang`, one that reads each callback and never answers (M3's dead receiver).
 */
export async function startReceiver(options: { hang?: boolean } = {}): Promise<Receiver> {
  const firstCallbackAt = new Map<string, number>();
  const server = http.createServer((request, response) => {
    if (options.hang) {
      request.resume();
      return;
    }
    let text = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (text += chunk));
    request.on('end', () => {
      const at = performance.now();
      try {
        const id = (JSON.parse(text) as { queueMessageId?: string }).queueMessageId;
        if (id && !firstCallbackAt.has(id)) firstCallbackAt.set(id, at);
      } catch {
        // Not a callback body: answered all the same.
      }
      response.setHeader('content-type', 'application/json');
      response.end('{"status":"Success"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, ADDRESSES.honest, resolve));
  return {
    url: `http://${ADDRESSES.honest}:${(server.address() as AddressInfo).port}`,
    firstCallbackAt,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        // A hanging receiver's connections end now, or close would wait for them.
        server.closeAllConnections();
      }),
  };
}

interface Sent {
  startedAt: number;
  ackMs?: number;
  status?: number | string;
  queueMessageId?: string;
}

/** One POST on a connection of its own from `localAddress`: its status (or error code) and body, within `timeoutMs`. */
function postOnce(
  url: string,
  localAddress: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
): Promise<{ status: number | string; body: string }> {
  return new Promise((resolve) => {
    const request = http.request(
      url,
      {
        method: 'POST',
        localAddress,
        agent: false,
        timeout: timeoutMs,
        headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode!, body: text }));
        response.on('error', () => resolve({ status: 'ECONNRESET', body: text }));
      },
    );
    request.on('timeout', () => request.destroy(Object.assign(new Error('timeout'), { code: 'TIMEOUT' })));
    request.on('error', (error: NodeJS.ErrnoException) => resolve({ status: error.code ?? 'ERROR', body: '' }));
    request.end(body);
  });
}

/** The honest clinic's RegisterDocument requests at `perSecond` until stopped. */
export function honestClinic(serviceUrl: string, clinic: ClinicHeaders, perSecond: number): { stop(): Promise<Sent[]> } {
  const sent: Sent[] = [];
  const pending = new Set<Promise<void>>();
  const timer = setInterval(() => {
    const entry: Sent = { startedAt: performance.now() };
    sent.push(entry);
    const done = postOnce(`${serviceUrl}/api/RegisterDocument`, ADDRESSES.honest, { ...clinic }, JSON.stringify(registerBody()), 30_000).then(
      ({ status, body }) => {
        entry.ackMs = performance.now() - entry.startedAt;
        entry.status = status;
        if (status === 200) entry.queueMessageId = (JSON.parse(body) as { queueMessageId: string }).queueMessageId;
      },
    );
    pending.add(done);
    void done.finally(() => pending.delete(done));
  }, 1000 / perSecond);
  return {
    async stop() {
      clearInterval(timer);
      await Promise.all(pending);
      return sent;
    },
  };
}

/** GET /healthz every `everyMs` on a new connection of its own: the latencies, and the failures, until stopped. */
export function probeHealth(serviceUrl: string, everyMs: number): { stop(): Promise<{ latenciesMs: number[]; failures: number }> } {
  const latenciesMs: number[] = [];
  let failures = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      const status = await new Promise<number | string>((resolve) => {
        const request = http.get(`${serviceUrl}/healthz`, { localAddress: ADDRESSES.prober, agent: false, timeout: 10_000 }, (response) => {
          response.resume();
          response.on('end', () => resolve(response.statusCode!));
        });
        request.on('timeout', () => request.destroy(Object.assign(new Error('timeout'), { code: 'TIMEOUT' })));
        request.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'ERROR'));
      });
      if (status === 200) latenciesMs.push(performance.now() - started);
      else failures += 1;
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { latenciesMs, failures };
    },
  };
}

export function percentile(values: readonly number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** What a phase measured of the honest clinic and of /healthz. */
export interface PhaseFigures {
  requests: number;
  /** Acknowledged with 200. */
  acknowledged: number;
  /** Every other outcome, by status or error code. */
  failures: Record<string, number>;
  ackP50Ms?: number;
  ackP99Ms?: number;
  ackMaxMs?: number;
  /** From sending the request to its first (acceptance) callback's arrival. */
  firstCallbackP50Ms?: number;
  firstCallbackP99Ms?: number;
  /** The slowest first callbacks: when the request was sent (ms into the phase) and how long its callback took, to tell a burst's from a phase's. */
  slowestFirstCallbacks?: Array<{ sentAtMs: number; ms: number }>;
  /** Acknowledged requests whose first callback had not come when the phase's wait ended. */
  callbacksMissing: number;
  healthzP99Ms?: number;
  healthzMaxMs?: number;
  healthzFailures: number;
  /** /healthz of the liveness listener (HEALTH_PORT), when the measured checkout has one. */
  liveness?: { p99Ms?: number; maxMs?: number; failures: number };
}

/** How many of the slowest first callbacks a phase's figures list. */
const SLOWEST_SHOWN = 5;

/** Waits up to `waitMs` for the first callbacks of the acknowledged requests, then sums the phase up. */
export async function figuresOf(
  sent: Sent[],
  receiver: Receiver,
  health: { latenciesMs: number[]; failures: number },
  waitMs: number,
  liveness?: { latenciesMs: number[]; failures: number },
): Promise<PhaseFigures> {
  const acknowledged = sent.filter((entry) => entry.status === 200);
  const until = Date.now() + waitMs;
  while (Date.now() < until && acknowledged.some((entry) => !receiver.firstCallbackAt.has(entry.queueMessageId!)))
    await new Promise((resolve) => setTimeout(resolve, 100));
  const failures: Record<string, number> = {};
  for (const entry of sent) if (entry.status !== 200) failures[String(entry.status)] = (failures[String(entry.status)] ?? 0) + 1;
  const acks = acknowledged.map((entry) => entry.ackMs!);
  const timed = acknowledged.flatMap((entry) => {
    const at = receiver.firstCallbackAt.get(entry.queueMessageId!);
    return at === undefined ? [] : [{ sentAt: entry.startedAt, ms: at - entry.startedAt }];
  });
  const callbacks = timed.map((entry) => entry.ms);
  const phaseStart = Math.min(...sent.map((entry) => entry.startedAt));
  const round = (value: number | undefined) => (value === undefined ? undefined : Math.round(value * 10) / 10);
  return {
    requests: sent.length,
    acknowledged: acknowledged.length,
    failures,
    ackP50Ms: round(percentile(acks, 50)),
    ackP99Ms: round(percentile(acks, 99)),
    ackMaxMs: round(percentile(acks, 100)),
    firstCallbackP50Ms: round(percentile(callbacks, 50)),
    firstCallbackP99Ms: round(percentile(callbacks, 99)),
    slowestFirstCallbacks: timed
      .sort((a, b) => b.ms - a.ms)
      .slice(0, SLOWEST_SHOWN)
      .map((entry) => ({ sentAtMs: Math.round(entry.sentAt - phaseStart), ms: round(entry.ms)! })),
    callbacksMissing: acknowledged.length - callbacks.length,
    healthzP99Ms: round(percentile(health.latenciesMs, 99)),
    healthzMaxMs: round(percentile(health.latenciesMs, 100)),
    healthzFailures: health.failures,
    ...(liveness
      ? { liveness: { p99Ms: round(percentile(liveness.latenciesMs, 99)), maxMs: round(percentile(liveness.latenciesMs, 100)), failures: liveness.failures } }
      : {}),
  };
}
