import { FILE_CALLBACKS, sqlList, type Operation } from './lifecycle.js';

/**
 * A due callback as the delivery stage works on it, and the SQL that reads it, in one place: the
 * delivery claim (stages/delivery.ts) and a settle that hands the callback it emits straight to this
 * process's delivery stage (transitions.ts) return the same columns.
 */
export interface ClaimedCallback {
  id: string;
  /** Scheme, host and port of the URL: deliveries are shared fairly between origins, and each has its circuit. */
  origin: string;
  name: string;
  operation: Operation;
  url: string;
  /** The body's JSON, as stored. */
  payload: string;
  queue_message_id: string;
  sequence: number;
  round_attempts: number;
  business_id: string;
  user_name: string;
  callback_user: string;
  callback_token_sealed: Buffer;
  signing_secret_sealed: Buffer;
  document_size: number | null;
  signature_size: number | null;
  /** The x-request-id of the request that created the callback: the client's own, else the gateway's. */
  request_id: string;
  /** The request's W3C traceparent: each attempt's span continues its trace (src/tracing/). */
  trace_parent: string | null;
}

/** Where the columns of a ClaimedCallback come from: the callback's alias, the clinic's (emdr_clients), and SQL for the request's part. */
export interface CallbackRowSources {
  callback: string;
  client: string;
  operation: string;
  requestId: string;
  traceParent: string;
  /** Octets of the request's document and signature (read only for a callback whose body carries them). */
  documentOctets: string;
  signatureOctets: string;
}

/** The SQL list of a ClaimedCallback's columns. */
export function claimedCallbackColumns(from: CallbackRowSources): string {
  const c = from.callback;
  const k = from.client;
  const carriesFile = `${c}.name in (${sqlList(FILE_CALLBACKS)})`;
  return `${c}.id, ${c}.origin, ${c}.name, ${from.operation} as operation, ${c}.url, ${c}.payload::text as payload, ${c}.queue_message_id, ${c}.sequence, ${c}.round_attempts,
          ${from.requestId} as request_id, ${from.traceParent} as trace_parent,
          ${k}.business_id, ${k}.user_name, ${k}.callback_user, ${k}.callback_token_sealed, ${k}.signing_secret_sealed,
          case when ${carriesFile} then ${from.documentOctets} end as document_size,
          case when ${carriesFile} then ${from.signatureOctets} end as signature_size`;
}

/** A callback URL's origin, as emdr_callbacks' generated column `origin` computes it (emdr migrations): the key of its delivery turns. */
export function callbackOrigin(url: string): string {
  const match = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]+/.exec(url);
  return match ? match[0].toLowerCase() : url;
}
