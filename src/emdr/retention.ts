import type { PurgeStep } from '../db/retention.js';
import { statement, type Queryable } from '../db/sql.js';
import { ENDED_STATES, FILE_CALLBACKS, sqlList } from './pipeline/lifecycle/lifecycle.js';

/**
 * What interface B keeps and for how long. A request's copy of the files is dropped as soon as
 * nothing needs it: a RegisterDocument's (the submitted document and signatures) when the request
 * ends: rejected at acceptance, or answered by the registry (which pulled the document while it
 * worked, getDocumentFile), or past its deadline; a DemandContent's (the file the archive
 * delivered) once its file callback is delivered (a failed one keeps it, so a replay sends it
 * again). The request rows themselves, with their callbacks and attempts, go after RETENTION,
 * whatever they keep. The built-in registry keeps its documents: it plays the national registry.
 * Deliveries recorded in emdr_document_disclosures stay too.
 */

const ENDED = sqlList(ENDED_STATES);

/**
 * Drops the files of at most $1 requests that have ended with no file callback left undelivered
 * (the transitions and the delivery stage do this for each request as it happens; this sweeps up
 * what ended otherwise, or before that existed).
 */
const DROP_SETTLED_FILES = statement(
  'retention_drop_settled_files',
  `update emdr_requests set document = null, signature = null, personal_signatures = null
    where queue_message_id in (
      select r.queue_message_id from emdr_requests r
       where r.state in (${ENDED})
         and (r.document is not null or r.signature is not null or r.personal_signatures is not null)
         and not exists (select 1 from emdr_callbacks c where c.queue_message_id = r.queue_message_id and c.name in (${sqlList(FILE_CALLBACKS)}) and c.state <> 'delivered')
       limit $1)`,
);

/**
 * Request rows, their callbacks and attempts, once the request ended and its last activity (the
 * request's last change, a callback's last attempt) is older than the cutoff, with no callback
 * pending. A request that has not ended is work in progress and stays.
 */
const PURGE_REQUESTS = statement(
  'retention_purge_requests',
  `with doomed as (
     select r.queue_message_id
       from emdr_requests r
      where r.state in (${ENDED})
        and r.updated_at < $1
        and not exists (select 1 from emdr_callbacks c where c.queue_message_id = r.queue_message_id and c.state = 'pending')
        and not exists (
          select 1 from emdr_callbacks c join emdr_callback_attempts a on a.callback_id = c.id
           where c.queue_message_id = r.queue_message_id and a.at >= $1)
      limit $2
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
);

async function purgeRequests(trx: Queryable, cutoff: Date, limit: number): Promise<number> {
  return (await trx.row<{ deleted: number }>(PURGE_REQUESTS, [cutoff, limit]))!.deleted;
}

export const emdrPurgeSteps: readonly PurgeStep[] = [
  { name: 'emdr request files', purge: (trx, _cutoff, limit) => trx.run(DROP_SETTLED_FILES, [limit]) },
  { name: 'emdr requests', purge: purgeRequests },
];
