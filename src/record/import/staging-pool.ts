import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { loadDefinitions } from '../fhir/validate.ts';
import { stageEntries, type EntryToStage, type StagedBatch } from './stage-entries.ts';
import type { StagingAnswer, StagingRequest } from './staging-worker.ts';

/**
 * Where the import's CPU work runs: parsing, validating and mapping the entries (stage-entries.ts)
 * took three quarters of the import's CPU time in one thread (profiled with --cpu-prof: Medplum's
 * validator about a third of it, the garbage collector a quarter). A pool of worker threads can do
 * it in parallel while the import's own thread reads the files and writes to the database; with 0
 * threads it runs in the calling thread.
 */

/**
 * Threads by default: none. Measured on the 2-core machine this project is benchmarked on (256 MiB
 * of Synthea NDJSON, README "The medical record from FHIR R4"): with 1 or 2 threads the import's
 * peak resident memory was 326 and 343-359 MiB (target < 300 MB: each thread holds the definitions
 * and a heap of its own)
 * and its CPU time 10-20% more (batches cloned between threads, heaps collected apart), while the
 * two cores were already shared with PostgreSQL. `records import --threads N` takes the pool where
 * cores and memory are to spare.
 */
export const STAGING_THREADS = 0;

/**
 * Each thread's heap. The young generation is where a batch's garbage dies (the parsed resources,
 * the validator's walk): at V8's default a thread holds tens of megabytes more; at 2 MiB the
 * collector runs several times per batch. The old generation holds the definitions and at most
 * one batch, whose largest entry may be 16 MiB of text.
 */
const THREAD_YOUNG_MB = 12;
const THREAD_OLD_MB = 192;

// The worker is TypeScript run by Node itself (types stripped) from src/, JavaScript in dist/.
const WORKER_URL = new URL(`./staging-worker${path.extname(new URL(import.meta.url).pathname)}`, import.meta.url);

/** A thread and the answers it owes, in the order it was sent the batches. */
class StagingThread {
  private readonly thread: Worker;
  private readonly owed: Array<{ resolve: (batch: StagedBatch) => void; reject: (error: Error) => void }> = [];
  readonly ready: Promise<void>;
  private failure: Error | undefined;

  constructor() {
    // No execArgv: the parent's loaders (tsx) and heap flags are not the thread's.
    this.thread = new Worker(WORKER_URL, {
      execArgv: [],
      resourceLimits: { maxYoungGenerationSizeMb: THREAD_YOUNG_MB, maxOldGenerationSizeMb: THREAD_OLD_MB },
    });
    this.ready = new Promise((resolve, reject) => {
      this.thread.once('message', () => resolve());
      this.thread.once('error', reject);
      this.thread.once('exit', (code) => reject(new Error(`a staging thread exited with code ${code} while starting`)));
    });
    this.ready.then(
      () => this.thread.on('message', (answer: StagingAnswer) => this.answer(answer)),
      () => undefined,
    );
    this.thread.on('error', (error) => this.fail(error));
    this.thread.on('exit', (code) => this.fail(new Error(`a staging thread exited with code ${code}`)));
  }

  get load(): number {
    return this.owed.length;
  }

  stage(request: StagingRequest): Promise<StagedBatch> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.owed.push({ resolve, reject });
      this.thread.postMessage(request);
    });
  }

  private answer(answer: StagingAnswer): void {
    if ('ready' in answer) return;
    const waiter = this.owed.shift();
    if (!waiter) return;
    if ('error' in answer) waiter.reject(new Error(`staging failed: ${answer.error}`));
    else waiter.resolve(answer.batch);
  }

  private fail(error: Error): void {
    this.failure ??=
      (error as NodeJS.ErrnoException).code === 'ERR_WORKER_OUT_OF_MEMORY' ? new Error(`a staging thread ran out of its ${THREAD_OLD_MB} MiB heap`) : error;
    for (const waiter of this.owed.splice(0)) waiter.reject(this.failure);
  }

  async stop(): Promise<void> {
    this.thread.removeAllListeners('exit');
    await this.thread.terminate();
  }
}

export class StagingPool {
  private constructor(private readonly threads: StagingThread[]) {}

  /** Starts `threads` threads and waits until each has loaded the definitions; 0: the definitions are loaded here. */
  static async start(threads: number): Promise<StagingPool> {
    if (threads === 0) {
      await loadDefinitions();
      return new StagingPool([]);
    }
    const pool = new StagingPool(Array.from({ length: threads }, () => new StagingThread()));
    try {
      await Promise.all(pool.threads.map((thread) => thread.ready));
    } catch (error) {
      await pool.stop();
      throw error;
    }
    return pool;
  }

  /** Threads that may work at once: what the caller keeps in flight is a small multiple of it. */
  get size(): number {
    return Math.max(1, this.threads.length);
  }

  /** Stages a batch on the least busy thread (or here). */
  stage(entries: EntryToStage[], importedAt: string): Promise<StagedBatch> {
    if (this.threads.length === 0) return Promise.resolve(stageEntries(entries, importedAt));
    const thread = this.threads.reduce((least, candidate) => (candidate.load < least.load ? candidate : least));
    return thread.stage({ entries, importedAt });
  }

  async stop(): Promise<void> {
    await Promise.all(this.threads.map((thread) => thread.stop()));
  }
}
