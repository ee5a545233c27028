import { statement, type Sql } from '../db/sql.js';
import type { QueueDepth } from '../metrics/metrics.js';
import { STAGES, type StageName } from './pipeline/lifecycle/lifecycle.js';

/**
 * The queues of interface B's pipeline as the metrics report them, one per stage of lifecycle.ts:
 * the request and callback rows are the queue. acceptance: requests received; submission: requests
 * accepted; deadline: requests submitted, waiting for the registry's answer (claimable: past their
 * deadline); delivery: callbacks pending (due, leased, or waiting for a retry). The age of a row is
 * counted from when it entered the queue's state.
 */
const QUEUES = statement(
  'emdr_queue_depths',
  (Object.keys(STAGES) as StageName[])
    .map((stage) => {
      const claims: string = STAGES[stage].claims;
      return claims === 'callbacks'
        ? `select '${stage}' as queue, count(*)::int as depth, (count(*) filter (where available_at <= now() and (leased_until is null or leased_until <= now())))::int as claimable,
                  coalesce(extract(epoch from now() - min(created_at)), 0)::float8 as oldest_seconds
             from emdr_callbacks where state = 'pending'`
        : `select '${stage}' as queue, count(*)::int as depth, (count(*) filter (where available_at <= now() and (leased_until is null or leased_until <= now())))::int as claimable,
                  coalesce(extract(epoch from now() - min(updated_at)), 0)::float8 as oldest_seconds
             from emdr_requests where state = '${claims}'`;
    })
    .join('\n   union all\n   '),
);

export async function emdrQueueDepths(sql: Sql): Promise<QueueDepth[]> {
  const rows = await sql.rows<{ queue: string; depth: number; claimable: number; oldest_seconds: number }>(QUEUES);
  return rows.map((row) => ({ queue: row.queue, depth: row.depth, claimable: row.claimable, oldestSeconds: row.oldest_seconds }));
}
