import type { NamedMigration } from '../db/migrations/index.js';
import { LIMITS_TABLE, RELEASES_TABLE } from './credentials/failure-limit-sql.js';

/** Interface A's tables, in order. */
export const ehrMigrations: readonly NamedMigration[] = [
  [
    'ehr_001_patients',
    {
      // The built-in patient source (the МИС): filled by `patients import` and `seed-demo`.
      async up(knex) {
        await knex.schema.createTable('ehr_patients', (table) => {
          table.text('id').primary();
          table.text('surname').notNullable();
          table.text('name').notNullable();
          table.text('middle_name');
          table.date('birth_date').notNullable();
          table.smallint('gender').notNullable();
          table.text('phone');
          table.text('email');
          table.text('snils');
          table.text('medcard_number');
          table.boolean('active').notNullable().defaultTo(true);
          // Matching keys, normalized on write (trimmed, lower case, ё → е; phone as E.164).
          table.text('surname_key').notNullable();
          table.text('name_key').notNullable();
          table.text('medcard_key');
          table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
          table.index(['surname_key', 'name_key', 'birth_date'], 'ehr_patients_match');
        });
      },
      async down(knex) {
        await knex.schema.dropTable('ehr_patients');
      },
    },
  ],
  [
    'ehr_002_sessions',
    {
      async up(knex) {
        // The correspondence table: end user → internalUserId (patient), with the user's user_sign, encrypted.
        await knex.schema.createTable('ehr_user_links', (table) => {
          table.text('user_id').primary();
          // No foreign key: the patient source may be a remote МИС rather than ehr_patients.
          table.text('patient_id').notNullable();
          table.binary('user_sign_sealed').notNullable();
          table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        });
        // Session tokens, unique across the system for good (expired rows stay so a token is never reused).
        await knex.schema.createTable('ehr_sessions', (table) => {
          table.binary('token_hash').primary();
          table.text('user_id').notNullable().references('user_id').inTable('ehr_user_links').onDelete('CASCADE');
          table.timestamp('expires_at', { useTz: true }).notNullable();
          table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
          table.index(['user_id'], 'ehr_sessions_user');
        });
        await knex.schema.createTable('ehr_exchange_tokens', (table) => {
          table.binary('token_hash').primary();
          table.text('user_id').notNullable();
          table.binary('session_token_hash').notNullable();
          table.timestamp('session_expires_at', { useTz: true }).notNullable();
          table.timestamp('expires_at', { useTz: true }).notNullable();
          table.integer('failed_attempts').notNullable().defaultTo(0);
          table.text('state').notNullable().defaultTo('pending');
          table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        });
        await knex.raw(`alter table ehr_exchange_tokens add constraint ehr_exchange_tokens_state check (state in ('pending', 'used', 'burned'))`);
      },
      async down(knex) {
        await knex.schema.dropTable('ehr_exchange_tokens');
        await knex.schema.dropTable('ehr_sessions');
        await knex.schema.dropTable('ehr_user_links');
      },
    },
  ],
  [
    'ehr_003_gender_peer_enum',
    {
      // The peer SDK's Gender enum is 1 male, 2 female, 3 other, 4 unknown; rows were written as 0..3.
      async up(knex) {
        await knex.raw('update ehr_patients set gender = gender + 1');
        await knex.raw('alter table ehr_patients add constraint ehr_patients_gender check (gender between 1 and 4)');
      },
      async down(knex) {
        await knex.raw('alter table ehr_patients drop constraint ehr_patients_gender');
        await knex.raw('update ehr_patients set gender = gender - 1');
      },
    },
  ],
  [
    'ehr_004_exchange_token_phone',
    {
      // The phone the authorization server verified (E.164), when it sent one: authenticate must name the same.
      async up(knex) {
        await knex.schema.alterTable('ehr_exchange_tokens', (table) => {
          table.text('phone');
        });
      },
      async down(knex) {
        await knex.schema.alterTable('ehr_exchange_tokens', (table) => {
          table.dropColumn('phone');
        });
      },
    },
  ],
  [
    'ehr_005_spent_exchange_tokens',
    {
      // RETENTION empties an expired exchange token's row but keeps its hash ('spent'): the
      // authorization server's credential for a token covers the token only, not its authInfo, so
      // a captured save_exchange_token call could otherwise store the same token again once its
      // row was gone. A spent row holds the 32-byte hash and timestamps, nothing about the user.
      async up(knex) {
        await knex.raw(`
          alter table ehr_exchange_tokens
            alter column user_id drop not null,
            alter column session_token_hash drop not null,
            alter column session_expires_at drop not null,
            drop constraint ehr_exchange_tokens_state,
            add constraint ehr_exchange_tokens_state check (state in ('pending', 'used', 'burned', 'spent')),
            add constraint ehr_exchange_tokens_spent_empty check (
              state = 'spent' or (user_id is not null and session_token_hash is not null and session_expires_at is not null));
          create index ehr_exchange_tokens_unspent_expiry on ehr_exchange_tokens (expires_at) where state <> 'spent';
          create index ehr_sessions_expiry on ehr_sessions (expires_at);
        `);
      },
      async down(knex) {
        await knex.raw(`
          drop index ehr_sessions_expiry;
          drop index ehr_exchange_tokens_unspent_expiry;
          delete from ehr_exchange_tokens where state = 'spent';
          alter table ehr_exchange_tokens
            drop constraint ehr_exchange_tokens_spent_empty,
            drop constraint ehr_exchange_tokens_state,
            add constraint ehr_exchange_tokens_state check (state in ('pending', 'used', 'burned')),
            alter column user_id set not null,
            alter column session_token_hash set not null,
            alter column session_expires_at set not null;
        `);
      },
    },
  ],
  [
    'ehr_006_api_keys',
    {
      // Back-office api keys of the medical record (src/ehr/credentials/api-keys.ts): SHA-256 of the key only.
      async up(knex) {
        await knex.raw(`
          create table ehr_api_keys (
            id bigint generated always as identity primary key,
            name text not null default '',
            key_hash bytea not null unique,
            organizations text[] not null,
            created_at timestamptz not null default now(),
            revoked_at timestamptz
          );
        `);
      },
      async down(knex) {
        await knex.raw('drop table ehr_api_keys');
      },
    },
  ],
  [
    'ehr_007_internal_auth_limits',
    {
      // The internal failure limit (src/ehr/credentials/failure-limit-sql.ts), out of the shared counters so that
      // save_auth_info reserves room in its link query and gives it back in its session insert. Unlogged: a count is
      // not worth a WAL flush, and a crash of PostgreSQL forgets at most the current windows.
      async up(knex) {
        await knex.raw(`
          create unlogged table ${LIMITS_TABLE} (
            -- the internal account (null: an unknown name) and the client address, as JSON
            key text primary key,
            failures integer not null default 0,
            -- the end of the failures' window, counted from its first failure
            failures_until timestamptz,
            -- places taken to judge calls (less the failures' given back) in period judging_period and in the one
            -- before it; less the releases counted in ehr_internal_auth_releases, the calls being judged
            judging integer not null default 0,
            judging_before integer not null default 0,
            judging_period bigint not null,
            -- the transaction the last room went to (txid_current())
            granted_to bigint
          );
          -- right credentials' rooms given back, per key, period and database connection (pg_backend_pid())
          create unlogged table ${RELEASES_TABLE} (
            key text not null,
            period bigint not null,
            backend integer not null,
            released integer not null,
            primary key (key, period, backend)
          );
        `);
      },
      async down(knex) {
        await knex.raw(`drop table ${RELEASES_TABLE}; drop table ${LIMITS_TABLE}`);
      },
    },
  ],
];
