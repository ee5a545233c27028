import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { CallbackErrorItem } from '../codes.js';
import type { NamedSignature, SignatureFinding } from './verify.js';
import type { SignatureWorkerAnswer, SignatureWorkerData, SignatureWorkerRequest } from './worker.js';

/**
 * The signature check of the acceptance stage: a bounded pool of worker threads (worker.ts) that
 * verify a document's detached signatures while the document streams in from the database, slice
 * by slice. Workers are started on first use and kept; a check that overruns its time budget or
 * its memory has its worker ended and replaced.
 */

/** What the check tells the acceptance callback. */
export interface SignatureCheckOutcome {
  errors: CallbackErrorItem[];
  /** CERTIFICATE_CHAIN_NOT_CHECKED when no trust store is configured. */
  warnings: CallbackErrorItem[];
}

export interface SignatureVerifierOptions {
  /** DER certificates of SIGNATURE_TRUST_STORE; undefined: chains are not checked (and a warning says so). */
  trustAnchors?: readonly Uint8Array[];
  /** Checks that run at once; more wait for a free worker. */
  workers: number;
  /** Time budget of one check, the wait for a worker excluded. */
  timeoutMs: number;
}

/** A worker's heap: parsed certificates, BigInts, one 48 KiB slice at a time. */
const WORKER_HEAP_MB = 64;
const WORKER_YOUNG_MB = 4;

// The worker is TypeScript run by Node itself (types stripped) from src/, JavaScript in dist/.
const WORKER_URL = new URL(`./worker${path.extname(new URL(import.meta.url).pathname)}`, import.meta.url);

const CHAIN_NOT_CHECKED: CallbackErrorItem = {
  code: 'CERTIFICATE_CHAIN_NOT_CHECKED',
  message: 'the signatures were verified, but their certificate chains were not checked: this gateway has no trust store configured',
};

class Overrun extends Error {}

export class SignatureVerifier {
  private readonly options: SignatureVerifierOptions;
  private readonly idle: Worker[] = [];
  private readonly waiting: Array<() => void> = [];
  private running = 0;
  private stopped = false;

  constructor(options: SignatureVerifierOptions) {
    this.options = options;
  }

  /** Verifies `signatures` over the document that `document()` streams. */
  async check(signatures: NamedSignature[], document: () => AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<SignatureCheckOutcome> {
    if (signatures.length === 0) return { errors: [], warnings: [] };
    const errors = await this.verify(signatures, document);
    return { errors, warnings: this.options.trustAnchors ? [] : [CHAIN_NOT_CHECKED] };
  }

  /** Ends every worker; checks in flight fail. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.idle.splice(0).map((worker) => worker.terminate()));
  }

  private async verify(signatures: NamedSignature[], document: () => AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<SignatureFinding[]> {
    const worker = await this.acquire();
    let healthy = false;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Overrun(`the signatures could not be checked within ${this.options.timeoutMs / 1000} s, the limit`)), this.options.timeoutMs);
    });
    deadline.catch(() => {});
    let onError: (error: Error) => void = () => {};
    let onExit: (code: number) => void = () => {};
    const failed = new Promise<never>((_resolve, reject) => {
      onError = reject;
      onExit = (code) => reject(new Error(`the signature worker exited with code ${code}`));
    });
    failed.catch(() => {});
    worker.on('error', onError).on('exit', onExit);
    const ask = (request: SignatureWorkerRequest) => Promise.race([exchange(worker, request), failed, deadline]);
    try {
      let answer = await ask({ start: { signatures, now: Date.now() } });
      if ('more' in answer) {
        for await (const chunk of document()) {
          answer = await Promise.race([ask({ chunk }), deadline]);
          if ('done' in answer) break;
        }
        if ('more' in answer) answer = await ask({ end: true });
      }
      healthy = true;
      return (answer as Extract<SignatureWorkerAnswer, { done: true }>).findings;
    } catch (error) {
      if (error instanceof Overrun) return [{ code: 'SIGNATURE_VERIFICATION_ERROR', message: error.message }];
      if ((error as NodeJS.ErrnoException).code === 'ERR_WORKER_OUT_OF_MEMORY') {
        return [{ code: 'SIGNATURE_VERIFICATION_ERROR', message: `the signatures could not be checked within ${WORKER_HEAP_MB} MiB` }];
      }
      throw error;
    } finally {
      clearTimeout(timer);
      worker.off('error', onError).off('exit', onExit).removeAllListeners('message');
      this.release(worker, healthy);
    }
  }

  private async acquire(): Promise<Worker> {
    for (;;) {
      if (this.stopped) throw new Error('the signature verifier is stopped');
      const worker = this.idle.pop();
      if (worker) return worker;
      if (this.running < this.options.workers) {
        this.running += 1;
        const workerData: SignatureWorkerData = this.options.trustAnchors ? { trustAnchors: [...this.options.trustAnchors] } : {};
        // No execArgv: the parent's loaders (tsx) are not needed to run the worker.
        const spawned = new Worker(WORKER_URL, { workerData, execArgv: [], resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB, maxYoungGenerationSizeMb: WORKER_YOUNG_MB } });
        // An idle worker that dies is forgotten (one in use fails its check instead, and release() counts it).
        spawned.on('exit', () => {
          const index = this.idle.indexOf(spawned);
          if (index < 0) return;
          this.idle.splice(index, 1);
          this.running -= 1;
        });
        spawned.on('error', () => {});
        return spawned;
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }

  /** A worker that finished its check cleanly serves the next; any other is ended. */
  private release(worker: Worker, healthy: boolean): void {
    if (healthy && !this.stopped) this.idle.push(worker);
    else {
      this.running -= 1;
      void worker.terminate();
    }
    this.waiting.shift()?.();
  }
}

/** Posts one request and waits for the worker's answer. */
function exchange(worker: Worker, request: SignatureWorkerRequest): Promise<SignatureWorkerAnswer> {
  const answered = new Promise<SignatureWorkerAnswer>((resolve) => worker.once('message', resolve));
  if ('chunk' in request) {
    // A chunk may be a view into a larger buffer, which a message would copy whole: the view's bytes go, moved.
    const chunk = new Uint8Array(request.chunk);
    worker.postMessage({ chunk }, [chunk.buffer]);
  } else worker.postMessage(request);
  return answered;
}
