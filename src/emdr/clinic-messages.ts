/**
 * A clinic's own view of its requests and their callbacks (what the delivery console at /console
 * shows): ListMessages, a page of its requests newest first, and ReplayMessage, its failed
 * callbacks sent again. The same replay serves the operator's `callbacks replay`.
 */
import type { components, operations } from '../../generated/emdr-api.js';
import { statement, type Sql } from '../db/sql.js';
import type { ClinicAccount } from './accounts/clients.js';
import { ApiError } from './errors/errors.js';
import type { OperationHandler, OperationRequest } from './intake/router.js';
import { MESSAGE_COLUMNS, messageStateOf, type MessageRow } from './pipeline/lifecycle/messages.js';
import { replayFailedCallbacks } from './pipeline/stages/delivery.js';
import { WORK, WORK_CHANNEL } from './pipeline/work-channel.js';

type MessageList = components['schemas']['MessageList'];
type ReplayAcknowledgement = components['schemas']['ReplayAcknowledgement'];
type ListQuery = NonNullable<operations['ListMessages']['parameters']['query']>;

export interface ClinicMessageDependencies {
  sql: Sql;
}

const DEFAULT_PAGE = 20;

/**
 * A page of a clinic's ($1) requests, newest first, by keyset: after the position ($4 µs since the
 * epoch, $5) when given; of state $2 and with a callback in state $3 when given; $6 rows.
 */
const LIST = statement(
  'emdr_list_messages',
  `select ${MESSAGE_COLUMNS}, (extract(epoch from r.created_at) * 1000000)::bigint::text as created_micros
     from emdr_requests r
    where r.client_id = $1
      and ($2::text is null or r.state = $2)
      and ($3::text is null or exists (select 1 from emdr_callbacks c where c.queue_message_id = r.queue_message_id and c.state = $3))
      -- Microseconds as an interval of whole microseconds: exact, where a float of seconds would round.
      and ($4::bigint is null or (r.created_at, r.queue_message_id) < (timestamptz 'epoch' + $4::bigint * interval '1 microsecond', $5::uuid))
    order by r.created_at desc, r.queue_message_id desc
    limit $6`,
);

const REQUEST_OF = statement('emdr_request_of_clinic', 'select 1 from emdr_requests where queue_message_id = $1 and ($2::bigint is null or client_id = $2)');
const ANNOUNCE_WORK = statement('emdr_announce_work', 'select pg_notify($1, $2)');

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
export async function listMessages(sql: Sql, clientId: number, query: ListQuery): Promise<MessageList> {
  const limit = query.limit ?? DEFAULT_PAGE;
  const cursor = query.cursor === undefined ? undefined : parseCursor(query.cursor);
  const found = await sql.rows<MessageRow & { created_micros: string }>(LIST, [
    clientId,
    query.state ?? null,
    query.callbackState ?? null,
    cursor?.micros ?? null,
    cursor?.queueMessageId ?? null,
    limit + 1,
  ]);
  const page = found.slice(0, limit);
  const list: MessageList = { items: page.map(messageStateOf) };
  if (found.length > limit) {
    const last = page[page.length - 1]!;
    list.nextCursor = `${last.created_micros}_${last.queue_message_id}`;
  }
  return list;
}

/**
 * Puts the failed callbacks of a request back on a fresh retry schedule (a file callback kept its
 * file for it, retention.ts) and wakes the workers of every process; undefined when there is no
 * such request (of `clientId`, when given), else the webhook ids replayed, possibly none.
 */
export async function replayRequestCallbacks(
  dependencies: ClinicMessageDependencies,
  queueMessageId: string,
  clientId?: number,
): Promise<string[] | undefined> {
  const { sql } = dependencies;
  if (!(await sql.row(REQUEST_OF, [queueMessageId, clientId ?? null]))) return undefined;
  const replayed = await replayFailedCallbacks(sql, queueMessageId);
  // The running workers (in any process) send them at once.
  if (replayed.length > 0) await sql.row(ANNOUNCE_WORK, [WORK_CHANNEL, WORK.callbacks]);
  return replayed;
}

export function clinicMessageHandlers(dependencies: ClinicMessageDependencies): Record<string, OperationHandler> {
  const clinicOf = (request: OperationRequest) => request.security.Token as ClinicAccount;
  return {
    ListMessages: async (request) => {
      const query = request.query as ListQuery & { limit?: number | string };
      // Query values arrive as strings; the schema checked that limit is an integer.
      const limit = query.limit === undefined ? undefined : Number(query.limit);
      const body = await listMessages(dependencies.sql, clinicOf(request).id, { ...query, ...(limit === undefined ? {} : { limit }) });
      return { status: 200, body };
    },

    ReplayMessage: async (request) => {
      const queueMessageId = request.params.queueMessageId!;
      const replayed = await replayRequestCallbacks(dependencies, queueMessageId, clinicOf(request).id);
      if (replayed === undefined) throw ApiError.single(404, 'NOT_FOUND', 'no such request');
      if (replayed.length === 0) throw ApiError.single(409, 'NOTHING_TO_REPLAY', 'no callback of this request has failed: nothing to replay');
      const body: ReplayAcknowledgement = { queueMessageId, replayed };
      return { status: 202, body };
    },
  };
}
