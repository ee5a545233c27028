import { randomUUID } from 'node:crypto';
import { createTestSigner } from '../../../src/emdr/signatures/test-signer.js';
import { testSignatureOf } from '../../../test/support/signing.js';
import { BENCH_ORGANIZATION } from './database.js';
import { httpRequest } from './http-load.js';
import { clinicHeaders, type BenchClinic } from './service.js';

/** RegisterDocument requests as the scenarios send them. */

/**
 * The documents are signed for real (GOST R 34.10-2012 256, a throw-away test key, as every real
 * ЭМД is): the acceptance stage verifies each signature over its document, so the pipeline measures
 * the accepted path. 'rsa' (RSA-2048 by the openssl CLI, verified by Node's OpenSSL) shows the same
 * path without the cost of our GOST arithmetic.
 */
const signer = createTestSigner({ commonName: 'ehr-gateway bench (test)', notBefore: new Date('2025-01-01T00:00:00Z') });

export type SignatureKind = 'gost' | 'rsa';

/** A document's base64 and the base64 of its detached signature. */
export interface SignedDocument {
  documentBase64: string;
  signatureBase64: string;
}

export function signedDocument(xml: Buffer, kind: SignatureKind = 'gost'): SignedDocument {
  const signature = kind === 'gost' ? signer.sign(xml) : testSignatureOf(xml);
  return { documentBase64: xml.toString('base64'), signatureBase64: signature.toString('base64') };
}

/** A well-formed UTF-8 XML document of at least `bytes` bytes (Cyrillic text, many elements). */
export function xmlOfSize(bytes: number): Buffer {
  const filler = '<p>Описание осмотра пациента, строка для объёма.</p>';
  const head = '<?xml version="1.0" encoding="UTF-8"?><ClinicalDocument xmlns="urn:hl7-org:v3">';
  const count = Math.max(0, Math.ceil((bytes - head.length) / Buffer.byteLength(filler)));
  return Buffer.from(`${head}${filler.repeat(count)}</ClinicalDocument>`);
}

/** A RegisterDocument body with a new localUid each call (a new document, not a retry). */
export function registerDocumentBody(document: SignedDocument, localUid = randomUUID()): string {
  return `{"localUid":"${localUid}","kind":"119","organization":"${BENCH_ORGANIZATION}","patientSnils":"112-233-445 95","creationDateTime":"2026-01-15T09:30:00+03:00","document":"${document.documentBase64}","signature":"${document.signatureBase64}"}`;
}

/** Requests of new documents of `bytes` bytes each, for `clinic`. */
export function registerDocumentRequests(clinic: BenchClinic, bytes: number): () => { bytes: Buffer; tag: string } {
  const document = signedDocument(xmlOfSize(bytes));
  const headers = clinicHeaders(clinic);
  return () => {
    const localUid = randomUUID();
    return { bytes: httpRequest('POST', '/api/RegisterDocument', headers, registerDocumentBody(document, localUid)), tag: localUid };
  };
}

/** One RegisterDocument of `document` by `clinic` at `publicUrl`; fails unless it is answered 200. */
export async function registerDocument(publicUrl: string, clinic: BenchClinic, document: SignedDocument): Promise<void> {
  const response = await fetch(`${publicUrl}/api/RegisterDocument`, { method: 'POST', headers: clinicHeaders(clinic), body: registerDocumentBody(document) });
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`RegisterDocument answered ${response.status}`);
}

/**
 * `count` RegisterDocuments at `perSecond`, each sent when its time comes whether or not the ones
 * before it were answered (an open loop: the rate holds while the service is slow); resolves once
 * every one is answered.
 */
export async function registerAtRate(publicUrl: string, clinic: BenchClinic, document: SignedDocument, count: number, perSecond: number): Promise<void> {
  const started = performance.now();
  const sent: Array<Promise<void>> = [];
  for (let i = 0; i < count; i += 1) {
    const due = started + (i * 1000) / perSecond - performance.now();
    if (due > 0) await new Promise((resolve) => setTimeout(resolve, due));
    sent.push(registerDocument(publicUrl, clinic, document));
  }
  await Promise.all(sent);
}
