import path from 'node:path';
import type { Queryable, Sql } from '../db/sql.js';
import { assemblePatient, type AssembledRecord, type Resolved, type ResourceRow } from './assemble.js';
import { mapResource, PATIENT_SCOPED } from './fhir/fragments.js';
import { patientOf, type ImportedPatient, type PatientWriter } from './fhir/patient.js';
import { readFhirFile, UnreadableFile, type FhirEntry } from './fhir/read.js';
import { aliasesOf } from './fhir/references.js';
import { isImportedType, loadDefinitions, validationProblems } from './fhir/validate.js';
import * as Q from './import-sql.js';

/**
 * `records import`: FHIR R4 files into the patient's medical record, in three stages. Staging reads
 * the files as streams and upserts each valid resource's fragment in batches (memory holds one
 * batch); resolving gives each resource its patient; assembling rebuilds the items of every patient
 * the run touched, one patient at a time.
 */

export interface RejectedEntry {
  file: string;
  /** FILE:LINE or FILE#entry[N] (line L); the file itself when it could not be read at all. */
  entry: string;
  /** The FHIR path of the problem (e.g. Observation.value[x].value); empty when the entry is no resource. */
  path: string;
  message: string;
}

export interface ImportSummary {
  /** Resources new to the store. */
  imported: number;
  /** Resources that replaced an earlier version of themselves (same source, type and id). */
  updated: number;
  /** The first MAX_REPORTED rejected entries; rejectedTotal counts them all. */
  rejected: RejectedEntry[];
  rejectedTotal: number;
  /** Resources of types the record does not use, by type. */
  skipped: Record<string, number>;
  /** Patients whose items were assembled again. */
  patients: number;
  files: number;
  seconds: number;
}

export interface ImportProgress {
  stage: 'reading' | 'assembling';
  filesDone: number;
  files: number;
  resources: number;
  patientsDone: number;
  perSecond: number;
}

export interface ImportOptions {
  /** The МИС the files come from: resources are unique per source, type and id. */
  source: string;
  /** The organization (OID) whose api keys may see the imported patients. */
  organization: string;
  writePatients: PatientWriter;
  progress?: (progress: ImportProgress) => void;
  /** Resources per staged batch. */
  batchSize?: number;
}

export const MAX_REPORTED = 1000;
const MAX_PROBLEMS_PER_RESOURCE = 10;
const PATIENTS_PER_PAGE = 50;

interface Staged {
  type: string;
  id: string;
  origin: string;
  fragment: string;
  refs: string;
  subject: string | null;
}

class Batch {
  resources = new Map<string, Staged>();
  aliases = new Map<string, { type: string; id: string }>();
  patients = new Map<string, ImportedPatient>();
  replacedInBatch = 0;

  get size(): number {
    return this.resources.size;
  }
}

