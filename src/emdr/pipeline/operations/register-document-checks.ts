import type { CallbackErrorItem } from '../../errors/codes.js';
import { instantMs } from '../../values/instant.js';
import type { NamedSignature } from '../../signatures/verify.js';
import { CHAIN_NOT_CHECKED } from '../document-check/document-check.js';
import type { AcceptanceContext, AcceptanceFindings } from './operation-handler.js';
import { requestFileSlices, requestSignatures, type RequestSignatures } from '../lifecycle/request-files.js';
import type { RegisterMetadata } from '../lifecycle/requests.js';
import { snilsChecksumValid } from '../../values/values.js';
import { kindFindings } from '../../prechecks/kinds.js';

/**
 * The acceptance checks of a RegisterDocument request that need no registry: each a named step of
 * registerDocumentAcceptance (at the end of this file), on what the acceptance stage claimed.
 */

/** A RegisterDocument request as the acceptance stage claimed it. */
export interface RegisterDocumentUnderCheck {
  queueMessageId: string;
  /** The clinic's account: waiting documents get a check worker by it (the clinic with the fewest checks under way first). */
  clientId: string;
  /** Files that were not base64 at intake: the request is rejected with these, unread. */
  intakeErrors: CallbackErrorItem[] | null;
  metadata: RegisterMetadata;
  /** The document, when the claim brought it along (a small one); else it is read in slices. */
  document: Buffer | null;
  documentSize: number;
  /** The signatures, when the claim brought them along (small ones); else they are read when a check worker takes the request. */
  signatures: RequestSignatures | 'stored';
  /** An earlier request of the same clinic carries the same localUid (the claim's query looked). */
  duplicateLocalUid: boolean;
}

type AcceptanceCheckContext = Pick<AcceptanceContext, 'sql' | 'documents' | 'xmlCheckTimeoutMs'>;

/** The organization's signature and each personal one, named as the request names them. */
function signaturesOf({ signature, personalSignatures }: RequestSignatures): NamedSignature[] {
  return [
    { name: 'signature', bytes: signature ?? Buffer.alloc(0) },
    ...(personalSignatures ?? []).map((item, index) => ({
      name: `personalSignatures/${index}/signature`,
      bytes: Buffer.from(item.signature, 'base64'),
      personal: true,
      signer: item.signer,
    })),
  ];
}

/**
 * XML_NOT_WELL_FORMED unless the document is well-formed UTF-8 XML within the depth limit; each
 * signature verified over it (its structure, digest, value, certificate's validity and, with a trust
 * store, chain) and held to the registry's signature rules (signatures/verify.ts), each failure
 * named; DOCUMENT_CHECK_LIMIT when the time or memory limit stopped the checks. One read of the
 * document serves both.
 */
async function documentStep(context: AcceptanceCheckContext, request: RegisterDocumentUnderCheck): Promise<AcceptanceFindings> {
  const document = request.document ?? requestFileSlices(context.sql, request.queueMessageId, 'document', request.documentSize);
  const outcome = await context.documents.check(document, {
    timeoutMs: context.xmlCheckTimeoutMs,
    signatures:
      request.signatures === 'stored'
        ? async () => signaturesOf(await requestSignatures(context.sql, request.queueMessageId))
        : signaturesOf(request.signatures),
    documentCreatedAt: instantMs(request.metadata.creationDateTime),
    turnOf: request.clientId,
  });
  if (outcome.limitFailure !== undefined) return { errors: [{ code: 'DOCUMENT_CHECK_LIMIT', message: outcome.limitFailure }], warnings: [] };
  return {
    errors: [
      ...(outcome.xmlFailure === undefined ? [] : [{ code: 'XML_NOT_WELL_FORMED' as const, message: outcome.xmlFailure.slice(0, 300) }]),
      ...outcome.signatureFindings,
    ],
    warnings: context.documents.checksChains ? [] : [CHAIN_NOT_CHECKED],
  };
}

function snilsStep(request: RegisterDocumentUnderCheck): CallbackErrorItem[] {
  return snilsChecksumValid(request.metadata.patientSnils) ? [] : [{ code: 'VALIDATION_ERROR', message: 'patientSnils: the check number does not match' }];
}

function creationDateStep(request: RegisterDocumentUnderCheck): CallbackErrorItem[] {
  return instantMs(request.metadata.creationDateTime) > Date.now() ? [{ code: 'WRONG_CREATION_DATE', message: 'creationDateTime lies in the future' }] : [];
}

/**
 * The earliest request with a localUid, of any clinic, wins; later ones with another body are
 * duplicates. The answer is the registry's own (NOT_UNIQUE_PROVIDED_ID, its words) and the same
 * whoever used the localUid, so it tells a clinic nothing about another's documents.
 */
const LOCAL_UID_TAKEN: CallbackErrorItem = { code: 'NOT_UNIQUE_PROVIDED_ID', message: 'a document with this localUid is already registered' };

function uniquenessStep(request: RegisterDocumentUnderCheck): CallbackErrorItem[] {
  return request.duplicateLocalUid ? [LOCAL_UID_TAKEN] : [];
}

/** The acceptance checks of a RegisterDocument, step by step: the errors for its acceptance callback (none: accepted), and its warnings. */
export async function registerDocumentAcceptance(context: AcceptanceCheckContext, request: RegisterDocumentUnderCheck): Promise<AcceptanceFindings> {
  if (request.intakeErrors && request.intakeErrors.length > 0) return { errors: request.intakeErrors, warnings: [] };
  const document = await documentStep(context, request);
  return {
    errors: [
      ...kindFindings(request.metadata.kind, request.metadata.creationDateTime),
      ...document.errors,
      ...snilsStep(request),
      ...creationDateStep(request),
      ...uniquenessStep(request),
    ],
    warnings: document.warnings,
  };
}
