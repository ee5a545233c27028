import type { Knex } from 'knex';
import type { PurgeStep } from '../db/retention.js';

/**
 * What interface B keeps and for how long. A request's copy of the files (the submitted document
 * and signatures, or the file fetched for DemandContent) is dropped as soon as no callback of the
 * request is left to send: the request ended (rejected, completed, failed) and none of its
 * callbacks is pending. A replay of a dropped file callback fetches the file again
 * (pipeline.ts, refetchDroppedFile). The request rows themselves, with their callbacks and
 * attempts, go after RETENTION. The built-in registry keeps its documents: it plays the national
 * registry. Deliveries recorded in emdr_document_disclosures stay too.
 */

/** The requests (all, or the one named) whose files may go: ended, with callbacks, none of them pending. */
function settledWithFiles(knex: Knex, queueMessageId?: string): Knex.QueryBuilder {
  const query = knex('emdr_requests as r')
    .select('r.queue_message_id')
    .whereIn('r.state', ['rejected', 'completed', 'failed'])
    .where((files) => files.whereNotNull('r.document').orWhereNotNull('r.signature').orWhereNotNull('r.personal_signatures'))
    .whereExists((callbacks) => callbacks.select(knex.raw('1')).from('emdr_callbacks as c').whereRaw('c.queue_message_id = r.queue_message_id'))
    .whereNotExists((pending) => pending.select(knex.raw('1')).from('emdr_callbacks as c').whereRaw('c.queue_message_id = r.queue_message_id').where('c.state', 'pending'));
  if (queueMessageId !== undefined) query.where('r.queue_message_id', queueMessageId);
  return query;
}

/** Drops the files of the settled requests (at most `limit`, or the one named); returns how many requests. */
export async function dropSettledFiles(knex: Knex, options: { queueMessageId?: string; limit?: number }): Promise<number> {
  const settled = settledWithFiles(knex, options.queueMessageId);
  if (options.limit !== undefined) settled.limit(options.limit);
  return knex('emdr_requests').whereIn('queue_message_id', settled).update({ document: null, signature: null, personal_signatures: null });
}

/**
 * Request rows, their callbacks and attempts, once the request ended and its last activity (the
 * request's last change, a callback's last attempt) is older than the cutoff, with no callback
 * pending. A request that has not ended is work in progress and stays.
 */
async function purgeRequests(trx: Knex.Transaction, cutoff: Date, limit: number): Promise<number> {
  const { rows } = await trx.raw<{ rows: Array<{ deleted: number }> }>(
    `with doomed as (
       select r.queue_message_id
         from emdr_requests r
        where r.state in ('rejected', 'completed', 'failed')
          and r.updated_at < ?
          and not exists (select 1 from emdr_callbacks c where c.queue_message_id = r.queue_message_id and c.state = 'pending')
          and not exists (
            select 1 from emdr_callbacks c join emdr_callback_attempts a on a.callback_id = c.id
             where c.queue_message_id = r.queue_message_id and a.at >= ?)
        limit ?
     ),
     attempts as (
       delete from emdr_callback_attempts a using emdr_callbacks c, doomed d
        where a.callback_id = c.id and c.queue_message_id = d.queue_message_id
     ),
     callbacks as (
       delete from emdr_callbacks c using doomed d where c.queue_message_id = d.queue_message_id
     ),
     requests as (
       delete from emdr_requests r using doomed d where r.queue_message_id = d.queue_message_id returning 1
     )
     select count(*)::int as deleted from requests`,
    [cutoff, cutoff, limit],
  );
  return rows[0]!.deleted;
}

export const emdrPurgeSteps: readonly PurgeStep[] = [
  // Also a sweep for requests that ended before their files were dropped at once (or before this existed).
  { name: 'emdr request files', purge: (trx, _cutoff, limit) => dropSettledFiles(trx, { limit }) },
  { name: 'emdr requests', purge: purgeRequests },
];
