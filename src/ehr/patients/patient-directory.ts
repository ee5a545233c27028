import type { Patient } from '../../../generated/ehr-types.js';
import { statement, type Sql } from '../../db/sql.js';
import { nameKey, medcardKey, PATIENT_COLUMNS, toPatient, type PatientRow } from './patients.js';

/**
 * The back office's view of the patient source: the patients of an api key's organizations (those
 * whose medical record an import of one of them brought, record_patient_organizations), by id, as
 * a filtered page, and counted.
 */

const VISIBLE = `exists (select 1 from record_patient_organizations o where o.patient_id = p.id and o.organization = any($1::text[]))`;

const BY_ID = statement('ehr_directory_by_id', `select ${PATIENT_COLUMNS} from ehr_patients p where p.id = $2 and ${VISIBLE}`);
const BY_IDS = statement('ehr_directory_by_ids', `select ${PATIENT_COLUMNS} from ehr_patients p where p.id = any($1::text[])`);
const PAGE = statement(
  'ehr_directory_page',
  `select ${PATIENT_COLUMNS} from ehr_patients p
    where ${VISIBLE} and p.id > coalesce($2::text, '')
      and ($5::text[] is null or (select bool_and(w in (p.surname_key, p.name_key, lower(replace(coalesce(p.middle_name, ''), 'ё', 'е')))) from unnest($5::text[]) w))
      and ($6::text is null or p.medcard_key = $6)
      and ($7::text is null or p.phone = $7)
      and ($8::date is null or p.birth_date >= $8::date)
      and ($9::date is null or p.birth_date <= $9::date)
    order by p.id limit $3 offset $4`,
);
const COUNT = statement('ehr_directory_count', `select count(*)::int as count from ehr_patients p where ${VISIBLE}`);

export interface DirectoryFilters {
  /** Words each of which must be the surname, the name or the middle name. */
  nameWords?: string[];
  medcardNumber?: string;
  /** E.164. */
  phone?: string;
  birthFrom?: string;
  birthTo?: string;
}

export class PatientDirectory {
  constructor(private readonly sql: Sql) {}

  async byId(organizations: readonly string[], id: string): Promise<Patient | undefined> {
    const row = await this.sql.row<PatientRow>(BY_ID, [organizations, id]);
    return row && toPatient(row);
  }

  /** The patients of these ids, whoever may see them (the caller has checked): for the patient info of items. */
  async byIds(ids: readonly string[]): Promise<Map<string, Patient>> {
    const rows = ids.length === 0 ? [] : await this.sql.rows<PatientRow>(BY_IDS, [ids]);
    return new Map(rows.map((row) => [row.id, toPatient(row)]));
  }

  async page(organizations: readonly string[], page: { limit: number; offset: number; afterId?: string; filters: DirectoryFilters }): Promise<Patient[]> {
    const { filters } = page;
    const rows = await this.sql.rows<PatientRow>(PAGE, [
      organizations,
      page.afterId ?? null,
      page.limit,
      page.offset,
      filters.nameWords && filters.nameWords.length > 0 ? filters.nameWords.map(nameKey) : null,
      filters.medcardNumber === undefined ? null : medcardKey(filters.medcardNumber),
      filters.phone ?? null,
      filters.birthFrom ?? null,
      filters.birthTo ?? null,
    ]);
    return rows.map(toPatient);
  }

  async count(organizations: readonly string[]): Promise<number> {
    return (await this.sql.row<{ count: number }>(COUNT, [organizations]))!.count;
  }
}
