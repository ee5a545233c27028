/**
 * The XML well-formedness check of xml-check.ts, in a worker thread so that a slow document never
 * holds the service's event loop. Self-contained (saxes and Node only): Node runs this file as it
 * is, as TypeScript with its types stripped under the tests and compiled in dist/. One worker
 * checks one document at a time and many in its life (xml-check.ts keeps a pool of them).
 *
 * Protocol: the parent posts `{begin: true}`, then `{chunk: Uint8Array}` messages, then `{end: true}`;
 * or a whole small document as `{document: Uint8Array}`. The worker answers each chunk with
 * `{more: true}`, or with `{done: true, failure?}` as soon as the document fails; it answers the end
 * (and a whole document) with `{done: true, failure?}`.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { SaxesParser, type SaxesTagNS } from 'saxes';

export interface XmlCheckWorkerData {
  maxDepth: number;
}

export type XmlCheckRequest = { begin: true } | { chunk: Uint8Array } | { end: true } | { document: Uint8Array };
export type XmlCheckAnswer = { more: true } | { done: true; failure?: string };

/** Thrown from a handler to stop the parser at once. */
class Stop extends Error {}

const { maxDepth } = workerData as XmlCheckWorkerData;

// saxes resolves a namespace prefix by walking the whole stack of open elements, for every element
// and prefixed attribute: quadratic in the depth. The bindings in scope are kept here instead, one
// stack per prefix, which gives the same answers in constant time.
const PREDEFINED = new Map([
  ['xml', 'http://www.w3.org/XML/1998/namespace'],
  ['xmlns', 'http://www.w3.org/2000/xmlns/'],
]);

/** The check of one document: a parser of its own, its depth and namespace bindings. */
class DocumentCheck {
  private readonly parser = new SaxesParser({ xmlns: true, position: true });
  private readonly decoder = new TextDecoder('utf-8', { fatal: true });
  private readonly bindings = new Map<string, string[]>();
  /** The declarations of the element being opened (saxes fills this object while it reads the attributes). */
  private opening: Record<string, string> = Object.create(null);
  private depth = 0;
  failure: string | undefined;

  constructor() {
    this.parser.resolve = (prefix: string): string | undefined => this.opening[prefix] ?? this.bindings.get(prefix)?.at(-1) ?? PREDEFINED.get(prefix);
    this.parser.on('opentagstart', (tag) => {
      this.opening = tag.ns!;
      this.depth += 1;
      if (this.depth > maxDepth) {
        this.failure = `the document nests elements deeper than ${maxDepth} levels, the limit`;
        throw new Stop();
      }
    });
    this.parser.on('opentag', (tag: SaxesTagNS) => {
      for (const [prefix, uri] of Object.entries(tag.ns)) {
        const stack = this.bindings.get(prefix) ?? [];
        stack.push(uri);
        this.bindings.set(prefix, stack);
      }
    });
    this.parser.on('closetag', (tag: SaxesTagNS) => {
      this.depth -= 1;
      for (const prefix of Object.keys(tag.ns)) this.bindings.get(prefix)!.pop();
    });
    this.parser.on('error', (error) => {
      this.failure ??= `the document is not well-formed XML: ${error.message}`;
    });
  }

  /** Feeds the parser the text of `bytes`; without bytes, ends the text (a cut-off UTF-8 sequence fails). */
  feed(bytes?: Uint8Array): void {
    if (this.failure !== undefined) return;
    let text: string;
    try {
      text = bytes === undefined ? this.decoder.decode() : this.decoder.decode(bytes, { stream: true });
    } catch {
      this.failure ??= 'the document is not UTF-8';
      return;
    }
    try {
      this.parser.write(text);
      if (bytes === undefined && this.failure === undefined) this.parser.close();
    } catch (error) {
      if (!(error instanceof Stop)) throw error;
    }
  }
}

let current: DocumentCheck | undefined;

const done = (check: DocumentCheck): XmlCheckAnswer => ({ done: true, ...(check.failure === undefined ? {} : { failure: check.failure }) });

parentPort!.on('message', (request: XmlCheckRequest) => {
  if ('begin' in request) {
    current = new DocumentCheck();
    return;
  }
  if ('document' in request) {
    const check = new DocumentCheck();
    check.feed(request.document);
    check.feed();
    parentPort!.postMessage(done(check));
    return;
  }
  const check = current!;
  check.feed('chunk' in request ? request.chunk : undefined);
  const more: XmlCheckAnswer = { more: true };
  parentPort!.postMessage(check.failure !== undefined || 'end' in request ? done(check) : more);
});
