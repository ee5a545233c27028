import type { NamedMigration } from '../db/migrations/index.js';

/** Interface B's and the callback delivery's tables, in order. */
export const emdrMigrations: readonly NamedMigration[] = [];
