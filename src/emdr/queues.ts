import { statement, type Sql } from '../db/sql.js';
import type { QueueDepth } from '../metrics/metrics.js';

/**
 * The queues of interface B's pipeline as the metrics report them: the request and callback rows
 * are the queue (pipeline/requests.ts). acceptance: requests received; registry: requests accepted;
 * delivery: callbacks pending (due, leased, or waiting for a retry). The age of a row is counted
 * from when it entered the queue's state.
 */
const QUEUES = statement(
  'emdr_queue_depths',
  `select 'acceptance' as queue, count(*)::int as depth, (count(*) filter (where available_at <= now()))::int as claimable,
          coalesce(extract(epoch from now() - min(created_at)), 0)::float8 as oldest_seconds
     from emdr_requests where state = 'received'
   union all
   select 'registry', count(*)::int, (count(*) filter (where available_at <= now()))::int, coalesce(extract(epoch from now() - min(updated_at)), 0)::float8
     from emdr_requests where state = 'accepted'
   union all
   select 'delivery', count(*)::int, (count(*) filter (where available_at <= now()))::int, coalesce(extract(epoch from now() - min(created_at)), 0)::float8
     from emdr_callbacks where state = 'pending'`,
);

export async function emdrQueueDepths(sql: Sql): Promise<QueueDepth[]> {
  const rows = await sql.rows<{ queue: string; depth: number; claimable: number; oldest_seconds: number }>(QUEUES);
  return rows.map((row) => ({ queue: row.queue, depth: row.depth, claimable: row.claimable, oldestSeconds: row.oldest_seconds }));
}
