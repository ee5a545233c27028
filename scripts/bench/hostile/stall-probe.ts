/**
 * Preloaded into serve by `hostile/run.ts --profile DIR` (node --import): how late the event loop
 * ran, to find the stalls a CPU profile then explains. Writes STALL_PROBE_OUT (JSON) every 2 s and
 * at exit: monitorEventLoopDelay's figures, and each stretch in which a 10 ms timer ran more than
 * 40 ms late, with when it ended on the monotonic clock (µs, the clock of a .cpuprofile's
 * timestamps) and how late it was.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';

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

if (out) {
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
    last = now;
    lastSched = sched;
  }, TICK_MS);
  tick.unref();
  const write = () =>
    writeFileSync(
      out,
      JSON.stringify({
        pid: process.pid,
        tickMs: TICK_MS,
        reportedLateMs: REPORTED_LATE_MS,
        schedstatMs: { onCpu: schedstat()[0] / 1e6, runQueue: schedstat()[1] / 1e6 },
        delayMs: { max: histogram.max / 1e6, p99: histogram.percentile(99) / 1e6, p50: histogram.percentile(50) / 1e6, mean: histogram.mean / 1e6 },
        stalls,
      }),
    );
  setInterval(write, 2000).unref();
  process.on('exit', write);
}
