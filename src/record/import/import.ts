import path from 'node:path';
import type { Sql } from '../../db/sql.js';
import { assembleAndStore } from '../assembly/store.js';
import { UnreadableFile } from '../fhir/entries.ts';
import { readEntryTexts } from '../fhir/read.ts';
import { isImportedType } from '../fhir/validate.ts';
import type { PatientWriter } from '../mapping/patient.ts';
import * as Q from './import-sql.js';
import type { EntryToStage, RejectedEntry, StagedBatch } from './stage-entries.ts';
import { STAGING_THREADS, StagingPool } from './staging-pool.js';
import { writeStagedBatch, type BatchTarget } from './write-batch.js';

export type { RejectedEntry };

/**
 * `records import`: FHIR R4 files into the patient's medical record, in three stages. Staging reads
 * the files as streams, has each batch of entries validated and mapped (in this thread, or by a
 * pool of worker threads: staging-pool.ts), and upserts each batch's fragments in file order, one batch written while the
 * next ones are read and staged (memory holds a few batches); resolving gives each resource its
 * patient; assembling rebuilds the items of every patient the run touched, a few patients at a time.
 */

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
  /** Entries per staged batch. */
  batchSize?: number;
  /** Worker threads that validate and map (default STAGING_THREADS, 0: this thread). */
  threads?: number;
}

export const MAX_REPORTED = 1000;
const DEFAULT_BATCH_SIZE = 500;
/** A batch is sent off sooner when its texts reach this many characters (entries may be large). */
const MAX_BATCH_CHARS = 4 * 1024 * 1024;
/** Batches staged or being staged, per thread, beyond the one being written: enough to keep the threads busy. */
const IN_FLIGHT_PER_THREAD = 2;
const PATIENTS_PER_PAGE = 50;
/** Patients assembled at once: their reads and writes overlap (each is a few round trips to the database). */
const ASSEMBLING_AT_ONCE = 3;

export async function importFhirFiles(sql: Sql, files: readonly string[], options: ImportOptions): Promise<ImportSummary> {
  const started = Date.now();
  const pool = await StagingPool.start(options.threads ?? STAGING_THREADS);
  try {
    const run = await ImportRun.start(sql, files, options, started);
    await run.stageFiles(pool);
    await run.resolveSubjects();
    await run.assemblePatients();
    return await run.finish();
  } finally {
    await pool.stop();
  }
}

class ImportRun {
  readonly summary: ImportSummary;
  private readonly importedAt = new Date().toISOString();
  private resources = 0;
  private filesDone = 0;
  private lastProgress = 0;

  private constructor(
    private readonly sql: Sql,
    private readonly files: readonly string[],
    private readonly options: ImportOptions,
    private readonly runId: string,
    private readonly started: number,
  ) {
    this.summary = { imported: 0, updated: 0, rejected: [], rejectedTotal: 0, skipped: {}, patients: 0, files: files.length, seconds: 0 };
  }

  static async start(sql: Sql, files: readonly string[], options: ImportOptions, started: number): Promise<ImportRun> {
    const runId = (await sql.row<{ id: string }>(Q.START_RUN, [options.source]))!.id;
    return new ImportRun(sql, files, options, runId, started);
  }

  /** Every file read, staged and written, batch by batch in file order. */
  async stageFiles(pool: StagingPool): Promise<void> {
    const target: BatchTarget = {
      source: this.options.source,
      organization: this.options.organization,
      runId: this.runId,
      writePatients: this.options.writePatients,
    };
    const pipeline = new StagingPipeline(pool, this.importedAt, this.options.batchSize ?? DEFAULT_BATCH_SIZE, async (batch) =>
      this.count(batch, await writeStagedBatch(this.sql, target, batch)),
    );
    for (const file of patientsFirst(this.files)) {
      try {
        for await (const entry of readEntryTexts(file, isImportedType)) {
          this.resources += 1;
          if ('skippedType' in entry) this.skip(entry.skippedType);
          else await pipeline.add(entry);
          this.report('reading');
        }
      } catch (error) {
        if (!(error instanceof UnreadableFile)) throw error;
        // Rejected in its place among the entries: after those of the file read before it.
        const name = path.basename(file);
        await pipeline.add({ file: name, origin: name, problem: error.message });
      }
      this.filesDone += 1;
    }
    await pipeline.finish();
    this.report('reading', true);
  }