export async function importFhirFiles(sql: Sql, files: readonly string[], options: ImportOptions): Promise<ImportSummary> {
  await loadDefinitions();
  const started = Date.now();
  const importedAt = new Date().toISOString();
  const runId = (await sql.row<{ id: string }>(Q.START_RUN, [options.source]))!.id;
  const summary: ImportSummary = { imported: 0, updated: 0, rejected: [], rejectedTotal: 0, skipped: {}, patients: 0, files: files.length, seconds: 0 };
  const reject = (entry: RejectedEntry) => {
    summary.rejectedTotal += 1;
    if (summary.rejected.length < MAX_REPORTED) summary.rejected.push(entry);
  };
  const batchSize = options.batchSize ?? 500;
  let resources = 0;
  let filesDone = 0;
  let lastProgress = 0;
  const report = (stage: ImportProgress['stage'], patientsDone = 0) => {
    if (!options.progress) return;
    const now = Date.now();
    if (now - lastProgress < 1000 && !(stage === 'assembling' && patientsDone === 0)) return;
    lastProgress = now;
    options.progress({ stage, filesDone, files: files.length, resources, patientsDone, perSecond: resources / Math.max((now - started) / 1000, 0.001) });
  };

  let batch = new Batch();
  // One batch is written while the next is read: the database's work overlaps the parsing and validating.
  let writing: Promise<void> = Promise.resolve();
  const flush = async () => {
    if (batch.size === 0 && batch.patients.size === 0) return;
    const current = batch;
    batch = new Batch();
    await writing;
    writing = stageBatch(sql, options, runId, current, summary);
    // Awaited at the next flush; a failure meanwhile must not count as unhandled.
    writing.catch(() => undefined);
  };

  for (const file of patientsFirst(files)) {
    const name = path.basename(file);
    try {
      for await (const entry of readFhirFile(file, isImportedType)) {
        stageEntry(entry, name, batch, { importedAt, reject, skipped: summary.skipped });
        resources += 1;
        if (batch.size >= batchSize) await flush();
        report('reading');
      }
    } catch (error) {
      if (!(error instanceof UnreadableFile)) throw error;
      reject({ file: name, entry: name, path: '', message: error.message });
    }
    filesDone += 1;
  }
  await flush();
  await writing;
  report('reading');

  await sql.run(Q.RESOLVE_SUBJECTS, [runId]);
  for (const orphan of await sql.rows<{ resource_type: string; fhir_id: string; origin: string; new: boolean }>(Q.DROP_UNRESOLVED, [runId])) {
    // Staged, then taken out again: it counts as rejected only.
    if (orphan.new) summary.imported -= 1;
    else summary.updated -= 1;
    reject({ file: orphan.origin.split(/[:#]/)[0]!, entry: orphan.origin, path: `${orphan.resource_type}.subject`, message: 'references no imported Patient' });
  }
  await sql.run(Q.COLLECT_PATIENTS, [runId, options.source]);
  let after = '';
  for (;;) {
    const page = await sql.rows<{ patient_id: string }>(Q.NEXT_PATIENTS, [runId, after, PATIENTS_PER_PAGE]);
    if (page.length === 0) break;
    for (const { patient_id: patientId } of page) {
      await assembleAndStore(sql, patientId);
      summary.patients += 1;
      report('assembling', summary.patients);
    }
    after = page.at(-1)!.patient_id;
  }
  await sql.run(Q.FORGET_PATIENTS, [runId]);
  summary.seconds = Math.round((Date.now() - started) / 100) / 10;
  await sql.run(Q.FINISH_RUN, [runId, JSON.stringify({ ...summary, rejected: summary.rejected.slice(0, 20) })]);
  return summary;
}

/** Bulk Data files are named by resource type: the patients' and the shared resources' files go first, so that the others resolve as they are staged. */
function patientsFirst(files: readonly string[]): string[] {
  const rank = (file: string) => (/^(Patient|Practitioner|Organization|Location|Medication)[.]/.test(path.basename(file)) && file.endsWith('.ndjson') ? 0 : 1);
  return [...files].sort((a, b) => rank(a) - rank(b));
}

interface EntryContext {
  importedAt: string;
  reject: (entry: RejectedEntry) => void;
  skipped: Record<string, number>;
}

/** One entry validated and mapped into the batch, or rejected (with its FHIR path), or skipped (a type the record does not use). */
function stageEntry(entry: FhirEntry, file: string, batch: Batch, context: EntryContext): void {
  const rejectEntry = (problemPath: string, message: string) => context.reject({ file, entry: entry.origin, path: problemPath, message });
  if (entry.skippedType) {
    context.skipped[entry.skippedType] = (context.skipped[entry.skippedType] ?? 0) + 1;
    return;
  }
  const resource = entry.resource;
  if (!resource) return rejectEntry('', entry.problem ?? 'no resource');
  const type = resource.resourceType;
  if (typeof type !== 'string') return rejectEntry('', 'no resourceType');
  if (!isImportedType(type)) {
    context.skipped[type] = (context.skipped[type] ?? 0) + 1;
    return;
  }
  if (resource.id === undefined && entry.fullUrl?.startsWith('urn:uuid:')) resource.id = entry.fullUrl.slice('urn:uuid:'.length);
  const problems = validationProblems(resource);
  if (typeof resource.id !== 'string') problems.unshift({ path: `${type}.id`, message: 'a resource id is required (re-imports update by it)' });
  if (problems.length > 0) {
    for (const problem of problems.slice(0, MAX_PROBLEMS_PER_RESOURCE)) rejectEntry(problem.path, problem.message);
    return;
  }
  const id = resource.id as string;
  if (type === 'Patient') {
    const mapped = patientOf(resource);
    if ('problem' in mapped) return rejectEntry(mapped.problem.path, mapped.problem.message);
    batch.patients.set(id, mapped.patient);
  }
  const mapped = mapResource(type, resource, { importedAt: context.importedAt });
  if (PATIENT_SCOPED.has(type) && !mapped.subject) return rejectEntry(`${type}.subject`, 'a reference to the patient is required');
  const key = `${type}/${id}`;
  if (batch.resources.has(key)) batch.replacedInBatch += 1;
  batch.resources.set(key, { type, id, origin: entry.origin, fragment: JSON.stringify(mapped.fragment), refs: mapped.refs.join('\n'), subject: mapped.subject ?? null });
  for (const alias of aliasesOf({ resourceType: type, id, identifier: resource.identifier }, entry.fullUrl)) batch.aliases.set(alias, { type, id });
}

async function stageBatch(sql: Sql, options: ImportOptions, runId: string, batch: Batch, summary: ImportSummary): Promise<void> {
  // Patients go to the patient source first, so that a staged resource never names a patient it lacks.
  if (batch.patients.size > 0) await options.writePatients([...batch.patients.values()]);
  const staged = [...batch.resources.values()];
  const aliases = [...batch.aliases.entries()];
  await sql.transaction(async (trx) => {
    // Aliases first: a resource of this batch whose patient is in it too takes its patient on insert.
    await trx.run(Q.STAGE_ALIASES, [options.source, aliases.map(([alias]) => alias), aliases.map(([, target]) => target.type), aliases.map(([, target]) => target.id)]);
    const rows = await trx.rows<{ inserted: boolean }>(Q.STAGE_RESOURCES, [
      options.source,
      staged.map((row) => row.type),
      staged.map((row) => row.id),
      staged.map((row) => row.origin),
      staged.map((row) => row.fragment),
      staged.map((row) => row.refs),
      runId,
      staged.map((row) => row.subject),
    ]);
    for (const row of rows) {
      if (row.inserted) summary.imported += 1;
      else summary.updated += 1;
    }
    summary.updated += batch.replacedInBatch;
    if (batch.patients.size > 0) await trx.run(Q.STAGE_PATIENT_ORGANIZATIONS, [[...batch.patients.keys()], options.organization]);
  });
}

/** One patient's items rebuilt from the store and replaced, in one transaction. */
export async function assembleAndStore(sql: Sql, patientId: string): Promise<AssembledRecord> {
  const rows = await sql.rows<ResourceRow & { refs: string[] }>(Q.PATIENT_RESOURCES, [patientId]);
  const wanted = new Map<string, { source: string; alias: string }>();
  for (const row of rows) {
    for (const alias of row.refs) wanted.set(`${row.source}\u0000${alias}`, { source: row.source, alias });
  }
  const resolved = new Map<string, Resolved>();
  // Shared resources name others in turn (a Location its organization, an organization its parent): a few rounds.
  for (let round = 0; round < 3 && wanted.size > 0; round += 1) {
    const queries = [...wanted.values()];
    wanted.clear();
    const found = await sql.rows<Resolved & { source: string; alias: string }>(Q.RESOLVE_ALIASES, [queries.map((query) => query.source), queries.map((query) => query.alias)]);
    for (const row of found) {
      resolved.set(`${row.source}\u0000${row.alias}`, row);
      const next = (row.fragment as { organization?: { alias: string }; partOf?: { alias: string } } | null) ?? {};
      for (const reference of [next.organization, next.partOf]) {
        if (reference && !resolved.has(`${row.source}\u0000${reference.alias}`)) wanted.set(`${row.source}\u0000${reference.alias}`, { source: row.source, alias: reference.alias });
      }
    }
  }
  const record = assemblePatient(patientId, rows, (source, alias) => resolved.get(`${source}\u0000${alias}`));
  await sql.transaction((trx) => storeRecord(trx, patientId, record));
  return record;
}

async function storeRecord(trx: Queryable, patientId: string, record: AssembledRecord): Promise<void> {
  await trx.run(Q.CLEAR_APPOINTMENTS, [patientId]);
  await trx.run(Q.CLEAR_RESULTS, [patientId]);
  await trx.run(Q.CLEAR_REPORTS, [patientId]);
  await trx.run(Q.CLEAR_PRESCRIPTIONS, [patientId]);
  const json = <M>(items: Array<{ message: M }>) => items.map((item) => JSON.stringify(item.message));
  if (record.appointments.length > 0) {
    const items = record.appointments;
    await trx.run(Q.INSERT_APPOINTMENTS, [patientId, items.map((item) => item.id), items.map((item) => item.created), items.map((item) => item.start), items.map((item) => item.businessId), json(items)]);
  }
  if (record.results.length > 0) {
    const items = record.results;
    await trx.run(Q.INSERT_RESULTS, [patientId, items.map((item) => item.id), items.map((item) => item.created), items.map((item) => item.start), items.map((item) => item.businessId), json(items)]);
  }
  if (record.reports.length > 0) {
    const items = record.reports;
    await trx.run(Q.INSERT_REPORTS, [patientId, items.map((item) => item.id), items.map((item) => item.created), items.map((item) => item.businessId), json(items)]);
  }
  if (record.prescriptions.length > 0) {
    const items = record.prescriptions;
    await trx.run(Q.INSERT_PRESCRIPTIONS, [patientId, items.map((item) => item.id), items.map((item) => item.created), items.map((item) => item.businessId), items.map((item) => (item.cd10 ?? []).join('\n')), json(items)]);
  }
}
