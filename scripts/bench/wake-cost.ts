/**
 * What one wake-up of a Node.js process costs on this machine, at a paced rate and flat out (issue
 * 24, item 4: at a steady 10 documents/s the pipeline's CPU per document is 3x its full-load
 * figure). The same work is done at 10, 100 and 1,000 a second, each after a timer, and then back
 * to back; CPU time of this process (all its threads, process.cpuUsage) per operation:
 *   - a timer alone: the event loop sleeps and wakes;
 *   - a trivial prepared statement on PostgreSQL (the bench's embedded one, or DATABASE_URL's):
 *     the loop wakes on the timer, sends, sleeps, and wakes again on the answer.
 * The pipeline's processes do a few of these per document at a steady rate, and many documents per
 * wake-up under load: if one wake-up costs several times more when the process slept before it,
 * their CPU per document at a steady rate follows from their round trips, whatever the code does.
 *
 *   node --import tsx scripts/bench/wake-cost.ts [--seconds N] [--json FILE]
 *
 * Hold the bench lock while it runs (docs/benchmarks.md: one measurement at a time).
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { commandLine } from '../lib/command-line.js';
import { startDatabaseServer } from './lib/database.js';
import { drain } from './lib/drain.js';

const HELP = `usage: tsx scripts/bench/wake-cost.ts [options]

CPU time of this process per wake-up: a timer alone, and a trivial prepared statement on
PostgreSQL, at 10, 100 and 1,000 a second and back to back. Hold the bench lock while it runs.

options:
  --seconds N   seconds at each paced rate (default 10)
  --json FILE   the figures as JSON into FILE too
  -h, --help    this text

example: tsx scripts/bench/wake-cost.ts --seconds 5`;

const RATES = [10, 100, 1000];
/** One operation: its promise (awaited) or nothing. */
type Operation = () => unknown;
/** Operations back to back, and how many at once (a busy process: each wake-up finds work waiting). */
const FLAT_OUT_OPERATIONS = 20_000;
const FLAT_OUT_CONCURRENCY = 8;

/** CPU µs of this process per operation, `count` operations of `work` at `rate` a second, each after a timer. */
async function paced(rate: number, seconds: number, work: Operation): Promise<number> {
  const count = rate * seconds;
  const before = process.cpuUsage();
  const started = performance.now();
  const pending: unknown[] = [];
  for (let index = 0; index < count; index += 1) {
    const due = started + (index * 1000) / rate - performance.now();
    if (due > 0) await sleep(due);
    pending.push(work());
  }
  await Promise.all(pending);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / count;
}

/** CPU µs of this process per operation, `count` operations of `work` back to back, FLAT_OUT_CONCURRENCY at once. */
async function flatOut(count: number, work: Operation): Promise<number> {
  const before = process.cpuUsage();
  await drain(count, FLAT_OUT_CONCURRENCY, work);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / count;
}

async function measure(name: string, seconds: number, work: Operation): Promise<Record<string, number>> {
  // Warmed up back to back first, so the code is compiled before the paced rounds.
  await flatOut(FLAT_OUT_OPERATIONS, work);
  const figures: Record<string, number> = {};
  for (const rate of RATES) figures[`${rate}/s`] = await paced(rate, rate === RATES[0] ? seconds * 2 : seconds, work);
  figures['back to back'] = await flatOut(FLAT_OUT_OPERATIONS, work);
  console.error(`wake-cost: ${name} done (load ${os.loadavg()[0]!.toFixed(2)})`);
  return figures;
}

async function main(): Promise<void> {
  const { values } = commandLine('wake-cost', HELP, {
    options: { seconds: { type: 'string', default: '10' }, json: { type: 'string' } },
  });
  const seconds = Number(values.seconds);
  if (!(seconds > 0)) throw new Error(`--seconds must be a positive number, not ${values.seconds}`);
  const database = await startDatabaseServer();
  const result: Record<string, unknown> = { startLoad: os.loadavg()[0] };
  try {
    const pool = new pg.Pool({ connectionString: await database.freshDatabase('bench_wake'), max: FLAT_OUT_CONCURRENCY });
    try {
      result['a timer alone'] = await measure('a timer alone', seconds, () => undefined);
      result['a trivial prepared statement'] = await measure('a statement', seconds, () =>
        pool.query({ name: 'wake_cost', text: 'select $1::int as one', values: [1] }),
      );
    } finally {
      await pool.end();
    }
  } finally {
    await database.stop();
  }
  result.endLoad = os.loadavg()[0];
  const rows = Object.entries(result).filter((entry): entry is [string, Record<string, number>] => typeof entry[1] === 'object');
  const columns = [...RATES.map((rate) => `${rate}/s`), 'back to back'];
  console.log(`| CPU µs per operation | ${columns.join(' | ')} |`);
  console.log(`|---|${columns.map(() => '---').join('|')}|`);
  for (const [name, figures] of rows) console.log(`| ${name} | ${columns.map((column) => figures[column]!.toFixed(1)).join(' | ')} |`);
  console.log(`load average (1 min): ${result.startLoad} at the start, ${result.endLoad} at the end`);
  if (values.json) await fs.writeFile(values.json, `${JSON.stringify(result, null, 2)}\n`);
}

await main();
