import type { Queryable } from '../../db/sql.js';
import type { CallbackErrorItem } from '../codes.js';
import { instantMs } from '../instant.js';
import { requestFileSlices } from './request-files.js';
import type { RegisterMetadata } from './requests.js';
import type { XmlCheckPool } from './xml-check.js';

/**
 * The acceptance checks of a RegisterDocument request that need no registry: each a named step of
 * registerDocumentAcceptanceErrors (at the end of this file), on what the acceptance stage claimed.
 */

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Whether the text is standard base64, padded (Buffer.from alone would skip bad characters). */
export function isStrictBase64(text: string): boolean {
  return text.length % 4 === 0 && BASE64.test(text);
}

/** The bytes of standard, padded base64; undefined when the text is not that. */
export function decodeBase64Strict(text: string): Buffer | undefined {
  return isStrictBase64(text) ? Buffer.from(text, 'base64') : undefined;
}

interface Tlv {
  tag: number;
  contentStart: number;
  end: number;
}

/** One DER element at `offset` (definite lengths only, as DER requires). */
function readTlv(bytes: Buffer, offset: number, limit: number): Tlv {
  if (offset + 2 > limit) throw new Error('truncated element');
  const tag = bytes[offset]!;
  if ((tag & 0x1f) === 0x1f) throw new Error('multi-byte tags are not used in CMS');
  const first = bytes[offset + 1]!;
  let length = first;
  let contentStart = offset + 2;
  if (first === 0x80) throw new Error('indefinite length (BER) is not supported: send DER');
  if (first > 0x80) {
    const count = first & 0x7f;
    if (count > 4 || contentStart + count > limit) throw new Error('bad length');
    length = 0;
    for (let i = 0; i < count; i += 1) length = length * 256 + bytes[contentStart + i]!;
    contentStart += count;
  }
  const end = contentStart + length;
  if (end > limit) throw new Error('element runs past its container');
  return { tag, contentStart, end };
}

// DER of OBJECT IDENTIFIER 1.2.840.113549.1.7.2 (signedData), without tag and length.
const SIGNED_DATA_OID = Buffer.from([0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x02]);
const SEQUENCE = 0x30;
const SET = 0x31;
const INTEGER = 0x02;
const OID = 0x06;
const CONTEXT_0 = 0xa0;
const CONTEXT_1 = 0xa1;

/**
 * Checks that `bytes` is a DER ContentInfo of type signedData whose encapsulated content is absent
 * (a detached signature) and that it has at least one SignerInfo. This is a structural check: the
 * cryptographic verification (GOST R 34.10-2012 certificates) belongs to the registry.
 */
export function detachedCmsError(bytes: Buffer, what: string): CallbackErrorItem | undefined {
  try {
    const contentInfo = readTlv(bytes, 0, bytes.length);
    if (contentInfo.tag !== SEQUENCE || contentInfo.end !== bytes.length) throw new Error('not a ContentInfo SEQUENCE');
    const contentType = readTlv(bytes, contentInfo.contentStart, contentInfo.end);
    if (contentType.tag !== OID || !bytes.subarray(contentType.contentStart, contentType.end).equals(SIGNED_DATA_OID)) {
      throw new Error('content type is not signedData (1.2.840.113549.1.7.2)');
    }
    const explicit = readTlv(bytes, contentType.end, contentInfo.end);
    if (explicit.tag !== CONTEXT_0) throw new Error('signedData content missing');
    const signedData = readTlv(bytes, explicit.contentStart, explicit.end);
    if (signedData.tag !== SEQUENCE) throw new Error('SignedData is not a SEQUENCE');
    const version = readTlv(bytes, signedData.contentStart, signedData.end);
    if (version.tag !== INTEGER) throw new Error('SignedData version missing');
    const digestAlgorithms = readTlv(bytes, version.end, signedData.end);
    if (digestAlgorithms.tag !== SET) throw new Error('digestAlgorithms missing');
    const encapContentInfo = readTlv(bytes, digestAlgorithms.end, signedData.end);
    if (encapContentInfo.tag !== SEQUENCE) throw new Error('encapContentInfo missing');
    const eContentType = readTlv(bytes, encapContentInfo.contentStart, encapContentInfo.end);
    if (eContentType.tag !== OID) throw new Error('eContentType missing');
    if (eContentType.end !== encapContentInfo.end) {
      return { code: 'WRONG_SIGNATURE_FORMAT', message: `${what} carries the signed content: send a detached signature` };
    }
    let next = readTlv(bytes, encapContentInfo.end, signedData.end);
    if (next.tag === CONTEXT_0) next = readTlv(bytes, next.end, signedData.end);
    if (next.tag === CONTEXT_1) next = readTlv(bytes, next.end, signedData.end);
    if (next.tag !== SET) throw new Error('signerInfos missing');
    if (next.contentStart === next.end) return { code: 'NO_SIGNATURE', message: `${what} has no signer` };
    return undefined;
  } catch (error) {
    return { code: 'SIGNATURE_DECODING_ERROR', message: `${what} is not a DER CMS SignedData: ${(error as Error).message}` };
  }
}