  /** The run's resources staged before their patient take it now; those whose subject names no imported Patient are taken out again, and rejected. */
  async resolveSubjects(): Promise<void> {
    await this.sql.run(Q.RESOLVE_SUBJECTS, [this.runId]);
    for (const orphan of await this.sql.rows<{ resource_type: string; fhir_id: string; origin: string; new: boolean }>(Q.DROP_UNRESOLVED, [this.runId])) {
      if (orphan.new) this.summary.imported -= 1;
      else this.summary.updated -= 1;
      this.reject({
        file: orphan.origin.split(/[:#]/)[0]!,
        entry: orphan.origin,
        path: `${orphan.resource_type}.subject`,
        message: 'references no imported Patient',
      });
    }
  }

  /** The items of every patient the run touched, rebuilt, page by page of patients. */
  async assemblePatients(): Promise<void> {
    await this.sql.run(Q.COLLECT_PATIENTS, [this.runId, this.options.source]);
    this.report('assembling', true);
    let after = '';
    for (;;) {
      const page = await this.sql.rows<{ patient_id: string }>(Q.NEXT_PATIENTS, [this.runId, after, PATIENTS_PER_PAGE]);
      if (page.length === 0) break;
      await eachAtOnce(page, ASSEMBLING_AT_ONCE, async ({ patient_id: patientId }) => {
        await assembleAndStore(this.sql, patientId);
        this.summary.patients += 1;
        this.report('assembling');
      });
      after = page.at(-1)!.patient_id;
    }
    this.report('assembling', true);
    await this.sql.run(Q.FORGET_PATIENTS, [this.runId]);
  }

  async finish(): Promise<ImportSummary> {
    this.summary.seconds = Math.round((Date.now() - this.started) / 100) / 10;
    await this.sql.run(Q.FINISH_RUN, [this.runId, JSON.stringify({ ...this.summary, rejected: this.summary.rejected.slice(0, 20) })]);
    return this.summary;
  }

  private count(batch: StagedBatch, written: { imported: number; updated: number }): void {
    this.summary.imported += written.imported;
    this.summary.updated += written.updated;
    for (const rejected of batch.rejected) this.reject(rejected);
    for (const [type, count] of Object.entries(batch.skipped)) this.skip(type, count);
  }

  private reject(entry: RejectedEntry): void {
    this.summary.rejectedTotal += 1;
    if (this.summary.rejected.length < MAX_REPORTED) this.summary.rejected.push(entry);
  }

  private skip(type: string, count = 1): void {
    this.summary.skipped[type] = (this.summary.skipped[type] ?? 0) + count;
  }

  /** At most once a second; `final` at the end of each stage (and as assembling starts), so that the last line shows its totals. */
  private report(stage: ImportProgress['stage'], final = false): void {
    if (!this.options.progress) return;
    const now = Date.now();
    if (!final && now - this.lastProgress < 1000) return;
    this.lastProgress = now;
    this.options.progress({
      stage,
      filesDone: this.filesDone,
      files: this.files.length,
      resources: this.resources,
      patientsDone: this.summary.patients,
      perSecond: this.resources / Math.max((now - this.started) / 1000, 0.001),
    });
  }
}

/**
 * Entries gathered into batches, staged by the pool, and written in the order they were read: the
 * reading waits when IN_FLIGHT_PER_THREAD batches per thread are out, one batch is written while the
 * next are staged.
 */
class StagingPipeline {
  private pending: EntryToStage[] = [];
  private pendingChars = 0;
  private readonly inFlight: Array<Promise<StagedBatch>> = [];
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly pool: StagingPool,
    private readonly importedAt: string,
    private readonly batchSize: number,
    private readonly write: (batch: StagedBatch) => Promise<void>,
  ) {}

  async add(entry: EntryToStage): Promise<void> {
    this.pending.push(entry);
    if ('text' in entry) this.pendingChars += entry.text.length;
    if (this.pending.length >= this.batchSize || this.pendingChars >= MAX_BATCH_CHARS) await this.send();
  }

  async finish(): Promise<void> {
    await this.send();
    while (this.inFlight.length > 0) await this.writeNext();
    await this.writing;
  }

  private async send(): Promise<void> {
    if (this.pending.length === 0) return;
    const staged = this.pool.stage(this.pending, this.importedAt);
    // Awaited in turn by writeNext; a failure meanwhile must not count as unhandled.
    staged.catch(() => undefined);
    this.inFlight.push(staged);
    this.pending = [];
    this.pendingChars = 0;
    if (this.inFlight.length >= this.pool.size * IN_FLIGHT_PER_THREAD) await this.writeNext();
  }

  private async writeNext(): Promise<void> {
    const batch = await this.inFlight.shift()!;
    await this.writing;
    this.writing = this.write(batch);
    this.writing.catch(() => undefined);
  }
}

/** Bulk Data files are named by resource type: the patients' and the shared resources' files go first, so that the others resolve as they are staged. */
function patientsFirst(files: readonly string[]): string[] {
  const rank = (file: string) => (/^(Patient|Practitioner|Organization|Location|Medication)[.]/.test(path.basename(file)) && file.endsWith('.ndjson') ? 0 : 1);
  return [...files].sort((a, b) => rank(a) - rank(b));
}

/** `work` on every item, at most `atOnce` at a time. */
async function eachAtOnce<T>(items: readonly T[], atOnce: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(atOnce, items.length) }, lane));
}
