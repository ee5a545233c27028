import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import type { Config } from '../config/config.js';
import type { Logger } from '../logging/logger.js';
import { EmbeddedPostgres } from './embedded-postgres.js';
import { resolveDataKey } from './encryption.js';
import { migrationSource, type NamedMigration } from './migrations/index.js';
import { Sql } from './sql.js';

export type { Knex };

const MIGRATIONS_TABLE = 'knex_migrations';

export interface Database {
  /** Migrations and the CLI's bulk writes. */
  knex: Knex;
  /** Everything on a request or worker path: node-postgres, named prepared statements. */
  sql: Sql;
  /** Connection URL, for components that keep their own pool (pg-boss). */
  url: string;
  /** The key of the secrets stored in this database (resolveDataKey), resolved at the first call. */
  dataKey(): Promise<Buffer>;
  close(): Promise<void>;
}

/**
 * Opens the database of the config: DATABASE_URL, or the embedded PostgreSQL under DATA_DIR.
 * `adopt` is for `serve`: it takes over stopping an embedded cluster whose owner is gone.
 */
export async function openDatabase(config: Config, logger: Logger, options: { adopt: boolean }): Promise<Database> {
  const embedded = config.databaseUrl ? undefined : new EmbeddedPostgres(config.dataDir, logger);
  const url = config.databaseUrl ?? (await embedded!.start(options));
  const knex = knexFactory({
    client: 'pg',
    connection: { connectionString: url, connectionTimeoutMillis: 10_000 },
    // Migrations, /readyz and the CLI only: the runtime's queries go through `pool` (DATABASE_POOL_SIZE).
    pool: { min: 0, max: 2 },
    log: knexLog(logger),
  });
  // A connection once opened is kept (idleTimeoutMillis 0; node-postgres closes one idle for 10 s by
  // default): else the next burst of calls waits for new ones (a backend started, a SCRAM exchange,
  // each named statement prepared again), and every call back sets a timer to time it out. Kept
  // connections stay within DATABASE_POOL_SIZE, the README's connection budget.
  const pool = new pg.Pool({ connectionString: url, connectionTimeoutMillis: 10_000, max: config.databasePoolSize, idleTimeoutMillis: 0 });
  // An idle connection that the server drops (a restart, an outage) must not crash the process; the next query reconnects.
  pool.on('error', (error) => logger.warn({ code: (error as { code?: unknown }).code }, 'database connection lost'));
  try {
    await knex.raw('select 1');
  } catch (error) {
    await knex.destroy();
    await pool.end();
    await embedded?.stop();
    throw new Error(`database unreachable: ${describeConnectionError(error)}`);
  }
  let dataKey: Promise<Buffer> | undefined;
  return {
    knex,
    sql: new Sql(pool),
    url,
    dataKey: () => (dataKey ??= resolveDataKey(config)),
    async close() {
      await knex.destroy();
      await pool.end();
      await embedded?.stop();
    },
  };
}

/**
 * knex's own messages as JSON log lines (by default it console.logs plain text, with stacks). A
 * lost or refused connection is logged without the driver's text.
 */
function knexLog(logger: Logger): Knex.Config['log'] {
  const log = (level: 'warn' | 'error' | 'debug') => (message: unknown) => {
    const text = typeof message === 'string' ? message : '';
    if (/^(Connection Error|Acquire connection error)/.test(text)) logger[level]({ source: 'knex' }, 'database connection error');
    else logger[level]({ source: 'knex' }, text.split('\n')[0] || 'knex message');
  };
  return {
    warn: log('warn'),
    error: log('error'),
    deprecate: (method: string, alternative: string) => logger.warn({ source: 'knex' }, `${method} is deprecated, use ${alternative}`),
    debug: log('debug'),
  };
}

/** Seconds a client is told to wait (Retry-After, retryAfter) when the database is unavailable. */
export const RETRY_AFTER_SECONDS = 5;

/** Node and PostgreSQL error codes of a database that is unreachable, starting, stopping or full. */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  '57P01',
  '57P02',
  '57P03',
  '53300',
]);

/**
 * Whether an error says the database cannot be reached right now (down, restarting, out of
 * connections) rather than that the request was wrong: the answer is "retry later", not a refusal.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  const err = error as { code?: unknown; name?: unknown; message?: unknown } | null;
  if (typeof err !== 'object' || err === null) return false;
  if (typeof err.code === 'string' && (UNAVAILABLE_CODES.has(err.code) || err.code.startsWith('08'))) return true;
  if (err.name === 'KnexTimeoutError') return true;
  return typeof err.message === 'string' && /^(Connection terminated|Connection ended unexpectedly|timeout exceeded when trying to connect)/.test(err.message);
}

/** A connection failure in one line, without the password of the URL. */
function describeConnectionError(error: unknown): string {
  const err = error as { code?: string; message?: string };
  return [err.code, err.message]
    .filter(Boolean)
    .join(' ')
    .replace(/\/\/[^@/]*@/g, '//***@');
}

export async function migrateToLatest(database: Pick<Database, 'knex' | 'dataKey'>, migrations: readonly NamedMigration[]): Promise<string[]> {
  const [, applied] = (await database.knex.migrate.latest({
    migrationSource: migrationSource(migrations, { dataKey: database.dataKey }),
    tableName: MIGRATIONS_TABLE,
  })) as [number, string[]];
  return applied;
}

/** Ready: the database answers and every migration this build knows is applied. */
export async function isReady(knex: Knex, migrations: readonly NamedMigration[]): Promise<boolean> {
  try {
    const [, pending] = (await knex.migrate.list({ migrationSource: migrationSource(migrations), tableName: MIGRATIONS_TABLE })) as [unknown[], unknown[]];
    return pending.length === 0;
  } catch {
    return false;
  }
}
