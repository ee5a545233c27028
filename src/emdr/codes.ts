/**
 * Every error code interface B uses, in one place.
 *
 * Codes with an `id` are mnemonics of classifier 1.2.643.5.1.13.13.99.2.305 («РЭМД. Классификатор
 * кодов сообщений»). The numeric ids and meanings were taken from a public transcription of the
 * classifier's version 3.18 (an FNSI export in a public repository); they were not checked against
 * nsi.rosminzdrav.ru itself, so confirm them there before relying on the numbers. The ids of the
 * signature codes added later (4, 18, 42, 44) were read off the same transcription's order of
 * entries, which matches every id above.
 * Codes with `id: null` are the gateway's own: the classifier has no entry for these HTTP-level
 * conditions.
 */
export const ERROR_CODES = {
  ACCESS_DENIED: { id: 1, meaning: 'no permission (unknown clinic account, wrong token, or an organization the account does not act for)' },
  DIGEST_MISMATCH: { id: 6, meaning: "the digest of the file the registry pulled from the providing system does not match the registered one" },
  CANT_BUILD_CERT_CHAIN_TO_ACCREDITED_CA_CERT: { id: 4, meaning: "no chain from the signer's certificate to a trusted certificate (SIGNATURE_TRUST_STORE)" },
  CANT_REG_VERSION: { id: 5, meaning: 'registration of the document version is impossible (the replaced version is not current)' },
  INTERNAL_ERROR: { id: 11, meaning: 'internal error' },
  MIS_NOT_AVAILABLE: { id: 16, meaning: 'the providing system (МИС archive) is not available' },
  NO_END_ENTITY_CERTIFICATE: { id: 18, meaning: "the signer's certificate is not in the signature" },
  NO_SIGNATURE: { id: 21, meaning: 'the document has no signature (a CMS without signers)' },
  FILE_WAS_NOT_SENT: { id: 56, meaning: 'the providing system did not send the document file (getDocumentFile: the gateway no longer keeps it)' },
  GET_DOCUMENT_FILE_ERROR: { id: 61, meaning: 'fetching the document file from the providing system failed' },
  NOT_UNIQUE_PROVIDED_ID: { id: 25, meaning: 'a document with this local id (localUid) was already submitted' },
  REGISTRY_ITEM_NOT_FOUND: { id: 37, meaning: 'the requested registry item was not found' },
  RUNTIME_ERROR: { id: 40, meaning: 'unexpected error in the registry' },
  SIGNATURE_DECODING_ERROR: { id: 41, meaning: 'the signature could not be decoded (not base64, not a CMS SignedData)' },
  SIGNATURE_VERIFICATION_ERROR: { id: 42, meaning: "the signature does not verify: made over other bytes, a wrong signature value, or a certificate not valid at the signing time" },
  UNKNOWN_ALGORITHM: { id: 44, meaning: 'a digest, signature or key algorithm the gateway does not support' },
  WRONG_CREATION_DATE: { id: 47, meaning: 'the document creation date is later than its registration date' },
  VALIDATION_ERROR: { id: 49, meaning: 'a value failed validation (request schema, base64, SNILS check number)' },
  WRONG_SIGNATURE_FORMAT: { id: 53, meaning: 'unsupported signature format (not a detached CMS)' },
  RATE_LIMIT: { id: 95, meaning: 'protective limit reached, retry in a minute or later' },
  ASYNC_RESPONSE_TIMEOUT: { id: 97, meaning: "no asynchronous answer from the registry within REGISTRY_DEADLINE: the gateway stopped waiting (the registry may still have registered the document: SearchRegistryItem by localUid tells)" },
  XML_VALIDATION_ERROR: { id: 104, meaning: 'the document is not well-formed XML' },
  NOT_FOUND: { id: null, meaning: 'gateway: no such operation or request' },
  METHOD_NOT_ALLOWED: { id: null, meaning: 'gateway: method not allowed on this path' },
  NOT_IMPLEMENTED: { id: null, meaning: 'gateway: operation not implemented' },
  REQUEST_TOO_LARGE: { id: null, meaning: "gateway: body larger than the operation's limit (BODY_LIMIT for RegisterDocument, 64 KiB for the others)" },
  UNSUPPORTED_MEDIA_TYPE: { id: null, meaning: 'gateway: body is not application/json in UTF-8, or is compressed (Content-Encoding other than identity)' },
  NOTHING_TO_REPLAY: { id: null, meaning: 'gateway: a replay of a request none of whose callbacks has failed' },
  SERVICE_UNAVAILABLE: { id: null, meaning: 'gateway: the database cannot be reached right now; retry after Retry-After seconds' },
  CERTIFICATE_CHAIN_NOT_CHECKED: { id: null, meaning: 'gateway warning: the signatures verified, but no trust store is configured, so their certificate chains were not checked' },
} as const satisfies Record<string, { id: number | null; meaning: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/**
 * An error reported in a callback body: `{code, message}`. The gateway's own findings use the
 * catalog above; an error the registry reported is relayed with its classifier code as it came,
 * which the catalog may not list (the classifier has over a hundred).
 */
export interface CallbackErrorItem {
  code: ErrorCode | (string & {});
  message: string;
}
