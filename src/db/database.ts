import knexFactory, { type Knex } from 'knex';
import type { Config } from '../config/config.js';
import type { Logger } from '../logging/logger.js';
import { EmbeddedPostgres } from './embedded-postgres.js';
import { migrationSource } from './migrations/index.js';

export type { Knex };

export interface Database {
  knex: Knex;
  /** Connection URL, for components that keep their own pool (pg-boss). */
  url: string;
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
    pool: { min: 0, max: 10 },
    migrations: { migrationSource, tableName: 'knex_migrations' },
  });
  try {
    await knex.raw('select 1');
  } catch (error) {
    await knex.destroy();
    await embedded?.stop();
    throw new Error(`database unreachable: ${describeConnectionError(error)}`);
  }
  return {
    knex,
    url,
    async close() {
      await knex.destroy();
      await embedded?.stop();
    },
  };
}

/** A connection failure in one line, without the password of the URL. */
function describeConnectionError(error: unknown): string {
  const err = error as { code?: string; message?: string };
  return [err.code, err.message].filter(Boolean).join(' ').replace(/\/\/[^@/]*@/g, '//***@');
}

export async function migrateToLatest(knex: Knex): Promise<string[]> {
  const [, applied] = (await knex.migrate.latest()) as [number, string[]];
  return applied;
}

/** Ready: the database answers and every migration this build knows is applied. */
export async function isReady(knex: Knex): Promise<boolean> {
  try {
    const [, pending] = (await knex.migrate.list()) as [unknown[], unknown[]];
    return pending.length === 0;
  } catch {
    return false;
  }
}
