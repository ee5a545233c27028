import type { Knex } from 'knex';
import type { components } from '../../generated/emdr-api.js';

type MessageState = components['schemas']['MessageState'];
type CallbackState = components['schemas']['CallbackState'];

/** The columns of emdr_requests a MessageState is made of. */
export const MESSAGE_COLUMNS = ['queue_message_id', 'operation', 'state', 'local_uid', 'client_message_id', 'emdr_id', 'errors', 'created_at', 'updated_at'] as const;

interface MessageRow {
  queue_message_id: string;
  operation: MessageState['operation'];
  state: MessageState['state'];
  local_uid: string | null;
  client_message_id: string | null;
  emdr_id: string | null;
  errors: MessageState['errors'] | null;
  created_at: Date;
  updated_at: Date;
}

/** The state of a request and its callbacks; `clientId` limits it to that clinic's requests. */
export async function messageState(knex: Knex, queueMessageId: string, clientId?: number): Promise<MessageState | undefined> {
  const query = knex('emdr_requests').where({ queue_message_id: queueMessageId });
  if (clientId !== undefined) query.where({ client_id: clientId });
  const request = await query.first(MESSAGE_COLUMNS);
  return request ? (await messageStates(knex, [request]))[0] : undefined;
}

/** Rows by a key, each group in the rows' order (Map.groupBy is ES2024, past this build's target). */
function groupBy<T>(rows: readonly T[], key: (row: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const row of rows) {
    const group = groups.get(key(row));
    if (group) group.push(row);
    else groups.set(key(row), [row]);
  }
  return groups;
}

/** The states of the given requests (rows of MESSAGE_COLUMNS), in their order: three queries, whatever their number. */
export async function messageStates(knex: Knex, requests: readonly MessageRow[]): Promise<MessageState[]> {
  const callbacks = await knex('emdr_callbacks')
    .whereIn('queue_message_id', requests.map((request) => request.queue_message_id))
    .orderBy(['queue_message_id', 'sequence'])
    .select('id', 'queue_message_id', 'name', 'url', 'state', 'last_error', 'delivered_at');
  const attempts = await knex('emdr_callback_attempts')
    .whereIn('callback_id', callbacks.map((callback) => callback.id))
    .orderBy(['callback_id', 'attempt'])
    .select('callback_id', 'attempt', 'at', 'http_status', 'error', 'duration_ms');
  const attemptsOf = groupBy(attempts, (attempt) => attempt.callback_id as string);
  const callbacksOf = groupBy(callbacks, (callback) => callback.queue_message_id as string);
  const callbackState = (callback: (typeof callbacks)[number]): CallbackState => {
    const item: CallbackState = {
      webhookId: callback.id,
      name: callback.name,
      url: callback.url,
      state: callback.state,
      attempts: (attemptsOf.get(callback.id) ?? [])
        .map((attempt) => ({
          attempt: attempt.attempt,
          at: attempt.at.toISOString(),
          ...(attempt.http_status === null ? {} : { httpStatus: attempt.http_status }),
          ...(attempt.error === null ? {} : { error: attempt.error }),
          ...(attempt.duration_ms === null ? {} : { durationMs: attempt.duration_ms }),
        })),
    };
    if (callback.last_error !== null) item.lastError = callback.last_error;
    if (callback.delivered_at !== null) item.deliveredAt = callback.delivered_at.toISOString();
    return item;
  };
  return requests.map((request) => {
    const state: MessageState = {
      queueMessageId: request.queue_message_id,
      operation: request.operation,
      state: request.state,
      createdAt: request.created_at.toISOString(),
      updatedAt: request.updated_at.toISOString(),
      callbacks: (callbacksOf.get(request.queue_message_id) ?? []).map(callbackState),
    };
    if (request.local_uid !== null) state.localUid = request.local_uid;
    if (request.client_message_id !== null) state.clientMessageId = request.client_message_id;
    if (request.emdr_id !== null) state.emdrId = request.emdr_id;
    if (request.errors !== null) state.errors = request.errors;
    return state;
  });
}
