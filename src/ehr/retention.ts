import type { PurgeStep } from '../db/retention.js';
import { statement } from '../db/sql.js';

/** Rows of `table` (keyed by token_hash) that expired before the cutoff ($1), at most $2 of them. */
function expiredRows(table: 'ehr_sessions' | 'ehr_exchange_tokens'): PurgeStep {
  const purge = statement(`retention_${table}`, `delete from ${table} where token_hash in (select token_hash from ${table} where expires_at < $1 limit $2)`);
  return { name: table, purge: (trx, cutoff, limit) => trx.run(purge, [cutoff, limit]) };
}

/**
 * Interface A's data whose time is over: sessions and exchange tokens (used, burned or never used)
 * that expired longer than RETENTION ago. Until then a late call with such a token gets -33001
 * (expired) and the token cannot be stored again; after it, the token is unknown. The user's match
 * to a patient (ehr_user_links, with the user_sign) stays.
 */
export const ehrPurgeSteps: readonly PurgeStep[] = [expiredRows('ehr_sessions'), expiredRows('ehr_exchange_tokens')];
