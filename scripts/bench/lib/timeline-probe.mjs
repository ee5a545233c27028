/**
 * Loaded into a measured process with `--import` (steady-timeline.ts): a timeline of what held its
 * event loop, written as JSON to $TIMELINE_PROBE_DIR/<pid>.json on SIGUSR2 (a write of what was
 * recorded since the last one; the process goes on).
 *
 * - stalls: a 2 ms timer chain; a tick that came more than 4 ms late is a stall (when it ended, how long).
 * - gc: every collection (PerformanceObserver 'gc': when it started, how long, which kind).
 *
 * Times are milliseconds since the epoch (performance.timeOrigin + performance.now()), so they line
 * up with the load generator's; `clock` pairs such a time with the monotonic clock's (process.hrtime,
 * the clock of a --cpu-prof profile's timestamps). Plain JavaScript: it is loaded before any TypeScript loader.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Session } from 'node:inspector';
import { PerformanceObserver, constants } from 'node:perf_hooks';

const dir = process.env.TIMELINE_PROBE_DIR;
if (dir) {
  const origin = performance.timeOrigin;
  const now = () => origin + performance.now();
  const stalls = [];
  const gc = [];
  const KINDS = {
    [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
    [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
    [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
    [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
  };
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gc.push([origin + entry.startTime, entry.duration, KINDS[entry.detail?.kind] ?? String(entry.detail?.kind)]);
  }).observe({ entryTypes: ['gc'] });
  const EVERY_MS = 2;
  let last = now();
  const tick = () => {
    const at = now();
    const late = at - last - EVERY_MS;
    if (late > 4) stalls.push([at, late]);
    last = at;
    setTimeout(tick, EVERY_MS).unref();
  };
  setTimeout(tick, EVERY_MS).unref();
  // TIMELINE_ALLOCATIONS=1: a sampling profile of every allocation (collected ones too, unlike
  // --heap-prof's), written beside each dump as <pid>.<n>.heapprofile, restarted after each.
  const allocations = process.env.TIMELINE_ALLOCATIONS === '1' ? new Session() : undefined;
  let dumps = 0;
  const startSampling = () =>
    allocations?.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  if (allocations) {
    allocations.connect();
    allocations.post('HeapProfiler.enable');
    startSampling();
  }
  process.on('SIGUSR2', () => {
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `${process.pid}.json`);
    const n = (dumps += 1);
    allocations?.post('HeapProfiler.stopSampling', (error, result) => {
      if (!error) fs.writeFileSync(path.join(dir, `${process.pid}.${n}.heapprofile`), JSON.stringify(result.profile));
      startSampling();
    });
    fs.writeFileSync(`${file}.part`, JSON.stringify({ pid: process.pid, clock: [now(), Number(process.hrtime.bigint()) / 1e6], stalls: stalls.splice(0), gc: gc.splice(0) }));
    fs.renameSync(`${file}.part`, file);
  });
}
