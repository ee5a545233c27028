import { CLASSIFIER_305, type ClassifierCode } from './classifier-305.js';

/**
 * Every error code of interface B, in one place: the 128 codes of classifier
 * 1.2.643.5.1.13.13.99.2.305 (classifier-305.ts, the table they are read from), each used only with
 * its classifier meaning, and the gateway's own codes for conditions of the gateway that no
 * classifier code spells (an HTTP refusal, a document the gateway could not parse or check).
 */

/** The gateway's own codes: no classifier code spells these conditions. */
export const GATEWAY_CODES = {
  UNAUTHENTICATED:
    "a header of businessId, user and token is missing, or they name no active clinic account (HTTP 401). The classifier's ACCESS_DENIED is about getting a document",
  FORBIDDEN: 'the clinic account does not act for the organization, or did not register the callback URL (HTTP 403)',
  NOT_FOUND: 'no such operation, request or registry item of this clinic (HTTP 404)',
  METHOD_NOT_ALLOWED: 'method not allowed on this path (HTTP 405)',
  NOT_IMPLEMENTED: 'operation not implemented (HTTP 501)',
  REQUEST_TOO_LARGE: "body larger than the operation's limit: BODY_LIMIT for RegisterDocument, 64 KiB for the others (HTTP 413)",
  UNSUPPORTED_MEDIA_TYPE: 'body is not application/json in UTF-8, or is compressed: Content-Encoding other than identity (HTTP 415)',
  NOTHING_TO_REPLAY: 'a replay of a request none of whose callbacks has failed (HTTP 409)',
  SERVICE_UNAVAILABLE: 'the database, or the registry for a search or a record, cannot be reached right now; retry after Retry-After seconds (HTTP 503)',
  XML_NOT_WELL_FORMED:
    "the document is not well-formed UTF-8 XML, or nests elements deeper than the limit (acceptance callback). The classifier's XML_VALIDATION_ERROR is the registry's Schematron step",
  DOCUMENT_CHECK_LIMIT:
    "the document and its signatures could not be checked within XML_CHECK_TIMEOUT or the check's memory (acceptance callback): neither is known to be wrong",
  CERTIFICATE_CHAIN_NOT_CHECKED: 'warning: the signatures verified, but no trust store is configured, so their certificate chains were not checked',
} as const;

export type GatewayCode = keyof typeof GATEWAY_CODES;

/** Where the gateway itself reports a classifier code: an HTTP answer, the acceptance callback (predicted before the registry), or the result callback. */
export type GatewayUse = 'http' | 'acceptance' | 'result';

/**
 * The classifier codes the gateway reports on its own, and where; every other classifier code
 * reaches a clinic only as the registry reported it. Each is used with its classifier meaning.
 */
export const GATEWAY_USES: Readonly<Partial<Record<ClassifierCode, readonly GatewayUse[]>>> = {
  VALIDATION_ERROR: ['http', 'acceptance'],
  RATE_LIMIT: ['http'],
  INTERNAL_ERROR: ['http', 'result'],
  REGISTRY_ITEM_NOT_FOUND: ['http', 'acceptance'],
  NOT_UNIQUE_PROVIDED_ID: ['acceptance'],
  WRONG_CREATION_DATE: ['acceptance'],
  OBJECT_NOT_FOUND: ['acceptance'],
  NO_DOCUMENT_KIND_ON_DATE: ['acceptance'],
  NO_SIGNATURE: ['acceptance'],
  SIGNATURE_DECODING_ERROR: ['acceptance'],
  WRONG_SIGNATURE_FORMAT: ['acceptance'],
  UNKNOWN_ALGORITHM: ['acceptance'],
  NO_END_ENTITY_CERTIFICATE: ['acceptance'],
  MULTIPLE_SIGNERS: ['acceptance'],
  SIGNATURE_DUPLICATION: ['acceptance'],
  INCONSISTENT_DIGESTS: ['acceptance'],
  SIGNATURE_VERIFICATION_ERROR: ['acceptance'],
  INVALID_CERT_KEY_USAGE: ['acceptance'],
  DOC_DATE_MISMATCH_CERT_NOT_AFTER: ['acceptance'],
  DOC_DATE_MISMATCH_CERT_NOT_BEFORE: ['acceptance'],
  PERSONAL_SIG_CERT_NOT_ACTUAL_ON_DOC_CREATION_DT: ['acceptance'],
  PERSONAL_SIG_CERT_NOT_ACTUAL_ON_CHECK_DT: ['acceptance'],
  CANT_BUILD_CERT_CHAIN_TO_ACCREDITED_CA_CERT: ['acceptance'],
  VALUE_MISMATCH_METADATA_AND_CERTIFICATE: ['acceptance'],
  SIGNER_ORG_MISMATCH: ['acceptance'],
  INVALID_DOCTOR_FAMILY: ['acceptance'],
  INVALID_DOCTOR_NAME: ['acceptance'],
  INVALID_DOCTOR_PATRONYMIC: ['acceptance'],
  LEGAL_AUTHENTICATOR_NOT_FOUND: ['acceptance'],
  INVALID_DOCTOR_INFO: ['acceptance'],
  INVALID_DOCTOR_ID: ['acceptance'],
  ASYNC_RESPONSE_TIMEOUT: ['result'],
};

