import type { Sql } from '../../db/sql.js';
import type { PatientWriter } from '../mapping/patient.ts';
import * as Q from './import-sql.js';
import type { StagedBatch } from './stage-entries.ts';

/** Where a run's staged batches go: its source, organization and run, and the patient source's writer. */
export interface BatchTarget {
  source: string;
  organization: string;
  runId: string;
  writePatients: PatientWriter;
}

/**
 * A staged batch into record_resources and record_aliases, in one transaction; answers how many of
 * its resources were new and how many replaced an earlier version.
 */
export async function writeStagedBatch(sql: Sql, target: BatchTarget, batch: StagedBatch): Promise<{ imported: number; updated: number }> {
  // Patients go to the patient source first, so that a staged resource never names a patient it lacks.
  if (batch.patients.length > 0) await target.writePatients(batch.patients);
  const { resources, aliases } = batch;
  return sql.transaction(async (trx) => {
    await trx.run(Q.COMMIT_WITHOUT_FLUSH, []);
    // Aliases first: a resource of this batch whose patient is in it too takes its patient on insert.
    await trx.run(Q.STAGE_ALIASES, [target.source, aliases.aliases, aliases.types, aliases.ids]);
    const rows = await trx.rows<{ inserted: boolean }>(Q.STAGE_RESOURCES, [
      target.source,
      resources.types,
      resources.ids,
      resources.origins,
      resources.fragments,
      resources.refs,
      target.runId,
      resources.subjects,
    ]);
    if (batch.patients.length > 0) await trx.run(Q.STAGE_PATIENT_ORGANIZATIONS, [batch.patients.map((patient) => patient.id), target.organization]);
    const imported = rows.filter((row) => row.inserted).length;
    return { imported, updated: rows.length - imported + batch.replacedInBatch };
  });
}
