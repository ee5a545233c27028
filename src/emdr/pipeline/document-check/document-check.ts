import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { CallbackErrorItem } from '../../errors/codes.js';
import type { NamedSignature, SignatureFinding } from '../../signatures/verify.js';
import { FairQueue } from '../../../work/fair-queue.js';
import type {
  DocumentCheckAnswer,
  DocumentCheckRequest,
  DocumentCheckWorkerData,
  DocumentCheckWorkerReady,
  SignaturesToCheck,
} from './document-check-worker.js';

/**
 * The checks of a RegisterDocument's document at acceptance: the XML's well-formedness and the
 * detached signatures (GOST R 34.10-2012, RSA, ECDSA; signatures/) over its bytes. Both run in one
 * worker thread (document-check-worker.ts) fed the same slices, so the document is read from the
 * database and moved to a thread once. Bounded three ways: elements nested deeper than
 * MAX_XML_DEPTH fail the XML, both checks together get `timeoutMs` (XML_CHECK_TIMEOUT), and the
 * worker's heap is capped, so the event loop keeps answering meanwhile. A small pool of such workers
 * serves every check (a thread costs tens of milliseconds and megabytes to start); a worker whose
 * document ran out of time or memory is ended and replaced. A freed worker goes to the waiting
 * document of the clinic (`turnOf`) with the fewest checks under way, in turn among equals: a
 * clinic's backlog then holds at most the workers no other clinic waits for, and another clinic's
 * document waits for about one check, whatever the backlog's checks cost; a clinic with no check
 * under way waits for none, on the spare worker (SPARE_WORKERS). (Turns by document alone
 * let expensive checks alternate with cheap ones: a clinic got a worker once per check of the
 * other's, and one sending faster than that fell behind without bound, issue 21 M2.) A document
 * arrives whole (a small one) or in slices streamed from the database, never as one string.
 */

/** The documented limit of element nesting (libxml2's default limit too); CDA documents nest a few dozen levels. */
export const MAX_XML_DEPTH = 256;

/** Memory of a worker's heap: the parser holds one text node or attribute value at a time, at most the document. */
const WORKER_HEAP_MB = 256;
/** Its young generation: slices of 48 KiB need little, and V8's default roughly doubles the worker's footprint (measured: +45 MiB peak for a 20 MiB document, +25..42 MiB with 4). */
const WORKER_YOUNG_MB = 4;

// The worker is TypeScript run by Node itself (types stripped) from src/, JavaScript in dist/.
const WORKER_URL = new URL(`./document-check-worker${path.extname(new URL(import.meta.url).pathname)}`, import.meta.url);

/** Workers of a pool: one per core (a check is CPU work), at least one. */
export const DOCUMENT_CHECK_WORKERS = Math.max(1, Math.min(4, os.availableParallelism()));

/**
 * Workers beyond those, each only for a clinic with no check under way while the others all check
 * other clinics' documents: a clinic that sends now and then does not wait for a backlog's check to
 * end (up to MAX_SIGNATURE_VERIFICATIONS of GOST-512 each, issue 21 M2); its check shares the cores
 * with theirs instead. Started with the others: started when first needed, in a burst, its start took
 * the CPU the burst needed and the first clinic to have it waited for its modules (M3: 364 ms).
 */
const SPARE_WORKERS = 1;

export interface DocumentCheckOptions {
  /** Both checks together (XML_CHECK_TIMEOUT), from when a worker takes the document. */
  timeoutMs: number;
  /**
   * The signatures to verify over the document (none: the XML check alone), or how to read them,
   * once a worker takes the document: only the checks under way hold theirs.
   */
  signatures?: NamedSignature[] | (() => Promise<NamedSignature[]>);
  /** The document's creation (epoch ms): the signatures' certificates must be valid at it. */
  documentCreatedAt?: number;
  /** Whose document it is (a clinic): a free worker goes to the waiting clinic with the fewest checks under way. */
  turnOf?: string;
}

/** What the checks found: why the XML fails (undefined: it passed), each signature that fails, or the limit that stopped the checks. */
export interface DocumentCheckOutcome {
  xmlFailure: string | undefined;
  signatureFindings: SignatureFinding[];
  /** The checks did not finish within their time or memory: neither the XML nor a signature is known to be wrong. */
  limitFailure?: string;
}

/** What the pool's workers are given: the depth limit, and the trust store's certificates (DER). */
export interface DocumentCheckSettings {
  maxDepth: number;
  trustAnchors?: readonly Uint8Array[];
}

/**
 * How long a new worker may take to load its modules before a check gives up on it. A generous
 * bound: it only stops a check from waiting forever on a worker that never comes up.
 */
const WORKER_START_LIMIT_MS = 120_000;

