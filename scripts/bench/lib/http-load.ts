import net from 'node:net';
import { cpuMs } from './processes.js';

/**
 * The benchmark's HTTP/1.1 load generators, on raw keep-alive connections: the cheapest client
 * Node can be (no Agent, no parser objects per request), so the box's two cores go to the service.
 *
 * - closedLoop: `connections` clients, each sending its next request as soon as its answer
 *   arrived: the maximum throughput.
 * - constantRate: an open-loop generator that starts requests at a constant rate, spread over each
 *   millisecond (autocannon's overallRate sends each second's quota in a burst). A request waiting
 *   for a free connection is timed from when it was due, so a slow server cannot hide its queue
 *   (no coordinated omission).
 */

/** One request's bytes; `tag` comes back with its answer (e.g. to match an acknowledgement). */
export interface LoadRequest {
  bytes: Buffer;
  tag?: unknown;
}

export interface Answer {
  status: number;
  body: Buffer;
}

export interface LoadOptions {
  port: number;
  host?: string;
  /** A fresh request for each send. */
  next: () => LoadRequest;
  /** Sees every answer (e.g. to collect acknowledgements); a thrown error counts as an error. */
  onAnswer?: (answer: Answer, tag: unknown, latencyMs: number) => void;
}

export interface LoadResult {
  requests: number;
  /** Answers with a status other than 2xx, connection failures, and onAnswer throws. */
  errors: number;
  durationMs: number;
  perSecond: number;
  /** Milliseconds. */
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
  /** CPU milliseconds of `cpuOf`'s process per measured request, when asked. */
  cpuMsPerRequest?: number;
}

/** The text of an HTTP/1.1 request with a Content-Length body. */
export function httpRequest(method: string, path: string, headers: Readonly<Record<string, string>>, body: Buffer | string): Buffer {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  const lines = [
    `${method} ${path} HTTP/1.1`,
    'host: 127.0.0.1',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    `content-length: ${bytes.length}`,
    '',
    '',
  ];
  return Buffer.concat([Buffer.from(lines.join('\r\n')), bytes]);
}

const HEADER_END = Buffer.from('\r\n\r\n');

/** A keep-alive connection that carries one request at a time. */
class Connection {
  private readonly socket: net.Socket;
  private buffered: Buffer = Buffer.alloc(0);
  private waiting: { resolve: (answer: Answer) => void; reject: (error: Error) => void } | undefined;
  closed = false;

  constructor(port: number, host: string) {
    this.socket = net.connect({ port, host, noDelay: true });
    this.socket.on('data', (chunk: Buffer) => this.receive(chunk));
    const fail = (error: Error) => {
      this.closed = true;
      this.waiting?.reject(error);
      this.waiting = undefined;
    };
    this.socket.on('error', fail);
    this.socket.on('close', () => fail(new Error('connection closed')));
  }

  send(bytes: Buffer): Promise<Answer> {
    // A destroyed socket takes the write without an error event: the answer would be awaited forever.
    if (this.closed) return Promise.reject(new Error('connection closed'));
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.socket.write(bytes);
    });
  }

  close(): void {
    this.closed = true;
    this.socket.destroy();
  }

  private receive(chunk: Buffer): void {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    const headEnd = this.buffered.indexOf(HEADER_END);
    if (headEnd < 0) return;
    const head = this.buffered.toString('latin1', 0, headEnd);
    const status = Number(head.slice(9, 12));
    const bodyStart = headEnd + 4;
    const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    let bodyEnd: number;
    if (length) {
      bodyEnd = bodyStart + Number(length[1]);
      if (this.buffered.length < bodyEnd) return;
    } else if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) {
      const last = this.buffered.indexOf('0\r\n\r\n', bodyStart);
      if (last < 0) return;
      bodyEnd = last + 5;
    } else bodyEnd = bodyStart;
    const body = this.buffered.subarray(bodyStart, bodyEnd);
    this.buffered = this.buffered.subarray(bodyEnd);
    if (/\r\nconnection:\s*close/i.test(head)) this.close();
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.resolve({ status, body: /\r\ntransfer-encoding:\s*chunked/i.test(head) ? unchunk(body) : Buffer.from(body) });
  }
}

