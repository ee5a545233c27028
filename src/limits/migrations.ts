import type { NamedMigration } from '../db/migrations/index.js';
import { COUNTERS_TABLE } from './counters.js';

/** The shared counters' table (counters.ts), in rate-limiter-flexible's layout for PostgreSQL. */
export const limitsMigrations: readonly NamedMigration[] = [
  [
    'limits_0001_counters',
    {
      async up(knex) {
        await knex.raw(`
          -- Points per key and window, shared by every process: RATE_LIMIT, BYTE_QUOTA and RPC_RATE_LIMIT
          -- (src/limits/counters.ts). Unlogged: no WAL flush per count, and a crash of
          -- PostgreSQL forgets at most the current windows.
          create unlogged table ${COUNTERS_TABLE} (
            key varchar(255) primary key,
            points integer not null default 0,
            -- end of the key's window, epoch milliseconds
            expire bigint
          );
        `);
      },
      async down(knex) {
        await knex.raw(`drop table ${COUNTERS_TABLE}`);
      },
    },
  ],
];
