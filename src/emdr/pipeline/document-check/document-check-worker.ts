/**
 * The checks of a RegisterDocument's document of document-check.ts, in a worker thread so that a slow
 * document never holds the service's event loop: XML well-formedness and the detached signatures
 * (signatures/verify.ts), both fed from the same slices, so the document is read and moved here once.
 * Node runs this file as it is, as TypeScript with its types stripped under the tests (hence the
 * `.ts` specifiers) and compiled in dist/. One worker checks one document at a time and many in its
 * life (document-check.ts keeps a pool of them).
 *
 * Protocol: the parent posts `{begin}` (the signatures), then `{chunk: Uint8Array}` messages, then
 * `{end: true}`; or a whole small document as `{document}` with its signatures. The worker answers
 * each chunk with `{more: true}`, or with `{done: true, ...}` as soon as no check needs more of the
 * document (the XML failed and no signature is left to hash); it answers the end (and a whole
 * document) with `{done: true, failure?, findings}`.
 */
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { SaxesParser, type SaxesTagNS } from 'saxes';
import { DocumentPartiesReader, partyFindings } from '../../prechecks/document-parties.ts';
import { parseCertificate } from '../../signatures/cms/cms.ts';
import { wasmStreebog } from '../../signatures/crypto/gost-wasm.ts';
import { DocumentSignatureCheck, type NamedSignature, type SignatureFinding } from '../../signatures/verify.ts';

export interface DocumentCheckWorkerData {
  maxDepth: number;
  /** DER certificates of the trust store; undefined: chains are not checked. */
  trustAnchors?: Uint8Array[];
}

/** The signatures to verify over the document, and the intake time (the certificates' validity when a signer gives no signing time). */
export interface SignaturesToCheck {
  signatures: NamedSignature[];
  now: number;
  /** The document's creation (epoch ms), when the request gives it. */
  documentCreatedAt?: number;
}

export type DocumentCheckRequest =
  | { begin: SignaturesToCheck }
  | { chunk: Uint8Array }
  | { end: true }
  | { document: Uint8Array; signatures: SignaturesToCheck };
export type DocumentCheckAnswer = { more: true } | { done: true; failure?: string; findings: SignatureFinding[] };
/** The worker's first message, once its modules are loaded and the GOST module compiled: a check's time budget starts after it. */
export interface DocumentCheckWorkerReady {
  ready: true;
}

/** Thrown from a handler to stop the parser at once. */
class Stop extends Error {}

const { maxDepth, trustAnchors } = workerData as DocumentCheckWorkerData;

/**
 * How much lower than the rest of the process this thread runs (nice, added to the process's own).
 * A check is background work that may take seconds of CPU (a clinic can send 21 signatures × 16
 * signers a request): at the same priority, two busy workers on two cores leave the event loop two
 * thirds of a core, and every clinic's acknowledgements wait for one clinic's checks. At +5 Linux
 * weighs a worker 335 against the loop's 1024, so the loop gets a whole core beside two busy workers
 * (2 × 1024 / (1024 + 2 × 335) > 1) while the checks keep a third of the weight of other work on the
 * machine (at +10, a tenth: on a box shared with other busy processes, checks starved).
 */
const CHECK_NICENESS = 5;

/**
 * Lowers this thread's priority alone: on Linux a nice value belongs to a thread (setpriority(2),
 * "the nice value is a per-thread attribute"), named by its thread id, which /proc/thread-self
 * gives. Elsewhere (no /proc), or when not allowed, the worker runs as it is.
 */
function lowerThreadPriority(): void {
  try {
    const threadId = Number(readlinkSync('/proc/thread-self').split('/').at(-1));
    setPriority(threadId, Math.min(19, getPriority(threadId) + CHECK_NICENESS));
  } catch {
    // Not Linux, or not permitted: same priority as the event loop.
  }
}
lowerThreadPriority();
const anchors = trustAnchors?.map(parseCertificate);

// saxes resolves a namespace prefix by walking the whole stack of open elements, for every element
// and prefixed attribute: quadratic in the depth. The bindings in scope are kept here instead, one
// stack per prefix, which gives the same answers in constant time.
const PREDEFINED = new Map([
  ['xml', 'http://www.w3.org/XML/1998/namespace'],
  ['xmlns', 'http://www.w3.org/2000/xmlns/'],
]);

/** The XML check of one document: a parser of its own, its depth and namespace bindings. */
class XmlCheck {
  private readonly parser = new SaxesParser({ xmlns: true, position: true });
  private readonly decoder = new TextDecoder('utf-8', { fatal: true });
  private readonly bindings = new Map<string, string[]>();
  /** The declarations of the element being opened (saxes fills this object while it reads the attributes). */
  private opening: Record<string, string> = Object.create(null);
  private depth = 0;
  failure: string | undefined;
  /** The header's medical workers and custodian, for the rules between them, the signer blocks and the certificates. */
  readonly parties = new DocumentPartiesReader();

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
      this.parties.open(tag);
    });
    this.parser.on('text', (text) => this.parties.text(text));
    this.parser.on('closetag', (tag: SaxesTagNS) => {
      this.depth -= 1;
      for (const prefix of Object.keys(tag.ns)) this.bindings.get(prefix)!.pop();
      this.parties.close();
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

/** Both checks of one document, fed the same slices. */
class DocumentCheck {
  private readonly xml = new XmlCheck();
  private readonly signatures: DocumentSignatureCheck;

  constructor({ signatures, now, documentCreatedAt }: SignaturesToCheck) {
    this.signatures = new DocumentSignatureCheck(signatures, {
      now,
      ...(documentCreatedAt === undefined ? {} : { documentCreatedAt }),
      ...(anchors ? { trustAnchors: anchors } : {}),
    });
  }

  /** Whether any check still needs more of the document. */
  get needsMore(): boolean {
    return this.xml.failure === undefined || this.signatures.needsDocument;
  }

  feed(bytes?: Uint8Array): void {
    this.xml.feed(bytes);
    if (bytes !== undefined && this.signatures.needsDocument) this.signatures.update(bytes);
  }

  done(): DocumentCheckAnswer {
    const findings = this.signatures.finish();
    // The parties are known only from a whole, well-formed document.
    if (this.xml.failure === undefined) findings.push(...partyFindings(this.xml.parties.result(), this.signatures.signedBy()));
    return { done: true, findings, ...(this.xml.failure === undefined ? {} : { failure: this.xml.failure }) };
  }
}

let current: DocumentCheck | undefined;

function answer(request: DocumentCheckRequest): DocumentCheckAnswer | undefined {
  if ('begin' in request) {
    current = new DocumentCheck(request.begin);
    return undefined;
  }
  if ('document' in request) {
    const check = new DocumentCheck(request.signatures);
    check.feed(request.document);
    check.feed();
    return check.done();
  }
  const check = current!;
  if ('end' in request) {
    check.feed();
    current = undefined;
    return check.done();
  }
  check.feed(request.chunk);
  if (check.needsMore) return { more: true };
  current = undefined;
  return check.done();
}

parentPort!.on('message', (request: DocumentCheckRequest) => {
  const reply = answer(request);
  if (reply !== undefined) parentPort!.postMessage(reply);
});

// Compiles the GOST WebAssembly module now (a hash of nothing), so that the first document's budget
// does not pay for it either.
wasmStreebog(256, new Uint8Array(0));
parentPort!.postMessage({ ready: true } satisfies DocumentCheckWorkerReady);
