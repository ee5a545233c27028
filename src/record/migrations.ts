import type { NamedMigration } from '../db/migrations/index.js';

/** The item tables and their own columns: appointments and results have a start; prescriptions keep their ICD-10 codes (the byDiagnosisCd10 filter). */
const ITEM_TABLES: ReadonlyArray<readonly [table: string, extra: string]> = [
  ['record_appointments', 'start timestamptz not null,'],
  ['record_appointment_results', 'start timestamptz not null,'],
  ['record_diagnostic_reports', ''],
  ['record_prescriptions', 'cd10 text[] not null,'],
];

/** The patient's medical record: FHIR resources as imported, and the items interface A serves, in order. */
export const recordMigrations: readonly NamedMigration[] = [
  [
    'record_0001_fhir_import',
    {
      async up(knex) {
        await knex.raw(`
          -- Every FHIR resource imported, mapped to its fragment (src/record/mapping/), one row
          -- per source and resource: a re-import updates the row (its id stays) and never adds one.
          create table record_resources (
            id bigint generated always as identity primary key,
            source text not null,
            resource_type text not null,
            fhir_id text not null,
            -- where its latest version came from: FILE:LINE (NDJSON) or FILE#entry[N] (Bundle)
            origin text not null,
            fragment jsonb not null,
            -- the references it holds, as aliases (record_aliases); its subject's among them: what the assembly looks up
            refs text[] not null default '{}',
            subject text,
            -- the patient it belongs to (ehr_patients.id), once its subject resolved
            patient_id text,
            import_run bigint not null,
            -- the run that first brought it (its later runs update it)
            first_run bigint not null,
            updated_at timestamptz not null default now(),
            unique (source, resource_type, fhir_id)
          );
          create index record_resources_patient on record_resources (patient_id) where patient_id is not null;
          create index record_resources_run on record_resources (import_run, patient_id);

          -- What a reference may name, per source: Type/id, the fullUrl of its Bundle entry, and
          -- Type?identifier=system|value for each identifier (src/record/fhir/references.ts).
          create table record_aliases (
            source text not null,
            alias text not null,
            resource_type text not null,
            fhir_id text not null,
            primary key (source, alias)
          );

          create table record_import_runs (
            id bigint generated always as identity primary key,
            source text not null,
            started_at timestamptz not null default now(),
            finished_at timestamptz,
            summary jsonb
          );
          -- The patients whose items an import run must assemble again (emptied when it ends).
          create table record_import_patients (
            import_run bigint not null,
            patient_id text not null,
            primary key (import_run, patient_id)
          );

          -- The organizations (OIDs) whose back-office api keys may see a patient: the --organization of
          -- each import that brought the patient's resources.
          create table record_patient_organizations (
            patient_id text not null,
            organization text not null,
            primary key (patient_id, organization)
          );
          create index record_patient_organizations_organization on record_patient_organizations (organization, patient_id);
        `);
      },
      async down(knex) {
        await knex.raw(
          'drop table record_patient_organizations; drop table record_import_patients; drop table record_import_runs; drop table record_aliases; drop table record_resources;',
        );
      },
    },
  ],
  [
    'record_0002_items',
    {
      // The items of the four lists, assembled per patient from record_resources (src/record/assembly/):
      // id is the record_resources id of the FHIR resource it comes from (an appointment and its result
      // share their Encounter's); created is the keyset, unique within a patient's list.
      async up(knex) {
        for (const [table, extra] of ITEM_TABLES) {
          await knex.raw(`
            create table ${table} (
              id bigint primary key,
              patient_id text not null,
              created timestamptz not null,
              ${extra}
              business_id text not null,
              message jsonb not null
            );
            create unique index ${table}_patient_created on ${table} (patient_id, created);
          `);
        }
      },
      async down(knex) {
        for (const [table] of [...ITEM_TABLES].reverse()) await knex.raw(`drop table ${table}`);
      },
    },
  ],
];
