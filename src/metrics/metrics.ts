import client from 'prom-client';
import type pg from 'pg';

/**
 * The process's Prometheus metrics (prom-client), served as text by `GET /metrics` on the internal
 * listener. One registry per running service: counters and histograms are updated on the hot
 * paths (a label lookup and an add), the gauges of the database pool and of the queues are read
 * when scraped.
 */

/** One queue of background work, as the database holds it (src/emdr/queues.ts). */
export interface QueueDepth {
  queue: string;
  /** Rows waiting in the queue's state: due, leased by a worker, or scheduled for later. */
  depth: number;
  /** Rows a worker may claim now. */
  claimable: number;
  /** Age of the oldest row waiting, in seconds (0 when none waits). */
  oldestSeconds: number;
}

/** A scrape waits this long for the queue read; then the database counts as down for this scrape (Prometheus' own scrape timeout is 10 s by default). */
const DATABASE_READ_TIMEOUT_MS = 3000;

/**
 * How often the event-loop delay histogram (nodejs_eventloop_lag_*) samples the loop: prom-client's
 * 10 ms default is a timer that wakes an idle process 100 times a second, nine in ten of its
 * wake-ups (issue 24: a third of an idle process's CPU). A stall as long as this or longer is always
 * caught (the sample due during it measures it); a shorter one is caught in proportion to its length.
 */
export const EVENT_LOOP_SAMPLE_MS = 100;

