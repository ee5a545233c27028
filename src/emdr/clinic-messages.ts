/**
 * A clinic's own view of its requests and their callbacks (what the delivery console at /console
 * shows): ListMessages, a page of its requests newest first, and ReplayMessage, its failed
 * callbacks sent again. The same replay serves the operator's `callbacks replay`.
 */
import type PgBoss from 'pg-boss';
import type { Knex } from 'knex';
import type { Context } from 'openapi-backend';
import type { components, operations } from '../../generated/emdr-api.js';
import { replayFailedCallbacks } from '../callbacks/delivery.js';
import type { ClinicAccount } from './clients.js';
import { ApiError } from './errors.js';
import type { OperationHandler } from './http.js';
import { MESSAGE_COLUMNS, messageStates } from './messages.js';
import { refetchDroppedFile } from './pipeline.js';
import type { RegistryPort } from './registry/port.js';

type MessageList = components['schemas']['MessageList'];
type ReplayAcknowledgement = components['schemas']['ReplayAcknowledgement'];
type ListQuery = NonNullable<operations['ListMessages']['parameters']['query']>;

export interface ClinicMessageDependencies {
  knex: Knex;
  boss: PgBoss;
  registry: RegistryPort;
  retryScheduleMs: readonly number[];
}

const DEFAULT_PAGE = 20;

/**
 * A cursor is the position after the last request of a page: its creation time in microseconds
 * since the epoch and its queueMessageId (the order is created_at, then queue_message_id, both
 * descending). Every string of the spec's pattern is a position, so no cursor is refused.
 */
function parseCursor(cursor: string): { micros: string; queueMessageId: string } {
  const [micros, queueMessageId] = cursor.split('_') as [string, string];
  return { micros, queueMessageId };
}

/** A page of the clinic's requests, newest first (keyset pagination, see parseCursor). */
export async function listMessages(knex: Knex, clientId: number, query: ListQuery): Promise<MessageList> {
  const limit = query.limit ?? DEFAULT_PAGE;
  const rows = knex('emdr_requests as r')
    .where('r.client_id', clientId)
    .orderBy([{ column: 'r.created_at', order: 'desc' }, { column: 'r.queue_message_id', order: 'desc' }])
    .limit(limit + 1)
    .select(...MESSAGE_COLUMNS.map((column) => `r.${column}`), knex.raw(`(extract(epoch from r.created_at) * 1000000)::bigint::text as created_micros`));
  if (query.state !== undefined) rows.where('r.state', query.state);
  if (query.callbackState !== undefined) {
    rows.whereExists((exists) => exists.select(knex.raw('1')).from('emdr_callbacks as c').whereRaw('c.queue_message_id = r.queue_message_id').andWhere('c.state', query.callbackState!));
  }
  if (query.cursor !== undefined) {
    const { micros, queueMessageId } = parseCursor(query.cursor);
    // Microseconds as an interval of whole microseconds: exact, where a float of seconds would round.
    rows.whereRaw(`(r.created_at, r.queue_message_id) < (timestamptz 'epoch' + ?::bigint * interval '1 microsecond', ?::uuid)`, [micros, queueMessageId]);
  }
  const found = await rows;
  const page = found.slice(0, limit);
  const list: MessageList = { items: await messageStates(knex, page) };
  if (found.length > limit) {
    const last = page[page.length - 1];
    list.nextCursor = `${last.created_micros}_${last.queue_message_id}`;
  }
  return list;
}

/**
 * Puts the failed callbacks of a request back on a fresh retry schedule (a file callback whose copy
 * of the document was dropped fetches it again first); undefined when there is no such request
 * (of `clientId`, when given), else the webhook ids replayed, possibly none.
 */
export async function replayRequestCallbacks(
  dependencies: ClinicMessageDependencies,
  queueMessageId: string,
  clientId?: number,
): Promise<string[] | undefined> {
  const { knex, boss, registry, retryScheduleMs } = dependencies;
  const request = knex('emdr_requests').where({ queue_message_id: queueMessageId });
  if (clientId !== undefined) request.where({ client_id: clientId });
  if (!(await request.first('queue_message_id'))) return undefined;
  await refetchDroppedFile(knex, registry, queueMessageId);
  return replayFailedCallbacks(knex, boss, retryScheduleMs, queueMessageId);
}

export function clinicMessageHandlers(dependencies: ClinicMessageDependencies): Record<string, OperationHandler> {
  const clinicOf = (context: Context) => context.security?.Token as ClinicAccount;
  return {
    ListMessages: async (context: Context) => {
      const query = context.request.query as unknown as ListQuery;
      // openapi-backend leaves query values as strings; the schema checked that limit is an integer.
      const limit = query.limit === undefined ? undefined : Number(query.limit);
      const body = await listMessages(dependencies.knex, clinicOf(context).id, { ...query, ...(limit === undefined ? {} : { limit }) });
      return { status: 200, body };
    },

    ReplayMessage: async (context: Context) => {
      const { queueMessageId } = context.request.params as { queueMessageId: string };
      const replayed = await replayRequestCallbacks(dependencies, queueMessageId, clinicOf(context).id);
      if (replayed === undefined) throw ApiError.single(404, 'NOT_FOUND', 'no such request');
      if (replayed.length === 0) throw ApiError.single(409, 'NOTHING_TO_REPLAY', 'no callback of this request has failed: nothing to replay');
      const body: ReplayAcknowledgement = { queueMessageId, replayed };
      return { status: 202, body };
    },
  };
}