function unchunk(body: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = body.indexOf('\r\n', at);
    const size = parseInt(body.toString('latin1', at, lineEnd), 16);
    if (!size) return Buffer.concat(parts);
    parts.push(body.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}

/** Latencies in milliseconds, and what they sum up to. */
export class Latencies {
  private values = new Float64Array(1 << 14);
  count = 0;
  errors = 0;

  add(ms: number): void {
    if (this.count === this.values.length) {
      const grown = new Float64Array(this.values.length * 2);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[this.count++] = ms;
  }

  summary(durationMs: number): LoadResult {
    const sorted = this.values.slice(0, this.count).sort();
    const at = (q: number) => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!);
    let sum = 0;
    for (const value of sorted) sum += value;
    return {
      requests: this.count,
      errors: this.errors,
      durationMs,
      perSecond: (this.count * 1000) / durationMs,
      p50: at(0.5),
      p90: at(0.9),
      p99: at(0.99),
      max: sorted.length === 0 ? 0 : sorted[sorted.length - 1]!,
      mean: sorted.length === 0 ? 0 : sum / sorted.length,
    };
  }
}

const nowMs = () => performance.now();

/** One request on `connection`, its latency counted from `dueAt`; false when it failed. */
async function exchange(options: LoadOptions, connection: Connection, dueAt: number, latencies: Latencies | undefined): Promise<boolean> {
  const request = options.next();
  try {
    const answer = await connection.send(request.bytes);
    const latency = nowMs() - dueAt;
    options.onAnswer?.(answer, request.tag, latency);
    if (answer.status < 200 || answer.status > 299) throw new Error(`HTTP ${answer.status}: ${answer.body.toString('utf8', 0, 300)}`);
    latencies?.add(latency);
    return true;
  } catch (error) {
    if (latencies) {
      latencies.errors += 1;
      if (latencies.errors <= 3) console.error(`bench: request failed: ${(error as Error).message}`);
    }
    return false;
  }
}

/**
 * `connections` clients in a closed loop for `warmupMs` (not counted), then `durationMs`; or,
 * with `count`, until that many requests were answered (durationMs then caps the run).
 */
export async function closedLoop(
  options: LoadOptions & { connections: number; durationMs: number; warmupMs?: number; count?: number; cpuOf?: number },
): Promise<LoadResult> {
  const host = options.host ?? '127.0.0.1';
  const warmupEnds = nowMs() + (options.warmupMs ?? 0);
  const latencies = new Latencies();
  let measuring = (options.warmupMs ?? 0) === 0;
  const cpu = () => (options.cpuOf === undefined ? Promise.resolve(NaN) : cpuMs(options.cpuOf));
  let cpuAtStart = measuring ? cpu() : Promise.resolve(NaN);
  let started = measuring ? nowMs() : 0;
  let ends = measuring ? started + options.durationMs : Infinity;
  let issued = 0;
  const more = () => (options.count === undefined ? nowMs() < ends : issued < options.count && nowMs() < ends);
  const client = async () => {
    let connection = new Connection(options.port, host);
    while (!measuring || more()) {
      if (!measuring && nowMs() >= warmupEnds) {
        measuring = true;
        cpuAtStart = cpu();
        started = nowMs();
        ends = started + options.durationMs;
      }
      if (measuring) issued += 1;
      if (connection.closed) connection = new Connection(options.port, host);
      await exchange(options, connection, nowMs(), measuring ? latencies : undefined);
    }
    connection.close();
  };
  await Promise.all(Array.from({ length: options.connections }, client));
  const summary = latencies.summary(nowMs() - started);
  if (options.cpuOf === undefined) return summary;
  return { ...summary, cpuMsPerRequest: ((await cpu()) - (await cpuAtStart)) / summary.requests };
}

/** Requests started at `ratePerSecond` for `durationMs`, on up to `maxConnections` connections. */
export async function constantRate(
  options: LoadOptions & { ratePerSecond: number; durationMs: number; maxConnections?: number },
): Promise<LoadResult & { ratePerSecond: number; queuedMax: number }> {
  const host = options.host ?? '127.0.0.1';
  const maxConnections = options.maxConnections ?? 256;
  const idle: Connection[] = [];
  let open = 0;
  const due: number[] = [];
  let queuedMax = 0;
  const latencies = new Latencies();
  const started = nowMs();
  const total = Math.round((options.ratePerSecond * options.durationMs) / 1000);
  let scheduled = 0;
  let inFlight = 0;
  let finish: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => (finish = resolve));

  const dispatch = () => {
    while (due.length > 0) {
      let connection = idle.pop();
      // One the server closed while it waited (KEEP_ALIVE_TIMEOUT): a write to it would never be answered.
      while (connection?.closed) {
        open -= 1;
        connection = idle.pop();
      }
      if (!connection && open < maxConnections) {
        connection = new Connection(options.port, host);
        open += 1;
      }
      if (!connection) break;
      const dueAt = due.shift()!;
      const used = connection;
      inFlight += 1;
      void exchange(options, used, dueAt, latencies).then(() => {
        inFlight -= 1;
        if (used.closed) open -= 1;
        else idle.push(used);
        dispatch();
        if (scheduled === total && due.length === 0 && inFlight === 0) finish();
      });
    }
    queuedMax = Math.max(queuedMax, due.length);
  };
  // Every millisecond (the timer's granularity), the requests that fell due since the last tick.
  const tick = () => {
    const elapsed = nowMs() - started;
    const target = Math.min(total, Math.floor((elapsed * options.ratePerSecond) / 1000));
    while (scheduled < target) {
      due.push(started + (scheduled * 1000) / options.ratePerSecond);
      scheduled += 1;
    }
    dispatch();
    if (scheduled < total) setTimeout(tick, 1);
    else if (due.length === 0 && inFlight === 0) finish();
  };
  tick();
  await finished;
  for (const connection of idle) connection.close();
  return { ...latencies.summary(options.durationMs), ratePerSecond: options.ratePerSecond, queuedMax };
}
