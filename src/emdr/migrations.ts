import type { NamedMigration } from '../db/migrations/index.js';
import { sealClinicSecret } from './accounts/clients.js';

/** emdr_callbacks.origin made again with `pattern` (the callback URL's scheme, host and port; a generated column changes only so), with its index. */
function remakeCallbackOrigin(pattern: string): string {
  return `
    drop index emdr_callbacks_due;
    alter table emdr_callbacks drop column origin,
      add column origin text not null generated always as (coalesce(lower(substring(url from '${pattern}')), url)) stored;
    create index emdr_callbacks_due on emdr_callbacks (origin, available_at) where state = 'pending';
  `;
}

/** Interface B's and the callback delivery's tables, in order. */
export const emdrMigrations: readonly NamedMigration[] = [
  [
    'emdr_0001_clients_requests_callbacks_registry',
    {
      async up(knex) {
        await knex.raw(`
          create table emdr_clients (
            id bigserial primary key,
            business_id text not null,
            user_name text not null,
            -- sha256 of the access token; the token itself is shown once by "clients add"
            token_hash bytea not null,
            -- null: the account may act for any organization
            organizations text[],
            callback_urls text[] not null check (cardinality(callback_urls) > 0),
            -- what the gateway presents to the clinic on callbacks; kept in clear because it is sent
            callback_user text not null,
            callback_token text not null,
            signing_secret text not null,
            created_at timestamptz not null default now(),
            unique (business_id, user_name)
          );

          create table emdr_requests (
            queue_message_id uuid primary key,
            client_id bigint not null references emdr_clients(id),
            operation text not null check (operation in ('RegisterDocument', 'DemandContent')),
            -- localUid or clientMessageId: with body_hash, the identical retry hits the unique key
            idempotency_key uuid,
            body_hash text not null,
            state text not null check (state in ('received', 'rejected', 'accepted', 'completed', 'failed')),
            callback_url text not null,
            local_uid uuid,
            client_message_id uuid,
            emdr_id text,
            -- the request fields other than the document, signatures and callbackUrl
            metadata jsonb not null,
            -- RegisterDocument: the submitted files; DemandContent: the files from the archive
            document bytea,
            signature bytea,
            personal_signatures jsonb,
            intake_errors jsonb,
            errors jsonb,
            created_at timestamptz not null default clock_timestamp(),
            updated_at timestamptz not null default clock_timestamp(),
            unique (client_id, operation, idempotency_key, body_hash)
          );
          create index emdr_requests_local_uid on emdr_requests (client_id, local_uid) where local_uid is not null;

          create table emdr_callbacks (
            -- the Standard Webhooks webhook-id: the same on every attempt
            id text primary key,
            queue_message_id uuid not null references emdr_requests(queue_message_id),
            name text not null,
            sequence smallint not null check (sequence in (1, 2)),
            url text not null,
            payload jsonb not null,
            state text not null check (state in ('waiting', 'pending', 'delivered', 'failed')),
            -- attempts in the current round of the retry schedule (a replay starts a new round)
            round_attempts integer not null default 0,
            last_error text,
            delivered_at timestamptz,
            created_at timestamptz not null default clock_timestamp(),
            unique (queue_message_id, sequence)
          );

          create table emdr_callback_attempts (
            id bigserial primary key,
            callback_id text not null references emdr_callbacks(id),
            attempt integer not null,
            at timestamptz not null,
            http_status integer,
            error text,
            unique (callback_id, attempt)
          );

          create sequence emdr_registry_number;
          create table emdr_registry_documents (
            emdr_id text primary key,
            -- the gateway request that registered it: registering twice for one request returns the first result
            request_key text not null unique,
            local_uid uuid not null,
            kind text not null,
            organization text not null,
            patient_snils text not null,
            document_number text,
            creation_date_time timestamptz not null,
            registration_date_time timestamptz not null,
            version integer not null,
            replaces text references emdr_registry_documents(emdr_id),
            superseded_by text references emdr_registry_documents(emdr_id),
            file_name text not null,
            content bytea not null,
            signature bytea not null,
            personal_signatures jsonb,
            unique (organization, local_uid)
          );
          create index emdr_registry_documents_snils on emdr_registry_documents (patient_snils);
        `);
      },
      async down(knex) {
        await knex.raw(`
          drop table emdr_registry_documents;
          drop sequence emdr_registry_number;
          drop table emdr_callback_attempts;
          drop table emdr_callbacks;
          drop table emdr_requests;
          drop table emdr_clients;
        `);
      },
    },
  ],
  [
    'emdr_0002_sealed_clinic_secrets',
    {
      // The callback token and signing secret were kept in clear; now sealed with the data key (clients.ts).
      async up(knex, context) {
        await knex.raw(`alter table emdr_clients add column callback_token_sealed bytea, add column signing_secret_sealed bytea`);
        const clear = await knex('emdr_clients').select('id', 'business_id', 'user_name', 'callback_token', 'signing_secret');
        const key = clear.length > 0 ? await context.dataKey() : undefined;
        for (const row of clear) {
          await knex('emdr_clients')
            .where({ id: row.id })
            .update({
              callback_token_sealed: sealClinicSecret(key!, 'callback_token', row.business_id, row.user_name, row.callback_token),
              signing_secret_sealed: sealClinicSecret(key!, 'signing_secret', row.business_id, row.user_name, row.signing_secret),
            });
        }
        await knex.raw(`
          alter table emdr_clients
            drop column callback_token,
            drop column signing_secret,
            alter column callback_token_sealed set not null,
            alter column signing_secret_sealed set not null;
          comment on column emdr_clients.callback_token_sealed is 'AES-256-GCM under the data key (DATA_KEY), see src/emdr/clients.ts';
          comment on column emdr_clients.signing_secret_sealed is 'AES-256-GCM under the data key (DATA_KEY), see src/emdr/clients.ts';
        `);
      },
      async down() {
        throw new Error('emdr_0002_sealed_clinic_secrets cannot be undone: the secrets are not to be written in clear again');
      },
    },
  ],
  [
    'emdr_0003_document_disclosures',
    {
      async up(knex) {
        await knex.raw(`
          -- Deliveries of a document to a clinic account that does not list its organization (access.ts).
          -- No personal data; kept when the request itself is purged after RETENTION.
          create table emdr_document_disclosures (
            id bigserial primary key,
            client_id bigint not null references emdr_clients(id),
            -- the DemandContent request (no foreign key: request rows are purged, this record stays)
            queue_message_id uuid not null,
            -- the emdrId demanded, and the version delivered (its current version)
            emdr_id text not null,
            delivered_emdr_id text not null,
            organization text not null,
            basis text not null check (basis in ('patient', 'all-organizations')),
            at timestamptz not null default clock_timestamp()
          );
          create index emdr_document_disclosures_client on emdr_document_disclosures (client_id, at);
        `);
      },
      async down(knex) {
        await knex.raw('drop table emdr_document_disclosures');
      },
    },
  ],
  [
    'emdr_0004_retention',
    {
      async up(knex) {
        // The purge looks for ended requests by their last change (retention.ts).
        await knex.raw(`create index emdr_requests_ended on emdr_requests (updated_at) where state in ('rejected', 'completed', 'failed')`);
      },
      async down(knex) {
        await knex.raw('drop index emdr_requests_ended');
      },
    },
  ],
  [
    'emdr_0005_work_rows',
    {
      // The pipeline's rows are its own queue (src/work/stage.ts, src/emdr/pipeline/): available_at is
      // when a row may be claimed next (a claim leases it for JOB_EXPIRY; a retry waits for its time).
      async up(knex) {
        await knex.raw(`
          alter table emdr_requests
            add column available_at timestamptz not null default clock_timestamp(),
            add column claims integer not null default 0;
          alter table emdr_callbacks
            add column available_at timestamptz not null default clock_timestamp(),
            add column attempt_count integer not null default 0;
          update emdr_callbacks c set attempt_count = (select count(*) from emdr_callback_attempts a where a.callback_id = c.id);
          create index emdr_requests_received on emdr_requests (available_at) where state = 'received';
          create index emdr_requests_accepted on emdr_requests (available_at) where state = 'accepted';
          create index emdr_callbacks_due on emdr_callbacks (available_at) where state = 'pending';
          create index emdr_callbacks_waiting on emdr_callbacks (queue_message_id) where state = 'waiting';
          -- Slices of a request's files are read one after the other: uncompressed, each reads only its own part.
          alter table emdr_requests alter column document set storage external, alter column signature set storage external;
        `);
        // pg-boss carried the work before: a callback waiting for a later attempt keeps its time, then pg-boss's tables go.
        const { rows } = await knex.raw<{ rows: Array<{ job: string | null }> }>(`select to_regclass('pgboss.job')::text as job`);
        if (rows[0]!.job !== null) {
          await knex.raw(`
            update emdr_callbacks c set available_at = j.start_after
              from pgboss.job j
             where j.name = 'emdr-callback' and j.state in ('created', 'retry') and j.data->>'callbackId' = c.id and c.state = 'pending';
            drop schema pgboss cascade;
          `);
        }
      },
      async down(knex) {
        await knex.raw(`
          drop index emdr_requests_received, emdr_requests_accepted, emdr_callbacks_due, emdr_callbacks_waiting;
          alter table emdr_requests drop column available_at, drop column claims,
            alter column document set storage extended, alter column signature set storage extended;
          alter table emdr_callbacks drop column available_at, drop column attempt_count;
        `);
      },
    },
  ],
  [
    'emdr_0006_delivery_console',
    {
      async up(knex) {
        await knex.raw(`
          -- How long each callback attempt took (delivery.ts); null for attempts made before it was measured.
          alter table emdr_callback_attempts add column duration_ms integer;
          -- GET /api/messages: a clinic's requests, newest first, by keyset (clinic-messages.ts).
          create index emdr_requests_client_created on emdr_requests (client_id, created_at desc, queue_message_id desc);
        `);
      },
      async down(knex) {
        await knex.raw('drop index emdr_requests_client_created; alter table emdr_callback_attempts drop column duration_ms');
      },
    },
  ],
  [
    'emdr_0007_asynchronous_registry',
    {
      // The registry answers asynchronously (src/emdr/pipeline/lifecycle/lifecycle.ts): a request waits for its
      // answer in state `submitted` until REGISTRY_DEADLINE; callbacks are ordered by position, not
      // limited to two; the built-in registry queues its answers; a document is kept for the registry
      // to pull while it waits; a file callback keeps its file until it is delivered.
      async up(knex) {
        await knex.raw(`
          alter table emdr_requests drop constraint emdr_requests_state_check,
            add constraint emdr_requests_state_check check (state in ('received', 'accepted', 'submitted', 'rejected', 'completed', 'failed')),
            -- the operations are lifecycle.ts's: a new one needs no migration
            drop constraint emdr_requests_operation_check;
          alter table emdr_callbacks drop constraint emdr_callbacks_sequence_check,
            add constraint emdr_callbacks_sequence_check check (sequence >= 1);
          -- the deadline stage's claim: a submitted request's available_at is its deadline
          create index emdr_requests_submitted on emdr_requests (available_at) where state = 'submitted';
          -- getDocumentFile: the document a registration waiting for the registry keeps
          create index emdr_requests_awaiting_registry on emdr_requests (local_uid) where state in ('accepted', 'submitted');

          -- the built-in registry's answers, due at available_at (REGISTRY_ANSWER_DELAY after the submission)
          create table emdr_registry_answers (
            message_id uuid primary key,
            outcome jsonb not null,
            available_at timestamptz not null
          );
          create index emdr_registry_answers_due on emdr_registry_answers (available_at);

          -- A failed file callback used to lose its copy of the file (a replay fetched it again); now it
          -- keeps it until it is delivered. The copies dropped before come back from the built-in
          -- registry, the version the callback names.
          update emdr_requests r set document = d.content, signature = d.signature
            from emdr_callbacks c, emdr_registry_documents d
           where c.queue_message_id = r.queue_message_id and c.name = 'SendDocumentFileResultResponse' and c.state = 'failed'
             and r.state = 'completed' and r.document is null
             and d.local_uid = (c.payload->'document'->>'localUid')::uuid and d.version = (c.payload->'document'->>'version')::int;
        `);
      },
      async down(knex) {
        await knex.raw(`
          drop table emdr_registry_answers;
          drop index emdr_requests_submitted, emdr_requests_awaiting_registry;
          update emdr_requests set state = 'accepted' where state = 'submitted';
          alter table emdr_requests drop constraint emdr_requests_state_check,
            add constraint emdr_requests_state_check check (state in ('received', 'rejected', 'accepted', 'completed', 'failed')),
            add constraint emdr_requests_operation_check check (operation in ('RegisterDocument', 'DemandContent'));
          alter table emdr_callbacks drop constraint emdr_callbacks_sequence_check,
            add constraint emdr_callbacks_sequence_check check (sequence in (1, 2));
        `);
      },
    },
  ],
  [
    'emdr_0008_fair_claims',
    {
      // Fair scheduling (issue 21): the acceptance stage takes the oldest requests of each clinic in
      // turn, the delivery stage the oldest callbacks of each receiver origin, each through an index
      // that starts with the clinic or the origin. A claim's lease moves to leased_until, a column no
      // index holds, so a claim can be a HOT update (issue 24); available_at keeps when a row is due.
      async up(knex) {
        await knex.raw(`
          alter table emdr_requests add column leased_until timestamptz;
          alter table emdr_callbacks add column leased_until timestamptz,
            add column origin text not null generated always as (coalesce(lower(substring(url from '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]+')), url)) stored;
          update emdr_requests set leased_until = available_at, available_at = now() where available_at > now() and state in ('received', 'accepted');
          drop index emdr_requests_received, emdr_callbacks_due;
          create index emdr_requests_received on emdr_requests (client_id, available_at) where state = 'received';
          create index emdr_callbacks_due on emdr_callbacks (origin, available_at) where state = 'pending';
          alter table emdr_requests set (fillfactor = 90);
          alter table emdr_callbacks set (fillfactor = 90);
        `);
      },
      async down(knex) {
        await knex.raw(`
          drop index emdr_requests_received, emdr_callbacks_due;
          update emdr_requests set available_at = greatest(available_at, leased_until) where leased_until is not null;
          update emdr_callbacks set available_at = greatest(available_at, leased_until) where leased_until is not null;
          alter table emdr_requests drop column leased_until, reset (fillfactor);
          alter table emdr_callbacks drop column leased_until, drop column origin, reset (fillfactor);
          create index emdr_requests_received on emdr_requests (available_at) where state = 'received';
          create index emdr_callbacks_due on emdr_callbacks (available_at) where state = 'pending';
        `);
      },
    },
  ],
  [
    'emdr_0009_trace_context',
    {
      // The W3C traceparent of the request that stored the row (src/tracing/): the worker's spans of
      // its stages and callback attempts continue that trace in another process. Null when tracing is off.
      async up(knex) {
        await knex.raw('alter table emdr_requests add column trace_parent text');
      },
      async down(knex) {
        await knex.raw('alter table emdr_requests drop column trace_parent');
      },
    },
  ],
  [
    'emdr_0010_local_uid_gateway_wide',
    {
      // localUid is unique across the whole gateway, as the registry keeps it unique across all its
      // senders (interface B 2.0.0): before, unique per organization in the built-in registry and per
      // clinic at acceptance. Documents registered before under the old rule stay registered and
      // readable: of each localUid that several organizations registered, the earliest registration
      // keeps it as its own (so no one can take it again) and the later ones are marked
      // legacy_shared_local_uid, outside the new unique index; nothing is deleted or renumbered.
      // The acceptance check looks for the localUid among every clinic's requests, hence the index
      // on local_uid alone (it replaces the per-clinic one).
      async up(knex) {
        await knex.raw(`
          alter table emdr_registry_documents add column legacy_shared_local_uid boolean not null default false;
          update emdr_registry_documents d set legacy_shared_local_uid = true
           where exists (select 1 from emdr_registry_documents e
                          where e.local_uid = d.local_uid
                            and (e.registration_date_time, e.emdr_id) < (d.registration_date_time, d.emdr_id));
          alter table emdr_registry_documents drop constraint emdr_registry_documents_organization_local_uid_key;
          create unique index emdr_registry_documents_local_uid on emdr_registry_documents (local_uid) where not legacy_shared_local_uid;
          drop index emdr_requests_local_uid;
          create index emdr_requests_local_uid on emdr_requests (local_uid) where local_uid is not null;
        `);
      },
      async down(knex) {
        await knex.raw(`
          drop index emdr_requests_local_uid;
          create index emdr_requests_local_uid on emdr_requests (client_id, local_uid) where local_uid is not null;
          drop index emdr_registry_documents_local_uid;
          alter table emdr_registry_documents add constraint emdr_registry_documents_organization_local_uid_key unique (organization, local_uid);
          alter table emdr_registry_documents drop column legacy_shared_local_uid;
        `);
      },
    },
  ],
  [
    'emdr_0011_one_local_uid_index',
    {
      // emdr_requests_awaiting_registry (local_uid, of requests accepted or submitted) served the
      // registry's getDocumentFile; since emdr_0010, emdr_requests_local_uid (local_uid) serves the
      // same lookup (kept-files.ts: a localUid has a few requests at most), and the partial index
      // took an entry at two settles of every registration (issue 24: PostgreSQL's work per document).
      async up(knex) {
        await knex.raw('drop index emdr_requests_awaiting_registry');
      },
      async down(knex) {
        await knex.raw(`create index emdr_requests_awaiting_registry on emdr_requests (local_uid) where state in ('accepted', 'submitted')`);
      },
    },
  ],
  [
    'emdr_0012_room_for_claims',
    {
      // A claim only leases its rows (leased_until, in no index): a HOT update, when the row's page
      // has room for the new version. At fillfactor 90 a page had room for about one, so most claims
      // went into every index of their table (issue 24: 1.2-1.4 of 5 request updates per document
      // HOT). Pages filled to half keep room for a row's claims between its settles.
      async up(knex) {
        await knex.raw('alter table emdr_requests set (fillfactor = 50); alter table emdr_callbacks set (fillfactor = 50)');
      },
      async down(knex) {
        await knex.raw('alter table emdr_requests set (fillfactor = 90); alter table emdr_callbacks set (fillfactor = 90)');
      },
    },
  ],
  [
    'emdr_0013_callback_holds_next',
    {
      // Set on a callback when the settle that emits the next one holds it (waiting) behind this one:
      // the delivery of this one then releases it (delivery.ts). Without it, every delivered
      // callback with a next one cost a release statement, whether one was held or not (issue 24:
      // one of the worker's 11 statements a document at a steady rate).
      async up(knex) {
        await knex.raw('alter table emdr_callbacks add column holds_next boolean not null default false');
      },
      async down(knex) {
        await knex.raw('alter table emdr_callbacks drop column holds_next');
      },
    },
  ],
  [
    'emdr_0014_callback_origin',
    {
      // emdr_0008 wrote the origin's pattern through knex.raw, which took the `?` of `[^/?#]` for a
      // binding and stored `[^/$1#]`: a host with a 1 in it lost the rest of its name, or (an address
      // like 127.0.0.1 or 10.x) matched nothing and the whole URL became the origin. Receivers were
      // then shared out (and their circuits kept) by each callback's URL, or by a cut host name that
      // two clinics' hosts could share, and the hand-offs, which count by callbackOrigin's origin,
      // missed the delivery stage's count of the origin (issue 21). `\\?` is knex's escaped `?`.
      // A generated column's expression changes only with a rewrite of the table: the column is
      // made again, and its index.
      async up(knex) {
        await knex.raw(remakeCallbackOrigin('^[A-Za-z][A-Za-z0-9+.-]*://[^/\\?#]+'));
      },
      async down(knex) {
        // As emdr_0008 left it.
        await knex.raw(remakeCallbackOrigin('^[A-Za-z][A-Za-z0-9+.-]*://[^/$1#]+'));
      },
    },
  ],
];
