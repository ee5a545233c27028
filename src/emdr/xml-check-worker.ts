/**
 * The XML well-formedness check of xml-check.ts, in a worker thread so that a slow document never
 * holds the service's event loop. Self-contained (saxes and Node only): Node runs this file as it
 * is, as TypeScript with its types stripped under the tests and compiled in dist/.
 *
 * Protocol: the parent posts `{chunk: Uint8Array}` messages, then `{end: true}`; the worker
 * answers each chunk with `{more: true}`, or with `{done: true, failure?}` as soon as the document
 * fails, and answers the end with `{done: true, failure?}`.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { SaxesParser, type SaxesTagNS } from 'saxes';

export interface XmlCheckWorkerData {
  maxDepth: number;
}

export type XmlCheckRequest = { chunk: Uint8Array } | { end: true };
export type XmlCheckAnswer = { more: true } | { done: true; failure?: string };

/** Thrown from a handler to stop the parser at once. */
class Stop extends Error {}

const { maxDepth } = workerData as XmlCheckWorkerData;
const parser = new SaxesParser({ xmlns: true, position: true });
let failure: string | undefined;
let depth = 0;

// saxes resolves a namespace prefix by walking the whole stack of open elements, for every element
// and prefixed attribute: quadratic in the depth. The bindings in scope are kept here instead, one
// stack per prefix, which gives the same answers in constant time.
const PREDEFINED = new Map([
  ['xml', 'http://www.w3.org/XML/1998/namespace'],
  ['xmlns', 'http://www.w3.org/2000/xmlns/'],
]);
const bindings = new Map<string, string[]>();
/** The declarations of the element being opened (saxes fills this object while it reads the attributes). */
let opening: Record<string, string> = Object.create(null);
parser.resolve = (prefix: string): string | undefined => opening[prefix] ?? bindings.get(prefix)?.at(-1) ?? PREDEFINED.get(prefix);
parser.on('opentagstart', (tag) => {
  opening = tag.ns!;
  depth += 1;
  if (depth > maxDepth) {
    failure = `the document nests elements deeper than ${maxDepth} levels, the limit`;
    throw new Stop();
  }
});
parser.on('opentag', (tag: SaxesTagNS) => {
  for (const [prefix, uri] of Object.entries(tag.ns)) {
    const stack = bindings.get(prefix) ?? [];
    stack.push(uri);
    bindings.set(prefix, stack);
  }
});
parser.on('closetag', (tag: SaxesTagNS) => {
  depth -= 1;
  for (const prefix of Object.keys(tag.ns)) bindings.get(prefix)!.pop();
});
parser.on('error', (error) => {
  failure ??= `the document is not well-formed XML: ${error.message}`;
});

const decoder = new TextDecoder('utf-8', { fatal: true });

/** Feeds the parser the text of `bytes`; without bytes, ends the text (a cut-off UTF-8 sequence fails). */
function feed(bytes?: Uint8Array): void {
  let text: string;
  try {
    text = bytes === undefined ? decoder.decode() : decoder.decode(bytes, { stream: true });
  } catch {
    failure ??= 'the document is not UTF-8';
    return;
  }
  try {
    parser.write(text);
    if (bytes === undefined && failure === undefined) parser.close();
  } catch (error) {
    if (!(error instanceof Stop)) throw error;
  }
}

parentPort!.on('message', (request: XmlCheckRequest) => {
  feed('chunk' in request ? request.chunk : undefined);
  const answer: XmlCheckAnswer = failure !== undefined || 'end' in request ? { done: true, ...(failure === undefined ? {} : { failure }) } : { more: true };
  parentPort!.postMessage(answer);
});