/** Seconds: from a fast read to a large document upload. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export class Metrics {
  readonly registry = new client.Registry();

  /** Interface A: one per JSON-RPC call (a batch counts each call). */
  readonly rpcRequests = new client.Counter({
    name: 'ehr_gateway_rpc_requests_total',
    help: 'JSON-RPC calls of interface A by method',
    labelNames: ['method'],
    registers: [this.registry],
  });
  readonly rpcErrors = new client.Counter({
    name: 'ehr_gateway_rpc_errors_total',
    help: 'JSON-RPC calls of interface A answered with an error, by method and error code',
    labelNames: ['method', 'code'],
    registers: [this.registry],
  });
  readonly rpcDuration = new client.Histogram({
    name: 'ehr_gateway_rpc_request_duration_seconds',
    help: 'Time to answer a JSON-RPC call of interface A, by method',
    labelNames: ['method'],
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });

  /** Interface B: one per HTTP request under /api. */
  readonly apiRequests = new client.Counter({
    name: 'ehr_gateway_api_requests_total',
    help: 'HTTP requests of interface B by OpenAPI operation and status',
    labelNames: ['operation', 'status'],
    registers: [this.registry],
  });
  readonly apiErrors = new client.Counter({
    name: 'ehr_gateway_api_errors_total',
    help: 'Interface B answers with an error, by OpenAPI operation and error code',
    labelNames: ['operation', 'code'],
    registers: [this.registry],
  });
  readonly apiDuration = new client.Histogram({
    name: 'ehr_gateway_api_request_duration_seconds',
    help: 'Time to answer an HTTP request of interface B, by OpenAPI operation',
    labelNames: ['operation'],
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });

  /** Callback delivery, by callback name. */
  readonly callbackAttempts = new client.Counter({
    name: 'ehr_gateway_callback_attempts_total',
    help: 'Callback attempts by callback',
    labelNames: ['callback'],
    registers: [this.registry],
  });
  readonly callbackDeliveries = new client.Counter({
    name: 'ehr_gateway_callback_deliveries_total',
    help: 'Callbacks delivered (HTTP 200 with status Success), by callback',
    labelNames: ['callback'],
    registers: [this.registry],
  });
  readonly callbackFailures = new client.Counter({
    name: 'ehr_gateway_callback_failures_total',
    help: 'Callback attempts that failed (retried, or failed for good), by callback',
    labelNames: ['callback'],
    registers: [this.registry],
  });
  readonly callbackPostponements = new client.Counter({
    name: 'ehr_gateway_callback_postponements_total',
    help: "Callback attempts not sent because the receiver origin's circuit was open (recorded as failed attempts, retried by the schedule), by callback",
    labelNames: ['callback'],
    registers: [this.registry],
  });
  readonly callbacksExhausted = new client.Counter({
    name: 'ehr_gateway_callbacks_failed_total',
    help: 'Callbacks marked failed: their retry schedule is exhausted (ehr-gateway callbacks replay sends them again), by callback',
    labelNames: ['callback'],
    registers: [this.registry],
  });

  constructor(sources: { pool?: pg.Pool; queues?: () => Promise<QueueDepth[]> } = {}) {
    client.collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
    const { pool, queues } = sources;
    if (pool) {
      new client.Gauge({
        name: 'ehr_gateway_db_pool_connections',
        help: 'Connections of the database pool of this process',
        registers: [this.registry],
        collect() {
          this.set(pool.totalCount);
        },
      });
      new client.Gauge({
        name: 'ehr_gateway_db_pool_in_use',
        help: 'Connections of the database pool checked out now',
        registers: [this.registry],
        collect() {
          this.set(pool.totalCount - pool.idleCount);
        },
      });
      new client.Gauge({
        name: 'ehr_gateway_db_pool_waiting',
        help: 'Queries waiting for a connection of the database pool',
        registers: [this.registry],
        collect() {
          this.set(pool.waitingCount);
        },
      });
    }
    if (queues) this.queueGauges(queues);
  }

  /**
   * SIGNATURE_TRUST_STORE as the worker role loaded it (set by that role only): without one, signer
   * certificate chains are not checked and every acceptance callback carries CERTIFICATE_CHAIN_NOT_CHECKED.
   */
  trustStore(summary: { certificates: number; earliestNotAfterMs: number } | undefined): void {
    new client.Gauge({
      name: 'ehr_gateway_trust_store_certificates',
      help: 'Certificates of SIGNATURE_TRUST_STORE loaded by the worker role; 0: certificate chains are not checked (CERTIFICATE_CHAIN_NOT_CHECKED warnings)',
      registers: [this.registry],
    }).set(summary?.certificates ?? 0);
    if (summary) {
      new client.Gauge({
        name: 'ehr_gateway_trust_store_earliest_expiry_timestamp_seconds',
        help: 'When the first certificate of SIGNATURE_TRUST_STORE expires (Unix time)',
        registers: [this.registry],
      }).set(Math.floor(summary.earliestNotAfterMs / 1000));
    }
  }

  /**
   * The three queue gauges and ehr_gateway_database_up, filled by one read of the database per
   * scrape. A read that fails or takes too long sets database_up to 0 and leaves the queue gauges
   * empty, so /metrics still answers while the database is down.
   */
  private queueGauges(queues: () => Promise<QueueDepth[]>): void {
    let reading: Promise<QueueDepth[] | undefined> | undefined;
    const readOnce = async (): Promise<QueueDepth[] | undefined> => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), DATABASE_READ_TIMEOUT_MS);
      });
      try {
        return await Promise.race([queues().catch(() => undefined), timeout]);
      } finally {
        clearTimeout(timer);
      }
    };
    // The gauges' collects share one read.
    const read = () => (reading ??= readOnce().finally(() => setImmediate(() => (reading = undefined))));
    new client.Gauge({
      name: 'ehr_gateway_database_up',
      help: 'Whether the database answered the queue read of this scrape within 3 s (1) or not (0)',
      registers: [this.registry],
      async collect() {
        this.set((await read()) ? 1 : 0);
      },
    });
    const gauge = (name: string, help: string, value: (queue: QueueDepth) => number) =>
      new client.Gauge({
        name,
        help,
        labelNames: ['queue'],
        registers: [this.registry],
        async collect() {
          this.reset();
          for (const queue of (await read()) ?? []) this.set({ queue: queue.queue }, value(queue));
        },
      });
    gauge('ehr_gateway_queue_depth', 'Rows waiting in a queue of background work (due, leased or scheduled), read from the database', (queue) => queue.depth);
    gauge('ehr_gateway_queue_claimable', 'Rows of a queue that a worker may claim now, read from the database', (queue) => queue.claimable);
    gauge('ehr_gateway_queue_oldest_age_seconds', 'Age of the oldest row waiting in a queue, read from the database', (queue) => queue.oldestSeconds);
  }

  /** Receiver origins whose circuit is open or half-open in this worker process (src/callbacks/circuit-breaker.ts). */
  openCircuits(read: () => number): void {
    new client.Gauge({
      name: 'ehr_gateway_callback_circuits_open',
      help: 'Callback receiver origins whose circuit is open or half-open in this process: their callbacks are postponed until a probe is answered',
      registers: [this.registry],
      collect() {
        this.set(read());
      },
    });
  }

  /** Interface B requests waiting, unread, for their client address's share (CLIENT_REQUESTS_IN_PROGRESS). */
  clientShareWaiting(read: () => number): void {
    new client.Gauge({
      name: 'ehr_gateway_client_share_waiting_requests',
      help: 'Interface B requests waiting, body unread, because their client address has CLIENT_REQUESTS_IN_PROGRESS under way while other addresses are served',
      registers: [this.registry],
      collect() {
        this.set(read());
      },
    });
  }

  /**
   * Interface B requests taken in by this process: holding an intake slot of their clinic (being
   * read and handled), or waiting for one with their bodies unread; and the body bytes taken in
   * (BODY_BYTES_IN_FLIGHT_PER_*).
   */
  intakeRequests(read: () => { reading: number; waiting: number; bytes: number }): void {
    new client.Gauge({
      name: 'ehr_gateway_intake_requests',
      help: 'Interface B requests of this process holding an intake slot of their clinic account (state=reading) or waiting for one, body unread (state=waiting)',
      labelNames: ['state'],
      registers: [this.registry],
      collect() {
        const { reading, waiting } = read();
        this.set({ state: 'reading' }, reading);
        this.set({ state: 'waiting' }, waiting);
      },
    });
    new client.Gauge({
      name: 'ehr_gateway_intake_body_bytes',
      help: 'Body bytes of the interface B requests this process is reading, parsing and storing (by Content-Length; BODY_BYTES_IN_FLIGHT_PER_PROCESS bounds those over 1 MiB)',
      registers: [this.registry],
      collect() {
        this.set(read().bytes);
      },
    });
  }

  /** Interface A: one call answered. */
  rpcCall(method: string, seconds: number, errorCode: number | undefined): void {
    this.rpcRequests.inc({ method });
    this.rpcDuration.observe({ method }, seconds);
    if (errorCode !== undefined) this.rpcErrors.inc({ method, code: String(errorCode) });
  }

  /** Interface B: one request answered. */
  apiRequest(operation: string, status: number, seconds: number, errorCode: string | undefined): void {
    this.apiRequests.inc({ operation, status: String(status) });
    this.apiDuration.observe({ operation }, seconds);
    if (errorCode !== undefined) this.apiErrors.inc({ operation, code: errorCode });
  }

  /** The Prometheus text exposition of everything. */
  async text(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

/** Seconds since `startedAt` (process.hrtime.bigint()). */
export function secondsSince(startedAt: bigint): number {
  return Number(process.hrtime.bigint() - startedAt) / 1e9;
}
