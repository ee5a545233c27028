import type { Knex } from 'knex';

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
 * `migrations` (the list src/migrations.ts assembles) for knex, each given `context`; without one
 * (listing only), a migration that asks for the key fails.
 */
export function migrationSource(migrations: readonly NamedMigration[], context?: MigrationContext): Knex.MigrationSource<string> {
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
