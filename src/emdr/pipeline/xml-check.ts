import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { XmlCheckAnswer, XmlCheckRequest, XmlCheckWorkerData } from './xml-check-worker.js';

/**
 * The well-formedness check of a RegisterDocument's XML, bounded three ways: elements nested
 * deeper than MAX_XML_DEPTH fail it, it gets `timeoutMs` in all, and it runs in a worker thread
 * (xml-check-worker.ts) whose heap is capped, so the event loop keeps answering meanwhile. A small
 * pool of such workers serves every check (a thread costs tens of milliseconds and megabytes to
 * start); a worker whose document ran out of time or memory is ended and replaced. A document
 * arrives whole (a small one) or in slices streamed from the database, never as one string.
 */

/** The documented limit of element nesting (libxml2's default limit too); CDA documents nest a few dozen levels. */
export const MAX_XML_DEPTH = 256;

/** Memory of a worker's heap: the parser holds one text node or attribute value at a time, at most the document. */
const WORKER_HEAP_MB = 256;
/** Its young generation: slices of 48 KiB need little, and V8's default roughly doubles the worker's footprint (measured: +45 MiB peak for a 20 MiB document, +25..42 MiB with 4). */
const WORKER_YOUNG_MB = 4;

// The worker is TypeScript run by Node itself (types stripped) from src/, JavaScript in dist/.
const WORKER_URL = new URL(`./xml-check-worker${path.extname(new URL(import.meta.url).pathname)}`, import.meta.url);

/** Workers of a pool: one per core (a check is CPU work), at least one. */
export const XML_CHECK_WORKERS = Math.max(1, Math.min(4, os.availableParallelism()));

export interface XmlCheckLimits {
  timeoutMs: number;
}

/** A worker and the answer it owes for the document it checks. */
class CheckWorker {
  readonly thread: Worker;
  private answer: ((answer: XmlCheckAnswer) => void) | undefined;
  private fail: ((error: Error) => void) | undefined;
  dead = false;

  constructor(maxDepth: number) {
    const workerData: XmlCheckWorkerData = { maxDepth };
    // No execArgv: the parent's loaders (tsx) are not needed to run the worker.
    this.thread = new Worker(WORKER_URL, { workerData, execArgv: [], resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB, maxYoungGenerationSizeMb: WORKER_YOUNG_MB } });
    this.thread.unref();
    this.thread.on('message', (answer: XmlCheckAnswer) => this.answer?.(answer));
    this.thread.on('error', (error) => this.die(error));
    this.thread.on('exit', (code) => this.die(new Error(`the XML check worker exited with code ${code}`)));
  }

  private die(error: Error): void {
    this.dead = true;
    this.fail?.(error);
  }

  /** Posts one request and waits for the worker's answer (or its failure). */
  ask(request: XmlCheckRequest): Promise<XmlCheckAnswer> {
    return new Promise((resolve, reject) => {
      this.answer = resolve;
      this.fail = reject;
      if ('chunk' in request || 'document' in request) {
        const bytes = movable('chunk' in request ? request.chunk : request.document);
        this.thread.postMessage('chunk' in request ? { chunk: bytes } : { document: bytes }, [bytes.buffer as ArrayBuffer]);
      } else this.thread.postMessage(request);
    });
  }

  tell(request: XmlCheckRequest): void {
    this.thread.postMessage(request);
  }
}

/**
 * Bytes that can be moved to the worker without a copy: a buffer that is its whole ArrayBuffer (a
 * slice read from the database) goes as it is; a view into a larger one (which a message would copy
 * whole, and which may be Node's shared pool) is copied first. Moved, they leave this thread at once.
 */
function movable(bytes: Uint8Array): Uint8Array {
  const ownsBuffer = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.byteLength > 0 && !(bytes.buffer instanceof SharedArrayBuffer);
  return ownsBuffer ? bytes : new Uint8Array(bytes);
}

const timedOut = Symbol('timed out');

export class XmlCheckPool {
  private readonly idle: CheckWorker[] = [];
  private readonly waiting: Array<(worker: CheckWorker) => void> = [];
  private started = 0;

  constructor(
    private readonly size: number = XML_CHECK_WORKERS,
    private readonly maxDepth: number = MAX_XML_DEPTH,
  ) {}

  /** Starts every worker now (a thread costs tens of milliseconds and megabytes to start), rather than at the first documents. */
  start(): void {
    while (this.started < this.size) {
      this.started += 1;
      this.idle.push(new CheckWorker(this.maxDepth));
    }
  }

  /**
   * Undefined when the document is one well-formed UTF-8 XML document within the limits, else why
   * not (for the acceptance callback). `document` is the whole document, or its slices.
   */
  async check(document: Uint8Array | AsyncIterable<Uint8Array>, limits: XmlCheckLimits): Promise<string | undefined> {
    // The budget is the check's own: it starts when a worker takes the document, not while it waits for one.
    const worker = await this.acquire();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<typeof timedOut>((resolve) => (timer = setTimeout(() => resolve(timedOut), limits.timeoutMs)));
    let healthy = true;
    try {
      const outcome = await Promise.race([this.run(worker, document, deadline), deadline]);
      if (outcome === timedOut) {
        healthy = false;
        return timeoutMessage(limits.timeoutMs);
      }
      return outcome;
    } catch (error) {
      healthy = false;
      if ((error as NodeJS.ErrnoException).code === 'ERR_WORKER_OUT_OF_MEMORY') return `the document could not be checked within ${WORKER_HEAP_MB} MiB`;
      throw error;
    } finally {
      clearTimeout(timer);
      this.release(worker, healthy && !worker.dead);
    }
  }

  private async run(worker: CheckWorker, document: Uint8Array | AsyncIterable<Uint8Array>, deadline: Promise<typeof timedOut>): Promise<string | undefined> {
    if (document instanceof Uint8Array) return (worker.ask({ document }) as Promise<{ done: true; failure?: string }>).then((answer) => answer.failure);
    worker.tell({ begin: true });
    const iterator = document[Symbol.asyncIterator]();
    try {
      for (;;) {
        const next = await Promise.race([iterator.next(), deadline]);
        if (next === timedOut) return undefined;
        const answer = await worker.ask(next.done ? { end: true } : { chunk: next.value });
        if ('done' in answer) return answer.failure;
      }
    } finally {
      await iterator.return?.();
    }
  }

  private acquire(): Promise<CheckWorker> {
    const worker = this.idle.pop();
    if (worker) return Promise.resolve(worker);
    if (this.started < this.size) {
      this.started += 1;
      return Promise.resolve(new CheckWorker(this.maxDepth));
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Back to the pool; a worker that ran out of time or memory (it may still be parsing) is ended and replaced. */
  private release(worker: CheckWorker, healthy: boolean): void {
    if (!healthy) {
      void worker.thread.terminate();
      this.started -= 1;
      const next = this.waiting.shift();
      if (next) {
        this.started += 1;
        next(new CheckWorker(this.maxDepth));
      }
      return;
    }
    const next = this.waiting.shift();
    if (next) next(worker);
    else this.idle.push(worker);
  }

  async close(): Promise<void> {
    await Promise.all(this.idle.splice(0).map((worker) => worker.thread.terminate()));
  }
}

function timeoutMessage(timeoutMs: number): string {
  return `the document could not be checked within ${timeoutMs / 1000} s, the limit`;
}
