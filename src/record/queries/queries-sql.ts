import { statement, type Statement } from '../../db/sql.js';

/** The reads of the medical record's items (queries.ts), one set of statements per kind of item. */

export type RecordEntity = 'appointment' | 'appointment_result' | 'diagnostic_report' | 'prescription';

interface EntityTable {
  table: string;
  /** Whether the items have a start of their own (appointments and results: the byStart filter). */
  start: boolean;
  /** Whether the items keep ICD-10 codes (prescriptions: the byDiagnosisCd10 filter). */
  cd10: boolean;
}

const TABLES: Record<RecordEntity, EntityTable> = {
  appointment: { table: 'record_appointments', start: true, cd10: false },
  appointment_result: { table: 'record_appointment_results', start: true, cd10: false },
  diagnostic_report: { table: 'record_diagnostic_reports', start: false, cd10: false },
  prescription: { table: 'record_prescriptions', start: false, cd10: true },
};

export interface EntityStatements {
  /** $1 id, $2 patient id. */
  byIdOfPatient: Statement;
  /** $1 id, $2 organizations. */
  byIdInOrganizations: Statement;
  /** $1 patient, $2 keyset (created) or null, $3 limit, $4 offset. */
  patientPageNewestFirst: Statement;
  patientPageOldestFirst: Statement;
  /** $1 patient. */
  patientCount: Statement;
  /** $1 organizations, $2 after id or null, $3 limit, $4 offset, then the filters $5… (see FILTER_PARAMS). */
  pageById: Statement;
  /** The same, $2 the keyset created (before it, newest first). */
  pageByCreated: Statement;
  /** $1 organizations. */
  count: Statement;
}

/** A patient is visible to an api key when one of its organizations brought the patient's record. */
const IN_ORGANIZATIONS = (alias: string, parameter: string) =>
  `exists (select 1 from record_patient_organizations o where o.patient_id = ${alias}.patient_id and o.organization = any(${parameter}::text[]))`;

/**
 * The back office's filters, in this order after $4: patient id, business id, created from, created
 * to, then for items with a start: start from, start to; for prescriptions: ICD-10 prefixes (LIKE
 * patterns). A null parameter does not filter.
 */
function filters(entity: EntityTable): string {
  const clauses = [
    '($5::text is null or x.patient_id = $5)',
    '($6::text is null or x.business_id = $6)',
    '($7::timestamptz is null or x.created >= $7)',
    '($8::timestamptz is null or x.created <= $8)',
  ];
  if (entity.start) clauses.push('($9::timestamptz is null or x.start >= $9)', '($10::timestamptz is null or x.start <= $10)');
  if (entity.cd10) clauses.push('($9::text[] is null or exists (select 1 from unnest(x.cd10) c where c like any($9::text[])))');
  return clauses.join(' and ');
}

function statementsOf(entity: EntityTable): EntityStatements {
  const t = entity.table;
  return {
    byIdOfPatient: statement(`${t}_by_id_of_patient`, `select x.patient_id, x.message from ${t} x where x.id = $1::bigint and x.patient_id = $2`),
    byIdInOrganizations: statement(
      `${t}_by_id_in_organizations`,
      `select x.patient_id, x.message from ${t} x where x.id = $1::bigint and ${IN_ORGANIZATIONS('x', '$2')}`,
    ),
    patientPageNewestFirst: statement(
      `${t}_patient_page_desc`,
      `select x.message from ${t} x where x.patient_id = $1 and x.created < coalesce($2::timestamptz, 'infinity') order by x.created desc limit $3 offset $4`,
    ),
    patientPageOldestFirst: statement(
      `${t}_patient_page_asc`,
      `select x.message from ${t} x where x.patient_id = $1 and x.created > coalesce($2::timestamptz, '-infinity') order by x.created asc limit $3 offset $4`,
    ),
    patientCount: statement(`${t}_patient_count`, `select count(*)::int as count from ${t} x where x.patient_id = $1`),
    pageById: statement(
      `${t}_page_by_id`,
      `select x.patient_id, x.message from ${t} x where ${IN_ORGANIZATIONS('x', '$1')} and x.id > coalesce($2::bigint, 0) and ${filters(entity)} order by x.id limit $3 offset $4`,
    ),
    pageByCreated: statement(
      `${t}_page_by_created`,
      `select x.patient_id, x.message from ${t} x where ${IN_ORGANIZATIONS('x', '$1')} and x.created < $2::timestamptz and ${filters(entity)} order by x.created desc, x.id limit $3 offset $4`,
    ),
    count: statement(`${t}_count`, `select count(*)::int as count from ${t} x where ${IN_ORGANIZATIONS('x', '$1')}`),
  };
}

export const ENTITY_STATEMENTS: Record<RecordEntity, EntityStatements> = Object.fromEntries(
  (Object.entries(TABLES) as Array<[RecordEntity, EntityTable]>).map(([name, entity]) => [name, statementsOf(entity)]),
) as Record<RecordEntity, EntityStatements>;

export function hasStart(entity: RecordEntity): boolean {
  return TABLES[entity].start;
}

export function hasCd10(entity: RecordEntity): boolean {
  return TABLES[entity].cd10;
}

/** Whether an api key of these organizations may see the patient. */
export const PATIENT_IN_ORGANIZATIONS = statement(
  'record_patient_in_organizations',
  'select 1 as visible from record_patient_organizations where patient_id = $1 and organization = any($2::text[]) limit 1',
);

/** Health of the record: its tables answer. */
export const RECORD_HEALTH = statement('record_health', 'select (select count(*) from record_import_runs where false) = 0 as healthy');
