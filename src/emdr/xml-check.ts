import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { XmlCheckAnswer, XmlCheckRequest, XmlCheckWorkerData } from './xml-check-worker.js';

/**
 * The well-formedness check of a RegisterDocument's XML, bounded three ways: elements nested
 * deeper than MAX_XML_DEPTH fail it, it gets `timeoutMs` in all, and it runs in a worker thread
 * (xml-check-worker.ts), so the event loop keeps answering meanwhile. The document arrives in
 * slices (streamed from the database) and is never one string.
 */

/** The documented limit of element nesting (libxml2's default limit too); CDA documents nest a few dozen levels. */
export const MAX_XML_DEPTH = 256;

/** Memory of the worker's heap: the parser holds one text node or attribute value at a time, at most the document. */
const WORKER_HEAP_MB = 256;
/** Its young generation: slices of 48 KiB need little, and V8's default roughly doubles the worker's footprint (measured: +45 MiB peak for a 20 MiB document, +25..42 MiB with 4). */
const WORKER_YOUNG_MB = 4;

// The worker is TypeScript run by Node itself (types stripped) from src/, JavaScript in dist/.
const WORKER_URL = new URL(`./xml-check-worker${path.extname(new URL(import.meta.url).pathname)}`, import.meta.url);

export interface XmlCheckLimits {
  maxDepth: number;
  timeoutMs: number;
}

/** Undefined when the slices are one well-formed UTF-8 XML document within the limits, else why not (for the acceptance callback). */
export async function xmlDocumentError(chunks: AsyncIterable<Uint8Array>, limits: XmlCheckLimits): Promise<string | undefined> {
  const workerData: XmlCheckWorkerData = { maxDepth: limits.maxDepth };
  // No execArgv: the parent's loaders (tsx) are not needed to run the worker.
  const worker = new Worker(WORKER_URL, { workerData, execArgv: [], resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB, maxYoungGenerationSizeMb: WORKER_YOUNG_MB } });
  let timer: NodeJS.Timeout | undefined;
  const timedOut = Symbol('timed out');
  const deadline = new Promise<typeof timedOut>((resolve) => {
    timer = setTimeout(() => resolve(timedOut), limits.timeoutMs);
  });
  const failed = new Promise<never>((_resolve, reject) => {
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the XML check worker exited with code ${code}`)));
  });
  failed.catch(() => {});
  const iterator = chunks[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await Promise.race([iterator.next(), deadline]);
      if (next === timedOut) return timeoutMessage(limits.timeoutMs);
      const answer = await Promise.race([sendAndWait(worker, next.done ? { end: true } : { chunk: next.value }, failed), deadline]);
      if (answer === timedOut) return timeoutMessage(limits.timeoutMs);
      if ('done' in answer) return answer.failure;
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_WORKER_OUT_OF_MEMORY') return `the document could not be checked within ${WORKER_HEAP_MB} MiB`;
    throw error;
  } finally {
    clearTimeout(timer);
    await iterator.return?.();
    await worker.terminate();
  }
}

function timeoutMessage(timeoutMs: number): string {
  return `the document could not be checked within ${timeoutMs / 1000} s, the limit`;
}

/** Posts one request and waits for the worker's answer (or its failure). */
function sendAndWait(worker: Worker, request: XmlCheckRequest, failed: Promise<never>): Promise<XmlCheckAnswer> {
  const answered = new Promise<XmlCheckAnswer>((resolve) => worker.once('message', resolve));
  if ('chunk' in request) {
    // A chunk may be a view into a larger buffer, which a message would copy whole: the view's bytes go, moved.
    const chunk = new Uint8Array(request.chunk);
    worker.postMessage({ chunk }, [chunk.buffer]);
  } else worker.postMessage(request);
  return Promise.race([answered, failed]);
}
