import type { Knex } from 'knex';
import { auditMigrations } from '../../audit/migrations.js';
import { ehrMigrations } from '../../ehr/migrations.js';
import { emdrMigrations } from '../../emdr/migrations.js';

/** What a migration may need beyond the database. */
export interface MigrationContext {
  /** The data key (resolveDataKey): asked for only by a migration that has secrets to encrypt. */
  dataKey(): Promise<Buffer>;
}

export interface Migration {
  up(knex: Knex, context: MigrationContext): Promise<void>;
  down(knex: Knex): Promise<void>;
}

export type NamedMigration = readonly [name: string, migration: Migration];

/**
 * Every migration; each domain keeps its tables in its own list, in order, with names prefixed by
 * the domain. Names are permanent once released: knex_migrations records them.
 */
const migrations: readonly NamedMigration[] = [...ehrMigrations, ...emdrMigrations, ...auditMigrations];

/** The migrations for knex, each given `context`; without one (listing only), a migration that asks for the key fails. */
export function migrationSource(context?: MigrationContext): Knex.MigrationSource<string> {
  const noKey: MigrationContext = {
    dataKey: () => Promise.reject(new Error('this migration needs the data key: run it with ehr-gateway migrate or serve')),
  };
  return {
    getMigrations: async () => migrations.map(([name]) => name),
    getMigrationName: (name) => name,
    getMigration: async (name) => {
      const migration = migrations.find(([candidate]) => candidate === name)![1];
      return { up: (knex: Knex) => migration.up(knex, context ?? noKey), down: (knex: Knex) => migration.down(knex) };
    },
  };
}
