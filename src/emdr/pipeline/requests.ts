import { statement, type Sql, type Statement } from '../../db/sql.js';
import type { Logger } from '../../logging/logger.js';
import type { Metrics } from '../../metrics/metrics.js';
import type { CallbackErrorItem } from '../codes.js';
import type { RegistryPort } from '../registry/port.js';

/**
 * What the stages of interface B's pipeline share: the request row as they read it, the callbacks'
 * names, and their context. The rows are their own queue (src/work/stage.ts): a request in state
 * `received` waits for acceptance, `accepted` for the registry; a callback in state `pending` for
 * its next attempt; `available_at` is when a row may be claimed (a claim leases it for JOB_EXPIRY).
 */

/** What the request row keeps besides the files (`metadata`). */
/**
 * A stage's claim: up to $1 requests in `state` whose time has come, oldest first, leased for $2 ms
 * (rows another worker holds are skipped), each returned with the stage's `returning` columns
 * (`r` is the request, `k`-subqueries may follow).
 */
export function claimRequests(name: string, state: 'received' | 'accepted', returning: string): Statement {
  // The columns every claim returns: ClaimedRequestRow.
  return statement(
    name,
    `with claimed as (
       select queue_message_id from emdr_requests
        where state = '${state}' and available_at <= now()
        order by available_at limit $1 for update skip locked
     )
     update emdr_requests r set available_at = now() + $2 * interval '1 millisecond', claims = r.claims + 1
       from claimed c where r.queue_message_id = c.queue_message_id
     returning r.queue_message_id, r.client_id, r.operation, r.callback_url, r.metadata, r.claims,
               (select k.organizations from emdr_clients k where k.id = r.client_id) as organizations${returning ? `,
               ${returning}` : ''}`,
  );
}

/** What every stage's claim returns of a request (claimRequests); a stage's `returning` adds to it. */
export interface ClaimedRequestRow {
  queue_message_id: string;
  client_id: string;
  operation: Operation;
  callback_url: string;
  metadata: RegisterMetadata | DemandMetadata;
  organizations: string[] | null;
  claims: number;
}

export interface RegisterMetadata {
  localUid: string;
  kind: string;
  organization: string;
  patientSnils: string;
  creationDateTime: string;
  documentNumber?: string;
  replaces?: string;
}

export interface DemandMetadata {
  emdrId: string;
  clientMessageId: string;
  /** 11 digits: the patient the clinic names for another organization's document. */
  patientSnils?: string;
}

export type Operation = 'RegisterDocument' | 'DemandContent';

export type CallbackName = 'SendRegisterDocumentResponse' | 'SendRegisterDocumentResultResponse' | 'SendDemandContentResponse' | 'SendDocumentFileResultResponse';

export const ACCEPTANCE_CALLBACK: Record<Operation, CallbackName> = {
  RegisterDocument: 'SendRegisterDocumentResponse',
  DemandContent: 'SendDemandContentResponse',
};

export const RESULT_CALLBACK: Record<Operation, CallbackName> = {
  RegisterDocument: 'SendRegisterDocumentResultResponse',
  DemandContent: 'SendDocumentFileResultResponse',
};

/** A callback goes to `<the clinic's base URL>/api/<name>`. */
export function callbackUrl(baseUrl: string, name: CallbackName): string {
  return `${baseUrl.replace(/\/+$/, '')}/api/${name}`;
}

export function withErrors(payload: Record<string, unknown>, errors: readonly CallbackErrorItem[]): Record<string, unknown> {
  return errors.length > 0 ? { ...payload, status: 'error', errors } : { ...payload, status: 'success' };
}

export interface PipelineContext {
  sql: Sql;
  registry: RegistryPort;
  retryScheduleMs: readonly number[];
  logger: Logger;
  /** Opens the clinics' callback secrets. */
  dataKey: Buffer;
  /** Time budget of the XML check of one document (XML_CHECK_TIMEOUT). */
  xmlCheckTimeoutMs: number;
  /** How long a claim holds a row (JOB_EXPIRY): a row not settled by then goes to another worker. */
  leaseMs: number;
  /** Loops per stage, each with one batch in hand (WORKER_CONCURRENCY). */
  loops?: number;
  /** Callback attempts, deliveries and failures. */
  metrics?: Metrics;
}
