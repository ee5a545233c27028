import type { Sql } from '../../db/sql.js';
import { ENTITY_STATEMENTS, hasCd10, hasStart, PATIENT_IN_ORGANIZATIONS, RECORD_HEALTH, type RecordEntity } from './queries-sql.js';

export type { RecordEntity };

/** An item as stored: its message (without the patient, which the reads attach) and its patient. */
export interface StoredItem {
  patient_id: string;
  message: Record<string, unknown>;
}

/** Who may see what: one patient (an end user's session), or the patients of organizations (an api key). */
export type RecordScope = { patientId: string } | { organizations: readonly string[] };

export interface PatientPage {
  limit: number;
  offset: number;
  /** Keyset: the created of the last item of the previous page (epoch ms). */
  after?: number;
  newestFirst: boolean;
}

export interface BackOfficeFilters {
  patientId?: string;
  businessId?: string;
  createdFrom?: number;
  createdTo?: number;
  startFrom?: number;
  startTo?: number;
  /** ICD-10 codes; a code finds itself and the codes under it. */
  cd10?: readonly string[];
}

export interface BackOfficePage {
  limit: number;
  offset: number;
  /** Keyset of ids (ascending). */
  afterId?: string;
  /** Keyset of created (newest first): items created before it. */
  beforeCreated?: number;
  filters: BackOfficeFilters;
}

const at = (ms: number | undefined) => (ms === undefined ? null : new Date(ms));

/** The reads of the patients' medical record. */
export class RecordQueries {
  constructor(private readonly sql: Sql) {}

  /** The item of this id within the scope; undefined when there is none (unknown and out of scope alike). */
  byId(entity: RecordEntity, id: string, scope: RecordScope): Promise<StoredItem | undefined> {
    if (!/^[0-9]{1,18}$/.test(id)) return Promise.resolve(undefined);
    const statements = ENTITY_STATEMENTS[entity];
    return 'patientId' in scope
      ? this.sql.row<StoredItem>(statements.byIdOfPatient, [id, scope.patientId])
      : this.sql.row<StoredItem>(statements.byIdInOrganizations, [id, scope.organizations]);
  }

  async patientPage(entity: RecordEntity, patientId: string, page: PatientPage): Promise<Array<Record<string, unknown>>> {
    const statements = ENTITY_STATEMENTS[entity];
    const rows = await this.sql.rows<{ message: Record<string, unknown> }>(
      page.newestFirst ? statements.patientPageNewestFirst : statements.patientPageOldestFirst,
      [patientId, at(page.after), page.limit, page.offset],
    );
    return rows.map((row) => row.message);
  }

  async patientCount(entity: RecordEntity, patientId: string): Promise<number> {
    return (await this.sql.row<{ count: number }>(ENTITY_STATEMENTS[entity].patientCount, [patientId]))!.count;
  }

  async patientVisible(patientId: string, organizations: readonly string[]): Promise<boolean> {
    return (await this.sql.row(PATIENT_IN_ORGANIZATIONS, [patientId, organizations])) !== undefined;
  }

  page(entity: RecordEntity, organizations: readonly string[], page: BackOfficePage): Promise<StoredItem[]> {
    const statements = ENTITY_STATEMENTS[entity];
    const { filters } = page;
    const values: unknown[] = [organizations, page.beforeCreated === undefined ? (page.afterId ?? null) : at(page.beforeCreated), page.limit, page.offset];
    values.push(filters.patientId ?? null, filters.businessId ?? null, at(filters.createdFrom), at(filters.createdTo));
    if (hasStart(entity)) values.push(at(filters.startFrom), at(filters.startTo));
    if (hasCd10(entity))
      values.push(
        filters.cd10 && filters.cd10.length > 0
          ? filters.cd10.flatMap((code) => [code.replace(/[%_\\]/g, '\\$&'), `${code.replace(/[%_\\]/g, '\\$&')}.%`])
          : null,
      );
    return this.sql.rows<StoredItem>(page.beforeCreated === undefined ? statements.pageById : statements.pageByCreated, values);
  }

  async count(entity: RecordEntity, organizations: readonly string[]): Promise<number> {
    return (await this.sql.row<{ count: number }>(ENTITY_STATEMENTS[entity].count, [organizations]))!.count;
  }

  /** Whether the record's tables answer. */
  async healthy(): Promise<boolean> {
    return (await this.sql.row<{ healthy: boolean }>(RECORD_HEALTH))?.healthy === true;
  }
}
