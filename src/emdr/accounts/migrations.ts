import type { NamedMigration } from '../../db/migrations/index.js';

/** What the operator's commands on clinic accounts keep (accounts/): disabling, and the rotations' overlaps. */
export const accountMigrations: readonly NamedMigration[] = [
  [
    'emdr_accounts_0001_disable_and_rotation',
    {
      async up(knex) {
        await knex.raw(`
          alter table emdr_clients
            add column disabled_at timestamptz,
            add column previous_token_hash bytea,
            add column previous_token_expires_at timestamptz,
            add column signing_secret_next_sealed bytea,
            add column signing_overlap_ends_at timestamptz,
            add constraint emdr_clients_previous_token check ((previous_token_hash is null) = (previous_token_expires_at is null)),
            add constraint emdr_clients_signing_overlap check ((signing_secret_next_sealed is null) = (signing_overlap_ends_at is null));
          comment on column emdr_clients.disabled_at is 'set by clients disable: the account is refused (401) until clients enable';
          comment on column emdr_clients.previous_token_hash is 'sha256 of the token before clients rotate-token, accepted until previous_token_expires_at';
          comment on column emdr_clients.signing_secret_next_sealed is 'the signing secret alone, sealed like signing_secret_sealed (which holds it and the previous one during the overlap); moved there at signing_overlap_ends_at';
        `);
      },
      async down(knex) {
        await knex.raw(`
          alter table emdr_clients
            drop column disabled_at, drop column previous_token_hash, drop column previous_token_expires_at,
            drop column signing_secret_next_sealed, drop column signing_overlap_ends_at`);
      },
    },
  ],
];
