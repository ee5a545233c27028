import type { Sql } from '../../../db/sql.js';
import type { Logger } from '../../../logging/logger.js';
import type { Metrics } from '../../../metrics/metrics.js';
import type { CallbackErrorItem } from '../../errors/codes.js';
import type { RegistryPort } from '../../registry/port.js';
import type { CallbackName, Operation, RequestState } from './lifecycle.js';

/**
 * What the stages of interface B's pipeline share: the request row as they read it and their
 * context. The rows are their own queue (src/work/stage.ts): each stage claims requests in the
 * state lifecycle.ts gives it; a callback in state `pending` waits for its next attempt;
 * `available_at` is when a row may be claimed (a claim leases it for JOB_EXPIRY; a submitted
 * request's is its deadline).
 */

/** What every stage's claim returns of a request (transitions.ts, claimRequests); a stage's `returning` adds to it. */
export interface ClaimedRequestRow {
  queue_message_id: string;
  client_id: string;
  operation: Operation;
  state: RequestState;
  callback_url: string;
  metadata: RegisterMetadata | DemandMetadata;
  organizations: string[] | null;
  claims: number;
  /** The W3C traceparent of the request that stored the row: the stages' spans continue its trace (src/tracing/). */
  trace_parent: string | null;
}

/** What the request row keeps besides the files (`metadata`). */
export interface RegisterMetadata {
  localUid: string;
  kind: string;
  organization: string;
  patientSnils: string;
  creationDateTime: string;
  documentNumber?: string;
  replaces?: string;
  /** The registry's checksum of the organization's signature, when the request gave it (since 2.0.0). */
  signatureChecksum?: string;
}

export interface DemandMetadata {
  emdrId: string;
  clientMessageId: string;
  /** 11 digits: the patient the clinic names for another organization's document. */
  patientSnils?: string;
}

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
  /** How long a submitted request waits for the registry's answer (REGISTRY_DEADLINE). */
  deadlineMs: number;
  /** Loops per stage, each with one batch in hand (WORKER_CONCURRENCY). */
  loops?: number;
  /** Callback attempts, deliveries and failures. */
  metrics?: Metrics;
}