/** The 11 digits of a SNILS written as digits or as NNN-NNN-NNN NN. */
export function snilsDigits(snils: string): string {
  return snils.replace(/[^0-9]/g, '');
}

/**
 * SNILS check number: the first nine digits weighted 9..1, summed; below 100 the sum itself,
 * 100 and 101 give 00, above 101 the remainder of division by 101 (100 again giving 00).
 * Numbers up to 001-001-998 were issued without a meaningful check number.
 */
export function snilsChecksumValid(snils: string): boolean {
  const digits = snilsDigits(snils);
  if (digits.length !== 11) return false;
  const number = Number(digits.slice(0, 9));
  if (number <= 1_001_998) return true;
  let sum = 0;
  for (let i = 0; i < 9; i += 1) sum += Number(digits[i]) * (9 - i);
  let check = sum;
  if (check > 101) check %= 101;
  if (check === 100 || check === 101) check = 0;
  return check === Number(digits.slice(9));
}

/** A RegisterDocument request as the acceptance stage claimed it. */
export interface RegisterDocumentUnderCheck {
  queueMessageId: string;
  /** Files that were not base64 at intake: the request is rejected with these, unread. */
  intakeErrors: CallbackErrorItem[] | null;
  metadata: RegisterMetadata;
  /** The document, when the claim brought it along (a small one); else it is read in slices. */
  document: Buffer | null;
  documentSize: number;
  signature: Buffer | null;
  personalSignatures: Array<{ signature: string }> | null;
  /** An earlier request of the same clinic carries the same localUid (the claim's query looked). */
  duplicateLocalUid: boolean;
}

export interface AcceptanceCheckContext {
  sql: Queryable;
  xml: XmlCheckPool;
  xmlCheckTimeoutMs: number;
}

/** XML_VALIDATION_ERROR unless the document is well-formed UTF-8 XML within the depth, time and memory limits. */
async function xmlStep(context: AcceptanceCheckContext, request: RegisterDocumentUnderCheck): Promise<CallbackErrorItem[]> {
  const document = request.document ?? requestFileSlices(context.sql, request.queueMessageId, 'document', request.documentSize);
  const failure = await context.xml.check(document, { timeoutMs: context.xmlCheckTimeoutMs });
  return failure === undefined ? [] : [{ code: 'XML_VALIDATION_ERROR', message: failure.slice(0, 300) }];
}

/** The organization's signature: a detached DER CMS SignedData with a signer (structure only). */
function signatureStep(request: RegisterDocumentUnderCheck): CallbackErrorItem[] {
  const error = detachedCmsError(request.signature ?? Buffer.alloc(0), 'signature');
  return error ? [error] : [];
}

/** Each personal signature, the same way. */
function personalSignaturesStep(request: RegisterDocumentUnderCheck): CallbackErrorItem[] {
  return (request.personalSignatures ?? []).flatMap((item, index) => {
    const error = detachedCmsError(Buffer.from(item.signature, 'base64'), `personalSignatures/${index}/signature`);
    return error ? [error] : [];
  });
}

function snilsStep(request: RegisterDocumentUnderCheck): CallbackErrorItem[] {
  return snilsChecksumValid(request.metadata.patientSnils) ? [] : [{ code: 'VALIDATION_ERROR', message: 'patientSnils: the check number does not match' }];
}

function creationDateStep(request: RegisterDocumentUnderCheck): CallbackErrorItem[] {
  return instantMs(request.metadata.creationDateTime) > Date.now() ? [{ code: 'WRONG_CREATION_DATE', message: 'creationDateTime lies in the future' }] : [];
}

/** The earliest request with a localUid wins; later ones with another body are duplicates. */
function uniquenessStep(request: RegisterDocumentUnderCheck): CallbackErrorItem[] {
  return request.duplicateLocalUid ? [{ code: 'NOT_UNIQUE_PROVIDED_ID', message: 'a document with this localUid was already submitted by this clinic' }] : [];
}

/** The acceptance checks of a RegisterDocument, step by step; the errors for its acceptance callback (none: accepted). */
export async function registerDocumentAcceptanceErrors(context: AcceptanceCheckContext, request: RegisterDocumentUnderCheck): Promise<CallbackErrorItem[]> {
  if (request.intakeErrors && request.intakeErrors.length > 0) return request.intakeErrors;
  return [
    ...(await xmlStep(context, request)),
    ...signatureStep(request),
    ...personalSignaturesStep(request),
    ...snilsStep(request),
    ...creationDateStep(request),
    ...uniquenessStep(request),
  ];
}
