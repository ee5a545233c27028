import type { Queryable, Sql } from '../../db/sql.js';
import type { Ref } from '../mapping/fragments.ts';
import { assemblePatient, type AssembledRecord, type Resolved, type ResourceRow } from './assemble.js';
import * as Q from './assembly-sql.js';

/**
 * One patient's items rebuilt from the store and replaced, in one transaction: the patient's rows
 * read, what their references name looked up (the shared resources' own references too), the
 * items assembled (assemble.ts) and written in place of the earlier ones.
 */
export async function assembleAndStore(sql: Sql, patientId: string): Promise<AssembledRecord> {
  const rows = await sql.rows<ResourceRow & { refs: string[] }>(Q.PATIENT_RESOURCES, [patientId]);
  const resolved = await resolveReferences(sql, rows);
  const record = assemblePatient(patientId, rows, (source, alias) => resolved.get(aliasKey(source, alias)));
  await sql.transaction((trx) => storeRecord(trx, patientId, record));
  return record;
}

const aliasKey = (source: string, alias: string) => `${source}\u0000${alias}`;

/** Rounds of shared resources naming others in turn (a Location its organization, an organization its parent). */
const REFERENCE_ROUNDS = 3;

async function resolveReferences(sql: Sql, rows: ReadonlyArray<ResourceRow & { refs: string[] }>): Promise<Map<string, Resolved>> {
  const wanted = new Map<string, { source: string; alias: string }>();
  for (const row of rows) {
    for (const alias of row.refs) wanted.set(aliasKey(row.source, alias), { source: row.source, alias });
  }
  const resolved = new Map<string, Resolved>();
  for (let round = 0; round < REFERENCE_ROUNDS && wanted.size > 0; round += 1) {
    const queries = [...wanted.values()];
    wanted.clear();
    const found = await sql.rows<Resolved & { source: string; alias: string }>(Q.RESOLVE_ALIASES, [
      queries.map((query) => query.source),
      queries.map((query) => query.alias),
    ]);
    for (const row of found) {
      resolved.set(aliasKey(row.source, row.alias), row);
      const next = (row.fragment as { organization?: Ref; partOf?: Ref } | null) ?? {};
      for (const reference of [next.organization, next.partOf]) {
        if (reference && !resolved.has(aliasKey(row.source, reference.alias)))
          wanted.set(aliasKey(row.source, reference.alias), { source: row.source, alias: reference.alias });
      }
    }
  }
  return resolved;
}

async function storeRecord(trx: Queryable, patientId: string, record: AssembledRecord): Promise<void> {
  await trx.run(Q.CLEAR_APPOINTMENTS, [patientId]);
  await trx.run(Q.CLEAR_RESULTS, [patientId]);
  await trx.run(Q.CLEAR_REPORTS, [patientId]);
  await trx.run(Q.CLEAR_PRESCRIPTIONS, [patientId]);
  const json = <M>(items: Array<{ message: M }>) => items.map((item) => JSON.stringify(item.message));
  const ids = (items: Array<{ id: string }>) => items.map((item) => item.id);
  const created = (items: Array<{ created: string }>) => items.map((item) => item.created);
  const businessIds = (items: Array<{ businessId: string }>) => items.map((item) => item.businessId);
  const { appointments, results, reports, prescriptions } = record;
  if (appointments.length > 0)
    await trx.run(Q.INSERT_APPOINTMENTS, [
      patientId,
      ids(appointments),
      created(appointments),
      appointments.map((item) => item.start),
      businessIds(appointments),
      json(appointments),
    ]);
  if (results.length > 0)
    await trx.run(Q.INSERT_RESULTS, [patientId, ids(results), created(results), results.map((item) => item.start), businessIds(results), json(results)]);
  if (reports.length > 0) await trx.run(Q.INSERT_REPORTS, [patientId, ids(reports), created(reports), businessIds(reports), json(reports)]);
  if (prescriptions.length > 0) {
    await trx.run(Q.INSERT_PRESCRIPTIONS, [
      patientId,
      ids(prescriptions),
      created(prescriptions),
      businessIds(prescriptions),
      prescriptions.map((item) => (item.cd10 ?? []).join('\n')),
      json(prescriptions),
    ]);
  }
}
