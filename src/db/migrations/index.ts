import type { Knex } from 'knex';

interface Migration {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

/**
 * Every migration, in order; each domain keeps its tables in its own migration modules.
 * Names are permanent once released: knex_migrations records them.
 */
const migrations: ReadonlyArray<readonly [string, Migration]> = [];

export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => migrations.map(([name]) => name),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations.find(([candidate]) => candidate === name)![1],
};