export type ErrorCode = ClassifierCode | GatewayCode;

export interface ErrorCodeEntry {
  /** The classifier's id; null for a gateway code. */
  id: number | null;
  /** English: the classifier's meaning, or the gateway code's. */
  meaning: string;
  /** Where the gateway reports it itself; empty: only relayed from the registry. */
  uses: readonly GatewayUse[];
}

/** Every code: the classifier's, in the order of their ids, then the gateway's. */
export const ERROR_CODES: Readonly<Record<ErrorCode, ErrorCodeEntry>> = Object.fromEntries([
  ...CLASSIFIER_305.filter((entry, index, all) => all.findIndex((other) => other.mnemonic === entry.mnemonic) === index).map(
    (entry): [string, ErrorCodeEntry] => [entry.mnemonic, { id: entry.id, meaning: entry.meaning, uses: GATEWAY_USES[entry.mnemonic] ?? [] }],
  ),
  ...Object.entries(GATEWAY_CODES).map(([code, meaning]): [string, ErrorCodeEntry] => [code, { id: null, meaning, uses: [] }]),
]) as Record<ErrorCode, ErrorCodeEntry>;

/** Codes a gateway HTTP answer may carry (`ErrorItem.code` in the spec). */
export const HTTP_ERROR_CODES: readonly ErrorCode[] = [
  ...(Object.keys(GATEWAY_USES) as ClassifierCode[]).filter((code) => GATEWAY_USES[code]!.includes('http')),
  ...([
    'UNAUTHENTICATED',
    'FORBIDDEN',
    'NOT_FOUND',
    'METHOD_NOT_ALLOWED',
    'NOT_IMPLEMENTED',
    'REQUEST_TOO_LARGE',
    'UNSUPPORTED_MEDIA_TYPE',
    'NOTHING_TO_REPLAY',
    'SERVICE_UNAVAILABLE',
  ] as const),
];

/** The gateway's codes of callbacks' `errors` beside the classifier's (`CallbackError.code` in the spec). */
export const CALLBACK_GATEWAY_CODES: readonly GatewayCode[] = ['XML_NOT_WELL_FORMED', 'DOCUMENT_CHECK_LIMIT'];

/** The gateway's warning codes (`CallbackWarning.code`). */
export const WARNING_CODES: readonly GatewayCode[] = ['CERTIFICATE_CHAIN_NOT_CHECKED'];

/**
 * An error reported in a callback body: `{code, message}`. The gateway's own findings use the
 * catalog above; an error the registry reported is relayed with its code as it came, which the
 * catalog may not list (a newer classifier version).
 */
export interface CallbackErrorItem {
  code: ErrorCode | (string & {});
  message: string;
}

/** The spec's enums of codes (scripts/spec-codes.ts writes them, test/emdr/classifier.test.ts compares): per schema, its `code`'s known values. */
export function specCodeLists(): Record<'ErrorItem' | 'CallbackError' | 'CallbackWarning', string[]> {
  const classifier = [...new Set(CLASSIFIER_305.map((entry) => entry.mnemonic))];
  return { ErrorItem: [...HTTP_ERROR_CODES], CallbackError: [...classifier, ...CALLBACK_GATEWAY_CODES], CallbackWarning: [...WARNING_CODES] };
}
