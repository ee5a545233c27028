import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { BENCH_ORGANIZATION } from './database.js';
import { httpRequest } from './http-load.js';
import { clinicHeaders, type BenchClinic } from './service.js';

/** RegisterDocument requests as the scenarios send them. */

const fixtures = path.join(import.meta.dirname, '../../../test/emdr/fixtures');
/** A detached CMS signature (openssl, RSA test key): the acceptance checks its structure. */
const SIGNATURE_BASE64 = fs.readFileSync(path.join(fixtures, 'doc.xml.sig')).toString('base64');

/** A well-formed UTF-8 XML document of at least `bytes` bytes (Cyrillic text, many elements). */
export function xmlOfSize(bytes: number): Buffer {
  const filler = '<p>Описание осмотра пациента, строка для объёма.</p>';
  const head = '<?xml version="1.0" encoding="UTF-8"?><ClinicalDocument xmlns="urn:hl7-org:v3">';
  const count = Math.max(0, Math.ceil((bytes - head.length) / Buffer.byteLength(filler)));
  return Buffer.from(`${head}${filler.repeat(count)}</ClinicalDocument>`);
}

/** A RegisterDocument body with a new localUid each call (a new document, not a retry). */
export function registerDocumentBody(documentBase64: string, localUid = randomUUID()): string {
  return `{"localUid":"${localUid}","kind":"6","organization":"${BENCH_ORGANIZATION}","patientSnils":"112-233-445 95","creationDateTime":"2026-01-15T09:30:00+03:00","document":"${documentBase64}","signature":"${SIGNATURE_BASE64}"}`;
}

/** Requests of new documents of `bytes` bytes each, for `clinic`. */
export function registerDocumentRequests(clinic: BenchClinic, bytes: number): () => { bytes: Buffer; tag: string } {
  const documentBase64 = xmlOfSize(bytes).toString('base64');
  const headers = clinicHeaders(clinic);
  return () => {
    const localUid = randomUUID();
    return { bytes: httpRequest('POST', '/api/RegisterDocument', headers, registerDocumentBody(documentBase64, localUid)), tag: localUid };
  };
}
