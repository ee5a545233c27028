import { statement } from '../../db/sql.js';

/**
 * The SQL of the internal failure limit (failure-limit.ts), all of it: its two tables (migration
 * ehr_007_internal_auth_limits) are read and written only by the statements and fragments here.
 *
 * ehr_internal_auth_limits: one row per key, holding both the failures of its window and the places
 * taken to judge calls (a failure's is given back with its count), per period of `periodMs`
 * (`judging` in the row's period, `judging_before` in the one before it; older ones have lapsed, so
 * a process killed while judging holds room for two periods at most). Only statements that never wait for a WAL flush lock it (the
 * table is unlogged): room is reserved and failures counted there.
 * ehr_internal_auth_releases: the rooms of right credentials given back, counted per key, period
 * and database connection, by the statement that stores what the call was for (the session, the
 * exchange token) without touching the shared row: that statement waits for its WAL flush, and the
 * shared row locked through every flush would make one key's calls commit one at a time. A
 * reservation reads their sums (a release not yet committed counts as a call still being judged,
 * never less). Counters updated in place, not a row inserted and deleted per call.
 */

export const LIMITS_TABLE = 'ehr_internal_auth_limits';
export const RELEASES_TABLE = 'ehr_internal_auth_releases';

/** The period now, for a parameter holding the period's length in ms. */
const periodNow = (periodMs: string) => `floor(extract(epoch from now()) * 1000 / ${periodMs}::bigint)::bigint`;

/** The row's failures, 0 once their window has ended. */
const failuresNow = (row: string) => `(case when ${row}.failures_until > now() then ${row}.failures else 0 end)`;

/**
 * A statement's CTEs that reserve room to judge one call of key `$first` (limit `$first+1`,
 * period length in ms `$first+2`), as a CTE `reserved` with columns granted (whether room was
 * taken for this call), period (text: the reservation's, for giving it back) and failures
 * (counted in the window). Room is granted while the failures plus the calls being judged (the
 * places taken, less the releases read) stay below the limit. `granted_to` records the transaction
 * the last room went to: how the statement tells whether it was its own (RETURNING sees only the
 * new row).
 */
export function reserveRoom(first: number): string {
  const [key, limit, periodMs] = [`$${first}`, `$${first + 1}`, `$${first + 2}`];
  const period = 'excluded.judging_period';
  // Places taken in this period and the one before (reservations less failures).
  const taken = `(case when l.judging_period = ${period} then l.judging else 0 end)`;
  const takenBefore = `(case l.judging_period when ${period} then l.judging_before when ${period} - 1 then l.judging else 0 end)`;
  const judgingNow = `greatest(${taken} - (select at_now from given_back), 0) + greatest(${takenBefore} - (select at_before from given_back), 0)`;
  const room = `(${failuresNow('l')} + ${judgingNow} < ${limit}::int)`;
  return `given_back as (
     select coalesce(sum(r.released) filter (where r.period = p.period_now), 0)::int as at_now,
            coalesce(sum(r.released) filter (where r.period = p.period_now - 1), 0)::int as at_before
       from (select ${periodNow(periodMs)} as period_now) p
       left join ${RELEASES_TABLE} r on r.key = ${key} and r.period >= p.period_now - 1
   ),
   reserved as (
     insert into ${LIMITS_TABLE} as l (key, judging, judging_period, granted_to) values (${key}, 1, ${periodNow(periodMs)}, txid_current())
     on conflict (key) do update set
       judging = ${taken} + ${room}::int,
       judging_before = ${takenBefore},
       judging_period = ${period},
       granted_to = case when ${room} then excluded.granted_to else l.granted_to end
     returning l.granted_to = txid_current() as granted, l.judging_period::text as period, ${failuresNow('l')} as failures
   )`;
}

/**
 * A statement's CTE `given_back_room` giving a right credential's room back: key `$first`, the
 * reservation's period `$first+1`. Counted in a row per database connection (and key and period),
 * which only that connection's transactions write: no waiting on another statement's lock.
 */
export function giveBackRoom(first: number): string {
  return `given_back_room as (
     insert into ${RELEASES_TABLE} as r (key, period, backend, released) values ($${first}, $${first + 1}::bigint, pg_backend_pid(), 1)
     on conflict (key, period, backend) do update set released = r.released + 1
   )`;
}

/** Room alone, for a call whose own statement comes after judging: $1 key, $2 limit, $3 period length in ms. */
export const RESERVE = statement('ehr_internal_auth_reserve', `with ${reserveRoom(1)} select granted, period, failures from reserved`);

/** A right credential's room given back alone (its call ended without a statement carrying giveBackRoom): $1 key, $2 period. */
export const GIVE_BACK = statement('ehr_internal_auth_give_back', `with ${giveBackRoom(1)} select 1`);

/**
 * A wrong credential: its failure counted and its room given back in one update of the key's row,
 * so that failures plus calls being judged never drop below the truth. A failure after the window
 * ended starts a new one. $1 key, $2 window in ms, $3 the reservation's period.
 */
export const FAIL = statement(
  'ehr_internal_auth_fail',
  `insert into ${LIMITS_TABLE} as l (key, failures, failures_until, judging_period)
   values ($1, 1, now() + $2::bigint * interval '1 millisecond', $3::bigint)
   on conflict (key) do update set
     failures = case when l.failures_until > now() then l.failures + 1 else 1 end,
     failures_until = case when l.failures_until > now() then l.failures_until else excluded.failures_until end,
     judging = case when l.judging_period = excluded.judging_period then greatest(l.judging - 1, 0) else l.judging end,
     judging_before = case when l.judging_period = excluded.judging_period + 1 then greatest(l.judging_before - 1, 0) else l.judging_before end`,
);

/** Rows of keys whose failures' window ended and whose reservations lapsed: $1 period length in ms, $2 at most this many. */
export const PURGE_LIMITS = statement(
  'retention_ehr_internal_auth_limits',
  `delete from ${LIMITS_TABLE} where key in (
     select key from ${LIMITS_TABLE}
      where (failures_until is null or failures_until <= now()) and judging_period < ${periodNow('$1')} - 1
      limit $2)`,
);
/** Releases of lapsed periods: $1 period length in ms, $2 at most this many. */
export const PURGE_RELEASES = statement(
  'retention_ehr_internal_auth_releases',
  `delete from ${RELEASES_TABLE} where ctid in (select ctid from ${RELEASES_TABLE} where period < ${periodNow('$1')} - 1 limit $2)`,
);
