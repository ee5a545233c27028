import type { NamedMigration } from '../db/migrations/index.js';

/** Interface A's tables, in order. */
export const ehrMigrations: readonly NamedMigration[] = [];
