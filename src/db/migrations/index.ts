import type { Knex } from 'knex';
import { ehrMigrations } from '../../ehr/migrations.js';
import { emdrMigrations } from '../../emdr/migrations.js';

export interface Migration {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

export type NamedMigration = readonly [name: string, migration: Migration];

/**
 * Every migration; each domain keeps its tables in its own list, in order, with names prefixed by
 * the domain. Names are permanent once released: knex_migrations records them.
 */
const migrations: readonly NamedMigration[] = [...ehrMigrations, ...emdrMigrations];

export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => migrations.map(([name]) => name),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations.find(([candidate]) => candidate === name)![1],
};
