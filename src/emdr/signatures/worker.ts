/**
 * The signature check of verify.ts in a worker thread, so that BigInt arithmetic and hashing never
 * hold the service's event loop. One worker serves many checks, one at a time (verifier.ts pools
 * them).
 *
 * Protocol: the parent posts `{start}`, then `{chunk}` messages, then `{end: true}`; the worker
 * answers `start` and each chunk with `{more: true}`, or with `{done: true, findings}` as soon as no
 * signature needs the document any more, and answers the end with `{done: true, findings}`.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { parseCertificate } from './cms.ts';
import { DocumentSignatureCheck, type NamedSignature, type SignatureFinding } from './verify.ts';

export interface SignatureWorkerData {
  /** DER certificates of the trust store; undefined: chains are not checked. */
  trustAnchors?: Uint8Array[];
}

export type SignatureWorkerRequest = { start: { signatures: NamedSignature[]; now: number } } | { chunk: Uint8Array } | { end: true };
export type SignatureWorkerAnswer = { more: true } | { done: true; findings: SignatureFinding[] };

const { trustAnchors } = workerData as SignatureWorkerData;
const anchors = trustAnchors?.map(parseCertificate);
let check: DocumentSignatureCheck | undefined;

function answer(request: SignatureWorkerRequest): SignatureWorkerAnswer {
  if ('start' in request) {
    check = new DocumentSignatureCheck(request.start.signatures, { now: request.start.now, ...(anchors ? { trustAnchors: anchors } : {}) });
    return check.needsDocument ? { more: true } : { done: true, findings: check.finish() };
  }
  if (!check) throw new Error('signature worker: no check started');
  if ('chunk' in request) {
    check.update(request.chunk);
    return { more: true };
  }
  const findings = check.finish();
  check = undefined;
  return { done: true, findings };
}

parentPort!.on('message', (request: SignatureWorkerRequest) => parentPort!.postMessage(answer(request)));
