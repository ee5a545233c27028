import type { NamedMigration } from '../db/migrations/index.js';

/** The audit trail's table (and the request id that interface B's request rows keep for their callbacks), in order. */
export const auditMigrations: readonly NamedMigration[] = [
  [
    'audit_0001_trail',
    {
      async up(knex) {
        await knex.raw(`
          -- Who did what to which patient's data or document, when, with what outcome (src/audit/trail.ts).
          -- Identifiers only: no names, phones, SNILS, tokens or document content.
          create table audit_events (
            id bigserial primary key,
            at timestamptz not null default clock_timestamp(),
            -- the x-request-id of the HTTP request (accepted or generated); callbacks: the one of the request that created them
            request_id text,
            -- who: the authorization server's internal account, the patient (internalUserId), the clinic (businessId)
            internal_account text,
            internal_user_id text,
            business_id text,
            -- what: the JSON-RPC method, the OpenAPI operation, or the callback's name
            action text not null,
            emdr_id text,
            queue_message_id uuid,
            -- a document of an organization the clinic account does not list (DemandContent's file callback)
            cross_organization boolean,
            -- ok, a JSON-RPC error code, an interface B error code, or a callback's final state (delivered, failed)
            outcome text not null
          );
          create index audit_events_at on audit_events (at);
          create index audit_events_user on audit_events (internal_user_id, at) where internal_user_id is not null;
          create index audit_events_business on audit_events (business_id, at) where business_id is not null;

          -- The request's id travels with its callbacks (header x-request-id); rows stored before get one of their own.
          alter table emdr_requests add column request_id text not null default gen_random_uuid()::text;
          -- The file callback's audit row asks whether the delivery was of another organization's document.
          create index emdr_document_disclosures_request on emdr_document_disclosures (queue_message_id);
        `);
      },
      async down(knex) {
        await knex.raw(`
          drop index emdr_document_disclosures_request;
          alter table emdr_requests drop column request_id;
          drop table audit_events;
        `);
      },
    },
  ],
  [
    'audit_0002_client',
    {
      async up(knex) {
        await knex.raw(`
          -- Who asked, as the network saw it: the client address (TRUSTED_PROXIES: from X-Forwarded-For),
          -- and the client's own x-request-id, kept apart from request_id (always the gateway's own id).
          alter table audit_events add column client_address text, add column client_request_id text,
            -- refused calls of one client address, method and outcome within a minute share one row (src/audit/trail.ts)
            add column occurrences integer not null default 1;
          create index audit_events_client on audit_events (client_address, at) where client_address is not null;
          -- The client's x-request-id of an interface B request, which its callbacks carry; request_id is the gateway's.
          alter table emdr_requests add column client_request_id text;
        `);
      },
      async down(knex) {
        await knex.raw(`
          alter table emdr_requests drop column client_request_id;
          drop index audit_events_client;
          alter table audit_events drop column client_address, drop column client_request_id, drop column occurrences;
        `);
      },
    },
  ],
];
