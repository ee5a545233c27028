import type { Queryable } from '../../db/sql.js';
import type { CallbackErrorItem } from '../codes.js';
import { instantMs } from '../instant.js';
import type { NamedSignature } from '../signatures/verify.js';
import { CHAIN_NOT_CHECKED, type DocumentCheckPool } from './document-check.js';
import { requestFileSlices } from './request-files.js';
import type { RegisterMetadata } from './requests.js';

/**
 * The acceptance checks of a RegisterDocument request that need no registry: each a named step of
 * registerDocumentAcceptance (at the end of this file), on what the acceptance stage claimed.
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
  documents: DocumentCheckPool;
  xmlCheckTimeoutMs: number;
}

/** What the acceptance callback reports: errors (none: accepted) and warnings. */
export interface AcceptanceFindings {
  errors: CallbackErrorItem[];
  warnings: CallbackErrorItem[];
}

/** The organization's signature and each personal one, named as the request names them. */
function signaturesOf(request: RegisterDocumentUnderCheck): NamedSignature[] {
  return [
    { name: 'signature', bytes: request.signature ?? Buffer.alloc(0) },
    ...(request.personalSignatures ?? []).map((item, index) => ({ name: `personalSignatures/${index}/signature`, bytes: Buffer.from(item.signature, 'base64') })),
  ];
}

/**
 * XML_VALIDATION_ERROR unless the document is well-formed UTF-8 XML within the depth, time and
 * memory limits; and each signature verified over it (its structure, digest, value, certificate's
 * validity and, with a trust store, chain), each failure named. One read of the document serves both.
 */
async function documentStep(context: AcceptanceCheckContext, request: RegisterDocumentUnderCheck): Promise<AcceptanceFindings> {
  const document = request.document ?? requestFileSlices(context.sql, request.queueMessageId, 'document', request.documentSize);
  const outcome = await context.documents.check(document, { timeoutMs: context.xmlCheckTimeoutMs, signatures: signaturesOf(request) });
  return {
    errors: [...(outcome.xmlFailure === undefined ? [] : [{ code: 'XML_VALIDATION_ERROR' as const, message: outcome.xmlFailure.slice(0, 300) }]), ...outcome.signatureFindings],
    warnings: context.documents.checksChains ? [] : [CHAIN_NOT_CHECKED],
  };
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

/** The acceptance checks of a RegisterDocument, step by step: the errors for its acceptance callback (none: accepted), and its warnings. */
export async function registerDocumentAcceptance(context: AcceptanceCheckContext, request: RegisterDocumentUnderCheck): Promise<AcceptanceFindings> {
  if (request.intakeErrors && request.intakeErrors.length > 0) return { errors: request.intakeErrors, warnings: [] };
  const document = await documentStep(context, request);
  return {
    errors: [...document.errors, ...snilsStep(request), ...creationDateStep(request), ...uniquenessStep(request)],
    warnings: document.warnings,
  };
}
