import type { Queryable } from '../../../db/sql.js';
import type { CallbackErrorItem } from '../../errors/codes.js';
import type { PersonalSignatureOfRequest, RegistryOutcome, RegistryPort, Submission } from '../../registry/port.js';
import type { DocumentCheckPool } from '../document-check/document-check.js';
import type { ClaimedRequestRow } from '../lifecycle/requests.js';
import type { Disclosure } from '../lifecycle/transitions.js';

/**
 * What each operation does at each step of the lifecycle (lifecycle.ts): the stages and the outcome
 * recorder call the handler of the request's operation, so that no stage branches on operations.
 */
export interface OperationHandler {
  /** The outcome of the registry this operation waits for. */
  expects: 'registration' | 'file';
  /** The acceptance checks: errors (none: accepted) and warnings. */
  accept(request: ClaimedForAcceptance, context: AcceptanceContext): Promise<AcceptanceFindings>;
  /** The acceptance callback's body, without its status and errors. */
  acceptancePayload(request: ClaimedRequestRow, findings: AcceptanceFindings): Record<string, unknown>;
  /** Sends the request to the registry (under its queueMessageId as the message id). */
  submit(registry: RegistryPort, request: ClaimedForSubmission): Promise<Submission>;
  /** Whether the registry pulls the request's document while it works on it (getDocumentFile, kept-files.ts). */
  registryPullsDocument: boolean;
  /** The request's result from the registry's outcome (a refusal, the deadline's timeout: `ok: false`). */
  result(request: ClaimedRequestRow, outcome: RegistryOutcome): Result;
}

export interface AcceptanceContext {
  sql: Queryable;
  registry: RegistryPort;
  documents: DocumentCheckPool;
  xmlCheckTimeoutMs: number;
}

/** What the acceptance callback reports: errors (none: accepted) and warnings. */
export interface AcceptanceFindings {
  errors: CallbackErrorItem[];
  warnings: CallbackErrorItem[];
}

/** A request as the acceptance stage claims it: what the checks need comes along. */
export interface ClaimedForAcceptance extends ClaimedRequestRow {
  intake_errors: CallbackErrorItem[] | null;
  /** Whether the signatures came with the claim (small ones); else both are null here and read when the check begins. */
  signatures_inline: boolean;
  signature: Buffer | null;
  personal_signatures: PersonalSignatureOfRequest[] | null;
  document_size: number;
  /** The document itself when it is small (it came with the claim). */
  document: Buffer | null;
  duplicate_local_uid: boolean;
}

/** A request as the submission stage claims it: the signatures go to the registry with it. */
export interface ClaimedForSubmission extends ClaimedRequestRow {
  signature: Buffer | null;
  personal_signatures: PersonalSignatureOfRequest[] | null;
}

/** How a request ends, and the body of its result callback. */
export interface Result {
  state: 'completed' | 'failed';
  errors: CallbackErrorItem[];
  emdrId?: string;
  payload: Record<string, unknown>;
  /** Whether the request keeps its copy of the files (the file its result callback carries). */
  keepFiles: boolean;
  disclosure?: Disclosure;
}
