import { statement } from '../../db/sql.js';

/** The statements of an import run (import.ts, write-batch.ts): staging, resolving subjects, the patients to assemble. */

const SHARED_TYPES = `('Practitioner', 'Organization', 'Location', 'Medication')`;

export const START_RUN = statement('record_start_run', 'insert into record_import_runs (source) values ($1) returning id::text');
export const FINISH_RUN = statement('record_finish_run', 'update record_import_runs set finished_at = now(), summary = $2 where id = $1');

/**
 * A batch of mapped resources, upserted by (source, type, id); answers which rows are new. A
 * resource whose patient is imported already (in an earlier batch, an earlier run, or this batch's
 * aliases, written first) takes its patient here; the others in RESOLVE_SUBJECTS.
 */
export const STAGE_RESOURCES = statement(
  'record_stage_resources',
  `insert into record_resources (source, resource_type, fhir_id, origin, fragment, refs, subject, patient_id, import_run, first_run)
   select $1, t.resource_type, t.fhir_id, t.origin, t.fragment::jsonb, string_to_array(t.refs, E'\\n'), t.subject,
          case when t.resource_type = 'Patient' then t.fhir_id
               else (select a.fhir_id from record_aliases a where a.source = $1 and a.alias = t.subject and a.resource_type = 'Patient') end,
          $7, $7
     from unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $8::text[]) as t(resource_type, fhir_id, origin, fragment, refs, subject)
   on conflict (source, resource_type, fhir_id) do update
      set origin = excluded.origin, fragment = excluded.fragment, refs = excluded.refs, subject = excluded.subject,
          patient_id = excluded.patient_id, import_run = excluded.import_run, updated_at = now()
   returning (xmax = 0) as inserted`,
);

/**
 * A staged batch's commit does not wait for its WAL to reach the disk: the import writes hundreds
 * of batches, and a crash of the server loses at most the last few, which the import (failed, and
 * idempotent) writes again when it is run again. The run's end (FINISH_RUN) commits as usual.
 */
export const COMMIT_WITHOUT_FLUSH = statement('record_commit_without_flush', 'set local synchronous_commit = off');

export const STAGE_ALIASES = statement(
  'record_stage_aliases',
  `insert into record_aliases (source, alias, resource_type, fhir_id)
   select $1, t.alias, t.resource_type, t.fhir_id from unnest($2::text[], $3::text[], $4::text[]) as t(alias, resource_type, fhir_id)
   on conflict (source, alias) do update set resource_type = excluded.resource_type, fhir_id = excluded.fhir_id`,
);

/** The patients of a run belong to the import's organization (what its api keys may see). */
export const STAGE_PATIENT_ORGANIZATIONS = statement(
  'record_stage_patient_organizations',
  `insert into record_patient_organizations (patient_id, organization) select unnest($1::text[]), $2 on conflict do nothing`,
);

/** The resources of the run staged before their patient take their subject's patient now. */
export const RESOLVE_SUBJECTS = statement(
  'record_resolve_subjects',
  `update record_resources r set patient_id = a.fhir_id
     from record_aliases a
    where r.import_run = $1 and r.patient_id is null and r.subject is not null
      and a.source = r.source and a.alias = r.subject and a.resource_type = 'Patient'`,
);

/** Resources of the run whose subject names no imported patient: taken out again, and reported. */
export const DROP_UNRESOLVED = statement(
  'record_drop_unresolved',
  `delete from record_resources where import_run = $1 and subject is not null and patient_id is null returning resource_type, fhir_id, origin, first_run = $1 as new`,
);

/**
 * The patients to assemble again: those of the run's resources; and when the run brought shared
 * resources (a practitioner, an organization, a location, a medication), which any item of the
 * source may name, every patient of the source.
 */
export const COLLECT_PATIENTS = statement(
  'record_collect_patients',
  `insert into record_import_patients (import_run, patient_id)
   select $1, patient_id from record_resources where import_run = $1 and patient_id is not null
   union
   select $1, patient_id from record_resources
    where source = $2 and patient_id is not null
      and exists (select 1 from record_resources s where s.import_run = $1 and s.resource_type in ${SHARED_TYPES})
   on conflict do nothing`,
);

export const NEXT_PATIENTS = statement(
  'record_next_patients',
  'select patient_id from record_import_patients where import_run = $1 and patient_id > $2 order by patient_id limit $3',
);

export const FORGET_PATIENTS = statement('record_forget_patients', 'delete from record_import_patients where import_run = $1');
