import type { components } from '../../../../generated/emdr-api.js';
import { statement, type Queryable } from '../../../db/sql.js';

type MessageState = components['schemas']['MessageState'];
type CallbackState = components['schemas']['CallbackState'];

/** A request with its callbacks and their attempts, as MESSAGE_COLUMNS selects it. */
export interface MessageRow {
  queue_message_id: string;
  operation: MessageState['operation'];
  state: MessageState['state'];
  local_uid: string | null;
  client_message_id: string | null;
  emdr_id: string | null;
  errors: MessageState['errors'] | null;
  created_at: Date;
  updated_at: Date;
  /** The request's callbacks with their attempts, in order (JSON built by the database). */
  callbacks: Array<{
    id: string;
    name: CallbackState['name'];
    url: string;
    state: CallbackState['state'];
    last_error: string | null;
    delivered_at: string | null;
    attempts: Array<{ attempt: number; at: string; http_status: number | null; error: string | null; duration_ms: number | null }>;
  }>;
}

/** The select list of a MessageRow from `emdr_requests r`: the callbacks and attempts come as JSON, so a request is one row. */
export const MESSAGE_COLUMNS = `r.queue_message_id, r.operation, r.state, r.local_uid, r.client_message_id, r.emdr_id, r.errors, r.created_at, r.updated_at,
          coalesce((
            select json_agg(json_build_object(
                     'id', c.id, 'name', c.name, 'url', c.url, 'state', c.state, 'last_error', c.last_error,
                     'delivered_at', to_char(c.delivered_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                     'attempts', coalesce((
                        select json_agg(json_build_object('attempt', a.attempt, 'at', to_char(a.at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                                                          'http_status', a.http_status, 'error', a.error, 'duration_ms', a.duration_ms) order by a.attempt)
                          from emdr_callback_attempts a where a.callback_id = c.id), '[]'::json))
                   order by c.sequence)
              from emdr_callbacks c where c.queue_message_id = r.queue_message_id), '[]'::json) as callbacks`;

/** The request ($1), of the clinic $2 unless it is null, with its callbacks and their attempts: one query. */
const MESSAGE = statement(
  'emdr_message_state',
  `select ${MESSAGE_COLUMNS}
     from emdr_requests r
    where r.queue_message_id = $1 and ($2::bigint is null or r.client_id = $2)`,
);

/** The state of a request and its callbacks; `clientId` limits it to that clinic's requests. */
export async function messageState(sql: Queryable, queueMessageId: string, clientId?: number): Promise<MessageState | undefined> {
  const request = await sql.row<MessageRow>(MESSAGE, [queueMessageId, clientId ?? null]);
  return request ? messageStateOf(request) : undefined;
}

function callbackStateOf(callback: MessageRow['callbacks'][number]): CallbackState {
  const item: CallbackState = {
    webhookId: callback.id,
    name: callback.name,
    url: callback.url,
    state: callback.state,
    attempts: callback.attempts.map((attempt) => ({
      attempt: attempt.attempt,
      at: attempt.at,
      ...(attempt.http_status === null ? {} : { httpStatus: attempt.http_status }),
      ...(attempt.error === null ? {} : { error: attempt.error }),
      ...(attempt.duration_ms === null ? {} : { durationMs: attempt.duration_ms }),
    })),
  };
  if (callback.last_error !== null) item.lastError = callback.last_error;
  if (callback.delivered_at !== null) item.deliveredAt = callback.delivered_at;
  return item;
}

/** The MessageState of a row of MESSAGE_COLUMNS. */
export function messageStateOf(request: MessageRow): MessageState {
  const state: MessageState = {
    queueMessageId: request.queue_message_id,
    operation: request.operation,
    state: request.state,
    createdAt: request.created_at.toISOString(),
    updatedAt: request.updated_at.toISOString(),
    callbacks: request.callbacks.map(callbackStateOf),
  };
  if (request.local_uid !== null) state.localUid = request.local_uid;
  if (request.client_message_id !== null) state.clientMessageId = request.client_message_id;
  if (request.emdr_id !== null) state.emdrId = request.emdr_id;
  if (request.errors !== null) state.errors = request.errors;
  return state;
}
