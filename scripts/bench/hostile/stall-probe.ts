/**
 * Preloaded into serve by `hostile/run.ts --profile DIR` (node --import): how late the event loop
 * ran, to find the stalls a CPU profile then explains. Writes STALL_PROBE_OUT (JSON) every 2 s and
 * at exit: monitorEventLoopDelay's figures, and each stretch in which a 10 ms timer ran more than
 * 40 ms late, with when it ended on the monotonic clock (µs, the clock of a .cpuprofile's
 * timestamps) and how late it was; and each second's busy share of the loop, worst lateness and
 * longest wait for a database connection.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';

const out = process.env.STALL_PROBE_OUT;
const TICK_MS = 10;
const REPORTED_LATE_MS = 40;

/** The main thread's time on a CPU and waiting for one so far (ns; schedstat), zeros without /proc. */
function schedstat(): [number, number] {
  try {
    const [onCpu, waiting] = readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ').map(Number);
    return [onCpu!, waiting!];
  } catch {
    return [0, 0];
  }
}

type PgPool = { prototype: { connect(this: { waitingCount: number }, callback?: (...args: unknown[]) => void): unknown } };
const pools = new Set<{ waitingCount: number }>();
const poolWaits: Array<{ endUs: number; waitMs: number }> = [];
let acquisitions = 0;

/** Times each wait for a connection of serve's pg pools (pg-pool's connect, as the checkout in the working directory resolves it). */
function watchPools(): void {
  try {
    const require = createRequire(path.join(process.cwd(), 'package.json'));
    const pgPool = require(require.resolve('pg-pool', { paths: [path.dirname(require.resolve('pg'))] })) as PgPool;
    const connect = pgPool.prototype.connect;
    pgPool.prototype.connect = function (callback) {
      pools.add(this);
      const started = process.hrtime.bigint();
      const note = () => {
        acquisitions += 1;
        const now = process.hrtime.bigint();
        const waitMs = Number(now - started) / 1e6;
        if (waitMs > 5) poolWaits.push({ endUs: Number(now / 1000n), waitMs: Math.round(waitMs * 10) / 10 });
      };
      if (callback)
        return connect.call(this, (...args: unknown[]) => {
          note();
          callback(...args);
        });
      const connected = connect.call(this) as Promise<unknown>;
      connected.then(note, note);
      return connected;
    };
  } catch {
    // Not a checkout with pg: no pool figures.
  }
}

if (out) {
  watchPools();
  // Each second: the pool's longest queue, the share of the second the loop was busy (event-loop
  // utilization), and its timer's worst lateness. A loop busy all second without one long stall makes
  // every request wait a full turn at each of its awaits.
  const bySecond: Array<{ endUs: number; maxWaiting: number; loopBusy: number; maxLateMs: number }> = [];
  let maxWaiting = 0;
  let maxLateMs = 0;
  let utilization = performance.eventLoopUtilization();
  let secondEnds = process.hrtime.bigint() + 1_000_000_000n;
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  const stalls: Array<{ endUs: number; lateMs: number; onCpuMs: number; runQueueMs: number }> = [];
  const round = (ms: number) => Math.round(ms * 10) / 10;
  let last = process.hrtime.bigint();
  let lastSched = schedstat();
  const tick = setInterval(() => {
    const now = process.hrtime.bigint();
    const sched = schedstat();
    const lateMs = Number(now - last) / 1e6 - TICK_MS;
    if (lateMs > REPORTED_LATE_MS)
      stalls.push({
        endUs: Number(now / 1000n),
        lateMs: round(lateMs),
        onCpuMs: round((sched[0] - lastSched[0]) / 1e6),
        runQueueMs: round((sched[1] - lastSched[1]) / 1e6),
      });
    maxLateMs = Math.max(maxLateMs, lateMs);
    last = now;
    lastSched = sched;
    for (const pool of pools) maxWaiting = Math.max(maxWaiting, pool.waitingCount);
    if (now >= secondEnds) {
      const loopBusy = Math.round(performance.eventLoopUtilization(utilization).utilization * 100) / 100;
      utilization = performance.eventLoopUtilization();
      bySecond.push({ endUs: Number(now / 1000n), maxWaiting, loopBusy, maxLateMs: round(maxLateMs) });
      maxWaiting = 0;
      maxLateMs = 0;
      secondEnds = now + 1_000_000_000n;
    }
  }, TICK_MS);
  tick.unref();
  const write = () => {
    try {
      writeProbe();
    } catch {
      // A measurement's aid: serve goes on without it.
    }
  };
  const writeProbe = () =>
    writeFileSync(
      out,
      JSON.stringify({
        pid: process.pid,
        tickMs: TICK_MS,
        reportedLateMs: REPORTED_LATE_MS,
        schedstatMs: { onCpu: schedstat()[0] / 1e6, runQueue: schedstat()[1] / 1e6 },
        delayMs: { max: histogram.max / 1e6, p99: histogram.percentile(99) / 1e6, p50: histogram.percentile(50) / 1e6, mean: histogram.mean / 1e6 },
        stalls,
        pool: { acquisitions, waitsOver5Ms: poolWaits },
        bySecond,
      }),
    );
  setInterval(write, 2000).unref();
  process.on('exit', write);
}