/** A worker and the answer it owes for the document it checks. */
class CheckWorker {
  readonly thread: Worker;
  /** Settles when the worker has loaded its modules (a second or more on a loaded machine), or died first. */
  readonly ready: Promise<void>;
  private answer: ((answer: DocumentCheckAnswer) => void) | undefined;
  private fail: ((error: Error) => void) | undefined;
  /** Set once the worker said it is up: later checks skip the start limit's timer. */
  private up = false;
  dead = false;

  constructor(settings: DocumentCheckSettings) {
    const workerData: DocumentCheckWorkerData = { maxDepth: settings.maxDepth, ...(settings.trustAnchors ? { trustAnchors: [...settings.trustAnchors] } : {}) };
    // No execArgv: the parent's loaders (tsx) are not needed to run the worker.
    this.thread = new Worker(WORKER_URL, {
      workerData,
      execArgv: [],
      resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB, maxYoungGenerationSizeMb: WORKER_YOUNG_MB },
    });
    this.thread.unref();
    let started: () => void;
    let failedToStart: (error: Error) => void;
    this.ready = new Promise<void>((resolve, reject) => {
      started = resolve;
      failedToStart = reject;
    });
    // Asked for only by a check; a worker that dies unasked must not be an unhandled rejection.
    this.ready.catch(() => {});
    this.thread.on('message', (message: DocumentCheckAnswer | DocumentCheckWorkerReady) => {
      if ('ready' in message) {
        this.up = true;
        started();
      } else this.answer?.(message);
    });
    const die = (error: Error) => {
      this.dead = true;
      failedToStart(error);
      this.fail?.(error);
    };
    this.thread.on('error', die);
    this.thread.on('exit', (code) => die(new Error(`the document check worker exited with code ${code}`)));
  }

  /** Waits for the worker to come up, within WORKER_START_LIMIT_MS. */
  async started(): Promise<void> {
    if (this.up) return;
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the document check worker did not start within ${WORKER_START_LIMIT_MS / 1000} s`)), WORKER_START_LIMIT_MS);
    });
    try {
      await Promise.race([this.ready, limit]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Posts one request and waits for the worker's answer (or its failure). */
  ask(request: DocumentCheckRequest): Promise<DocumentCheckAnswer> {
    return new Promise((resolve, reject) => {
      this.answer = resolve;
      this.fail = reject;
      if ('chunk' in request) {
        const chunk = movable(request.chunk);
        this.thread.postMessage({ chunk }, [chunk.buffer as ArrayBuffer]);
      } else if ('document' in request) {
        const document = movable(request.document);
        this.thread.postMessage({ ...request, document }, [document.buffer as ArrayBuffer]);
      } else this.thread.postMessage(request);
    });
  }

  tell(request: DocumentCheckRequest): void {
    this.thread.postMessage(request);
  }
}

/**
 * Bytes that can be moved to the worker without a copy: a buffer that is its whole ArrayBuffer (a
 * slice read from the database) goes as it is; a view into a larger one (which a message would copy
 * whole, and which may be Node's shared pool) is copied first. Moved, they leave this thread at once.
 */
function movable(bytes: Uint8Array): Uint8Array {
  const ownsBuffer =
    bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.byteLength > 0 && !(bytes.buffer instanceof SharedArrayBuffer);
  return ownsBuffer ? bytes : new Uint8Array(bytes);
}

const timedOut = Symbol('timed out');

export class DocumentCheckPool {
  private readonly idle: CheckWorker[] = [];
  private readonly waiting = new FairQueue<(worker: CheckWorker) => void>();
  /** Checks under way, by clinic: the waiting clinic with the fewest gets the next worker. */
  private readonly running = new Map<string, number>();
  private started = 0;

  private readonly settings: DocumentCheckSettings;

  constructor(
    private readonly size: number = DOCUMENT_CHECK_WORKERS,
    settings: Partial<DocumentCheckSettings> = {},
  ) {
    this.settings = { maxDepth: MAX_XML_DEPTH, ...settings };
  }

  /** Whether the workers check certificate chains (SIGNATURE_TRUST_STORE is set). */
  get checksChains(): boolean {
    return this.settings.trustAnchors !== undefined;
  }

  /** Starts every worker now (a thread costs tens of milliseconds and megabytes to start), rather than at the first documents. */
  start(): void {
    while (this.started < this.size + SPARE_WORKERS) {
      this.started += 1;
      this.idle.push(new CheckWorker(this.settings));
    }
  }

  /** The XML and signature checks of a document: the whole document, or its slices. */
  async check(document: Uint8Array | AsyncIterable<Uint8Array>, options: DocumentCheckOptions): Promise<DocumentCheckOutcome> {
    const now = Date.now();
    // The budget is the check's own: it starts when a started worker takes the document, not while the
    // document waits for one, nor while a new worker loads its modules (140-210 ms on a quiet machine,
    // more under load: enough to spend a short budget and refuse a sound document as DOCUMENT_CHECK_LIMIT).
    const turnOf = options.turnOf ?? '';
    const worker = await this.acquire(turnOf);
    let signatures: SignaturesToCheck;
    try {
      signatures = {
        signatures: typeof options.signatures === 'function' ? await options.signatures() : (options.signatures ?? []),
        now,
        ...(options.documentCreatedAt === undefined ? {} : { documentCreatedAt: options.documentCreatedAt }),
      };
    } catch (error) {
      // The signatures could not be read (the database, say): the worker goes back as it was.
      this.release(worker, !worker.dead, turnOf);
      throw error;
    }
    let timer: NodeJS.Timeout | undefined;
    let healthy = true;
    try {
      await worker.started();
      const deadline = new Promise<typeof timedOut>((resolve) => (timer = setTimeout(() => resolve(timedOut), options.timeoutMs)));
      const outcome = await Promise.race([this.run(worker, document, signatures, deadline), deadline]);
      if (outcome === timedOut) {
        healthy = false;
        return unfinished(`within ${options.timeoutMs / 1000} s, the limit`, signatures);
      }
      return { xmlFailure: outcome.failure, signatureFindings: outcome.findings };
    } catch (error) {
      healthy = false;
      if ((error as NodeJS.ErrnoException).code === 'ERR_WORKER_OUT_OF_MEMORY') return unfinished(`within ${WORKER_HEAP_MB} MiB`, signatures);
      throw error;
    } finally {
      clearTimeout(timer);
      this.release(worker, healthy && !worker.dead, turnOf);
    }
  }

  private async run(
    worker: CheckWorker,
    document: Uint8Array | AsyncIterable<Uint8Array>,
    signatures: SignaturesToCheck,
    deadline: Promise<typeof timedOut>,
  ): Promise<Extract<DocumentCheckAnswer, { done: true }> | typeof timedOut> {
    if (document instanceof Uint8Array) return worker.ask({ document, signatures }) as Promise<Extract<DocumentCheckAnswer, { done: true }>>;
    worker.tell({ begin: signatures });
    const iterator = document[Symbol.asyncIterator]();
    try {
      for (;;) {
        const next = await Promise.race([iterator.next(), deadline]);
        if (next === timedOut) return timedOut;
        const answer = await worker.ask(next.done ? { end: true } : { chunk: next.value });
        if ('done' in answer) return answer;
      }
    } finally {
      await iterator.return?.();
    }
  }

  /** A worker for a check of `turnOf`'s, now or when one is free and it is that clinic's turn. */
  private acquire(turnOf: string): Promise<CheckWorker> {
    const granted = (worker: CheckWorker) => {
      this.running.set(turnOf, (this.running.get(turnOf) ?? 0) + 1);
      return worker;
    };
    if (!this.mayCheck(this.running.get(turnOf) ?? 0)) return new Promise((resolve) => this.waiting.push(turnOf, (next) => resolve(granted(next))));
    const worker = this.idle.pop();
    if (worker) return Promise.resolve(granted(worker));
    this.started += 1;
    return Promise.resolve(granted(new CheckWorker(this.settings)));
  }

  /** Whether a clinic with `running` checks under way may have a worker now: one per core, and a spare for a clinic with none. */
  private mayCheck(running: number): boolean {
    let busy = 0;
    for (const count of this.running.values()) busy += count;
    return busy < this.size || (running === 0 && busy < this.size + SPARE_WORKERS);
  }

  /** Back to the pool, from a check of `turnOf`'s; a worker that ran out of time or memory (it may still be parsing) is ended and replaced. */
  private release(worker: CheckWorker, healthy: boolean, turnOf: string): void {
    const left = (this.running.get(turnOf) ?? 1) - 1;
    if (left > 0) this.running.set(turnOf, left);
    else this.running.delete(turnOf);
    // The waiting clinic with the fewest checks under way, if it may have a worker now (else none may).
    const next = this.waiting.shift(
      (key) => this.running.get(key) ?? 0,
      (running) => this.mayCheck(running),
    );
    if (!healthy) {
      void worker.thread.terminate();
      if (next) next(new CheckWorker(this.settings));
      else this.started -= 1;
      return;
    }
    if (next) next(worker);
    else this.idle.push(worker);
  }

  async close(): Promise<void> {
    await Promise.all(this.idle.splice(0).map((worker) => worker.thread.terminate()));
  }
}

/** A check stopped by its time or memory limit: the XML fails, and so do the signatures, unchecked. */
function unfinished(limit: string, { signatures }: SignaturesToCheck): DocumentCheckOutcome {
  const what = signatures.length === 0 ? 'the document' : 'the document and its signatures';
  return { xmlFailure: undefined, signatureFindings: [], limitFailure: `${what} could not be checked ${limit}` };
}

/** CERTIFICATE_CHAIN_NOT_CHECKED: the acceptance callback's warning when signatures were verified without a trust store. */
export const CHAIN_NOT_CHECKED: CallbackErrorItem = {
  code: 'CERTIFICATE_CHAIN_NOT_CHECKED',
  message: 'the signatures were verified, but their certificate chains were not checked: this gateway has no trust store configured',
};
