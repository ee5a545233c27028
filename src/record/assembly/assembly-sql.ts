import { statement } from '../../db/sql.js';

/** The statements of a patient's assembly (store.ts): the patient's resources, what their references name, the items replaced. */

export const PATIENT_RESOURCES = statement(
  'record_patient_resources',
  'select id::text, source, resource_type, fhir_id, fragment, refs from record_resources where patient_id = $1 order by id',
);

/** What the aliases (per source) name; a shared resource with its fragment. */
export const RESOLVE_ALIASES = statement(
  'record_resolve_aliases',
  `select q.source, q.alias, r.id::text, r.resource_type, r.fhir_id, case when r.patient_id is null then r.fragment end as fragment
     from unnest($1::text[], $2::text[]) as q(source, alias)
     join record_aliases a on a.source = q.source and a.alias = q.alias
     join record_resources r on r.source = a.source and r.resource_type = a.resource_type and r.fhir_id = a.fhir_id`,
);

// A patient's items are replaced whole: their ids are those of their resources, so they stay.
export const CLEAR_APPOINTMENTS = statement('record_clear_appointments', 'delete from record_appointments where patient_id = $1');
export const CLEAR_RESULTS = statement('record_clear_results', 'delete from record_appointment_results where patient_id = $1');
export const CLEAR_REPORTS = statement('record_clear_reports', 'delete from record_diagnostic_reports where patient_id = $1');
export const CLEAR_PRESCRIPTIONS = statement('record_clear_prescriptions', 'delete from record_prescriptions where patient_id = $1');

/** A patient's appointments or results ($1 the patient; ids, created, start, business ids, messages). */
const insertWithStart = (table: string) =>
  statement(
    `${table}_insert`,
    `insert into ${table} (id, patient_id, created, start, business_id, message)
     select t.id, $1, t.created, t.start, t.business_id, t.message::jsonb from unnest($2::bigint[], $3::timestamptz[], $4::timestamptz[], $5::text[], $6::text[]) as t(id, created, start, business_id, message)`,
  );
export const INSERT_APPOINTMENTS = insertWithStart('record_appointments');
export const INSERT_RESULTS = insertWithStart('record_appointment_results');
export const INSERT_REPORTS = statement(
  'record_insert_reports',
  `insert into record_diagnostic_reports (id, patient_id, created, business_id, message)
   select t.id, $1, t.created, t.business_id, t.message::jsonb from unnest($2::bigint[], $3::timestamptz[], $4::text[], $5::text[]) as t(id, created, business_id, message)`,
);
export const INSERT_PRESCRIPTIONS = statement(
  'record_insert_prescriptions',
  `insert into record_prescriptions (id, patient_id, created, business_id, cd10, message)
   select t.id, $1, t.created, t.business_id, string_to_array(t.cd10, E'\\n'), t.message::jsonb
     from unnest($2::bigint[], $3::timestamptz[], $4::text[], $5::text[], $6::text[]) as t(id, created, business_id, cd10, message)`,
);
