/**
 * What a process of each role holds once started and idle: `serve --only ehr|emdr|worker` and
 * `serve` of one or two checkouts, each started in turn on a fresh database of one PostgreSQL,
 * read after it has been ready for a few seconds: resident memory (VmRSS), the JavaScript heap in
 * use after a full collection (its /metrics), and how long it took to be ready. The roles scale out as separate processes
 * (deploy/, the chart): what a role loads but never runs is memory and start time of each of them.
 *
 *   node --import tsx scripts/bench/role-memory.ts [--before ROOT] [--starts N]
 */
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { commandLine } from '../lib/command-line.js';
import { startDatabaseServer } from './lib/database.js';
import { rssMiB, startServe } from './lib/processes.js';
import { median } from './lib/scenario.js';
import { newDataKey, serviceMetrics } from './lib/service.js';

const HELP = `usage: tsx scripts/bench/role-memory.ts [options]

Resident memory, heap in use (after a full collection) and time to ready of serve --only
ehr|emdr|worker and of serve, each started on a fresh database and read after it has been idle
for a few seconds; medians of --starts starts, alternating between the checkouts. Run make build first (serve runs compiled
when dist/ is current, else from its sources with tsx). Hold the bench lock while it runs.

options:
  --before ROOT  an older checkout to measure too (built with make build), e.g. a git worktree
  --starts N     starts of each role and checkout (default 3)
  -h, --help     this text`;

const ROLES = ['ehr', 'emdr', 'worker', undefined] as const;
/** Idle this long after ready before reading. */
const SETTLE_MS = 3000;
/**
 * The heap in use right after a start says more about when V8 last collected than about what the
 * process keeps: serve runs with a full collection on SIGUSR2 (a preload of this script's), sent
 * before the heap is read.
 */
const COLLECT_ON_SIGNAL = ['--expose-gc', '--import', `data:text/javascript,process.on('SIGUSR2', () => globalThis.gc())`];

interface Reading {
  rssMiB: number;
  heapMiB: number;
  readyMs: number;
}

async function heapUsedMiB(internalPort: number): Promise<number> {
  const bytes = (await serviceMetrics(internalPort)).value('nodejs_heap_size_used_bytes');
  if (Number.isNaN(bytes)) throw new Error('no nodejs_heap_size_used_bytes in /metrics');
  return bytes / 2 ** 20;
}

async function readRole(root: string, only: string | undefined, databaseUrl: string): Promise<Reading> {
  const started = performance.now();
  const serve = await startServe(root, { DATABASE_URL: databaseUrl, DATA_KEY: newDataKey() }, { nodeOptions: COLLECT_ON_SIGNAL, ...(only ? { only } : {}) });
  const readyMs = performance.now() - started;
  try {
    await sleep(SETTLE_MS);
    const resident = await rssMiB(serve.pid, 'VmRSS');
    process.kill(serve.pid, 'SIGUSR2');
    await sleep(500);
    return { rssMiB: resident, heapMiB: await heapUsedMiB(serve.internalPort), readyMs };
  } finally {
    await serve.stop();
  }
}

async function main(): Promise<void> {
  const { values } = commandLine('role-memory', HELP, { options: { before: { type: 'string' }, starts: { type: 'string', default: '3' } } });
  const starts = Number(values.starts);
  if (!Number.isInteger(starts) || starts < 1) throw new Error(`--starts must be a whole number of at least 1, not ${values.starts}`);
  const roots = { ...(values.before ? { before: path.resolve(values.before) } : {}), after: process.cwd() };
  const database = await startDatabaseServer();
  const readings = new Map<string, Reading[]>();
  const startLoad = os.loadavg()[0]!;
  try {
    for (let start = 0; start < starts; start += 1) {
      for (const only of ROLES) {
        for (const [label, root] of Object.entries(roots)) {
          const key = `${only ?? 'all roles'}|${label}`;
          const reading = await readRole(root, only, await database.freshDatabase('bench_roles'));
          readings.set(key, [...(readings.get(key) ?? []), reading]);
        }
      }
    }
  } finally {
    await database.stop();
  }
  const labels = Object.keys(roots);
  console.log(`| serve | ${labels.map((label) => `${label}: VmRSS MiB | heap MiB | ready ms`).join(' | ')} |`);
  console.log(`|---|${labels.map(() => '---|---|---').join('|')}|`);
  for (const only of ROLES) {
    const cells = labels.map((label) => {
      const all = readings.get(`${only ?? 'all roles'}|${label}`)!;
      const of = (pick: (reading: Reading) => number) => Math.round(median(all.map(pick)) * 10) / 10;
      return `${of((reading) => reading.rssMiB)} | ${of((reading) => reading.heapMiB)} | ${Math.round(median(all.map((reading) => reading.readyMs)))}`;
    });
    console.log(`| ${only ? `--only ${only}` : 'all roles'} | ${cells.join(' | ')} |`);
  }
  console.log(`medians of ${starts} starts; load average (1 min) ${startLoad.toFixed(2)} at the start, ${os.loadavg()[0]!.toFixed(2)} at the end`);
}

await main();
