/**
 * Preloaded into serve by `hostile/run.ts --profile DIR` (node --import): how late the event loop
 * ran, to find the stalls a CPU profile then explains. Writes STALL_PROBE_OUT (JSON) every 2 s and
 * at exit: monitorEventLoopDelay's figures, and each stretch in which a 10 ms timer ran more than
 * 40 ms late, with when it ended on the monotonic clock (µs, the clock of a .cpuprofile's
 * timestamps) and how late it was.
 */
import { writeFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const out = process.env.STALL_PROBE_OUT;
const TICK_MS = 10;
const REPORTED_LATE_MS = 40;

if (out) {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  const stalls: Array<{ endUs: number; lateMs: number }> = [];
  let last = process.hrtime.bigint();
  const tick = setInterval(() => {
    const now = process.hrtime.bigint();
    const lateMs = Number(now - last) / 1e6 - TICK_MS;
    if (lateMs > REPORTED_LATE_MS) stalls.push({ endUs: Number(now / 1000n), lateMs: Math.round(lateMs * 10) / 10 });
    last = now;
  }, TICK_MS);
  tick.unref();
  const write = () =>
    writeFileSync(
      out,
      JSON.stringify({
        pid: process.pid,
        delayMs: { max: histogram.max / 1e6, p99: histogram.percentile(99) / 1e6, p50: histogram.percentile(50) / 1e6, mean: histogram.mean / 1e6 },
        stalls,
      }),
    );
  setInterval(write, 2000).unref();
  process.on('exit', write);
}
