import { auditMigrations } from './audit/migrations.js';
import type { NamedMigration } from './db/migrations/index.js';
import { ehrMigrations } from './ehr/migrations.js';
import { accountMigrations } from './emdr/accounts/migrations.js';
import { emdrMigrations } from './emdr/migrations.js';
import { limitsMigrations } from './limits/migrations.js';
import { recordMigrations } from './record/migrations.js';

/**
 * Every migration, assembled here above the domains; each domain keeps its tables in its own list,
 * in order, with names prefixed by the domain. Names are permanent once released: knex_migrations
 * records them.
 */
export const MIGRATIONS: readonly NamedMigration[] = [
  ...ehrMigrations,
  ...emdrMigrations,
  ...auditMigrations,
  ...accountMigrations,
  ...limitsMigrations,
  ...recordMigrations,
];
