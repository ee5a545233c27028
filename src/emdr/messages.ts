import type { Knex } from 'knex';
import type { components } from '../../generated/emdr-api.js';

type MessageState = components['schemas']['MessageState'];
type CallbackState = components['schemas']['CallbackState'];

/** The state of a request and its callbacks; `clientId` limits it to that clinic's requests. */
export async function messageState(knex: Knex, queueMessageId: string, clientId?: number): Promise<MessageState | undefined> {
  const query = knex('emdr_requests').where({ queue_message_id: queueMessageId });
  if (clientId !== undefined) query.where({ client_id: clientId });
  const request = await query.first('queue_message_id', 'operation', 'state', 'local_uid', 'client_message_id', 'emdr_id', 'errors', 'created_at', 'updated_at');
  if (!request) return undefined;
  const callbacks = await knex('emdr_callbacks').where({ queue_message_id: queueMessageId }).orderBy('sequence').select('id', 'name', 'url', 'state', 'last_error', 'delivered_at');
  const attempts = await knex('emdr_callback_attempts')
    .whereIn('callback_id', callbacks.map((callback) => callback.id))
    .orderBy(['callback_id', 'attempt'])
    .select('callback_id', 'attempt', 'at', 'http_status', 'error');
  const state: MessageState = {
    queueMessageId: request.queue_message_id,
    operation: request.operation,
    state: request.state,
    createdAt: request.created_at.toISOString(),
    updatedAt: request.updated_at.toISOString(),
    callbacks: callbacks.map((callback): CallbackState => {
      const item: CallbackState = {
        webhookId: callback.id,
        name: callback.name,
        url: callback.url,
        state: callback.state,
        attempts: attempts
          .filter((attempt) => attempt.callback_id === callback.id)
          .map((attempt) => ({
            attempt: attempt.attempt,
            at: attempt.at.toISOString(),
            ...(attempt.http_status === null ? {} : { httpStatus: attempt.http_status }),
            ...(attempt.error === null ? {} : { error: attempt.error }),
          })),
      };
      if (callback.last_error !== null) item.lastError = callback.last_error;
      if (callback.delivered_at !== null) item.deliveredAt = callback.delivered_at.toISOString();
      return item;
    }),
  };
  if (request.local_uid !== null) state.localUid = request.local_uid;
  if (request.client_message_id !== null) state.clientMessageId = request.client_message_id;
  if (request.emdr_id !== null) state.emdrId = request.emdr_id;
  if (request.errors !== null) state.errors = request.errors;
  return state;
}
