/**
 * What a limit shared by all processes costs on the hot path (issue 21): one take of an allowance,
 * as the intake makes per request, measured on one PostgreSQL (embedded in a temporary directory,
 * or DATABASE_URL's server):
 *
 *   memory            rate-limiter-flexible's memory limiter (per process, what counting alone costs)
 *   postgres logged   its PostgreSQL store, one upsert per take, on an ordinary table (a WAL flush each)
 *   postgres          the same on the unlogged table of src/limits/migrations.ts (what the service uses)
 *   leased            SharedAllowance: leases of a twentieth of the allowance, takes served in memory
 *
 *   node --import tsx scripts/bench/limits-cost.ts [--takes N] [--concurrency C]
 *
 * Prints one JSON line per contender: takes per second, and the latency of a take (p50, p99), with
 * `concurrency` takes in flight on a pool of 10 connections.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { RateLimiterMemory, RateLimiterPostgres, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { loadConfig } from '../../src/config/config.js';
import { migrateToLatest, openDatabase } from '../../src/db/database.js';
import { SharedAllowance } from '../../src/limits/allowance.js';
import { COUNTERS_TABLE } from '../../src/limits/counters.js';
import { createLogger } from '../../src/logging/logger.js';
import { MIGRATIONS } from '../../src/migrations.js';
import { commandLine } from '../lib/command-line.js';
import { startDatabaseServer } from './lib/database.js';
import { drain } from './lib/drain.js';

const HELP = `usage: tsx scripts/bench/limits-cost.ts [--takes N] [--concurrency C]

What one take of a shared allowance costs (the intake makes one per request), on one PostgreSQL
(embedded, or DATABASE_URL's): rate-limiter-flexible in memory, on a logged and on the unlogged
table, and SharedAllowance's leases. One JSON line per contender: takes/s, p50 and p99 of a take.

options:
  --takes N        takes per contender (default 20000)
  --concurrency C  takes in flight (default 16)
  -h, --help       this text

example: tsx scripts/bench/limits-cost.ts --takes 5000 --concurrency 16`;

const { values } = commandLine('limits-cost', HELP, { options: { takes: { type: 'string' }, concurrency: { type: 'string' } } });
const TAKES = Number(values.takes ?? 20_000);
const CONCURRENCY = Number(values.concurrency ?? 16);
/** Keys spread like clinics: many, so that no single row is the point of contention. */
const KEYS = 200;

const server = await startDatabaseServer();
const databaseUrl = await server.freshDatabase('limits_cost');
const database = await openDatabase(
  loadConfig({ DATABASE_URL: databaseUrl, DATA_KEY: randomBytes(32).toString('hex') }),
  createLogger('warn', process.stderr),
  { adopt: false },
);
await migrateToLatest(database, MIGRATIONS);
await database.close();
const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
await pool.query(`create table logged_counters (like ${COUNTERS_TABLE} including all)`);

async function measure(name: string, take: (key: string) => Promise<unknown>): Promise<void> {
  const latencies: number[] = [];
  const started = performance.now();
  await drain(TAKES, CONCURRENCY, async (index) => {
    const at = performance.now();
    await take(`k${index % KEYS}`);
    latencies.push(performance.now() - at);
  });
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (p: number) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]! * 1000) / 1000;
  console.log(
    JSON.stringify({ contender: name, takes: TAKES, concurrency: CONCURRENCY, takesPerSecond: Math.round(TAKES / seconds), p50Ms: at(50), p99Ms: at(99) }),
  );
}

const allowance = { points: 1_000_000, duration: 60 };
const consumeWith = (limiter: RateLimiterAbstract) => (key: string) => limiter.consume(key, 1);
try {
  await measure('memory', consumeWith(new RateLimiterMemory({ ...allowance, keyPrefix: 'm' })));
  await measure(
    'postgres logged',
    consumeWith(
      new RateLimiterPostgres({
        ...allowance,
        keyPrefix: 'l',
        storeClient: pool,
        storeType: 'pool',
        tableName: 'logged_counters',
        tableCreated: true,
        clearExpiredByTimeout: false,
      }),
    ),
  );
  await measure(
    'postgres',
    consumeWith(
      new RateLimiterPostgres({
        ...allowance,
        keyPrefix: 'u',
        storeClient: pool,
        storeType: 'pool',
        tableName: COUNTERS_TABLE,
        tableCreated: true,
        clearExpiredByTimeout: false,
      }),
    ),
  );
  // RATE_LIMIT's default allowance (600 a minute): leases of 30.
  const leased = new SharedAllowance({ pool }, { name: 'leased', perWindow: 600, windowMs: 60_000 });
  await measure('leased (600 a minute, leases of 30)', (key) => leased.take(key, 1));
} finally {
  await pool.end();
  await server.stop();
}
