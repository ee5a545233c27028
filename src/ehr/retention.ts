import type { PurgeStep } from '../db/retention.js';
import { statement } from '../db/sql.js';
import { JUDGING_PERIOD_MS } from './credentials/failure-limit.js';
import { PURGE_LIMITS, PURGE_RELEASES } from './credentials/failure-limit-sql.js';

const PURGE_SESSIONS = statement(
  'retention_ehr_sessions',
  'delete from ehr_sessions where token_hash in (select token_hash from ehr_sessions where expires_at < $1 limit $2)',
);
const expiredSessions: PurgeStep = { name: 'ehr_sessions', purge: (trx, cutoff, limit) => trx.run(PURGE_SESSIONS, [cutoff, limit]) };

/**
 * Exchange tokens are emptied, not deleted: the row keeps the token's hash (state 'spent'), so
 * that a replayed save_exchange_token for an old token still hits the unique key (-34004).
 */
const SPEND_EXCHANGE_TOKENS = statement(
  'retention_ehr_exchange_tokens',
  `update ehr_exchange_tokens
      set state = 'spent', user_id = null, session_token_hash = null, session_expires_at = null, phone = null, failed_attempts = 0
    where token_hash in (select token_hash from ehr_exchange_tokens where state <> 'spent' and expires_at < $1 limit $2)`,
);
const expiredExchangeTokens: PurgeStep = {
  name: 'ehr_exchange_tokens',
  purge: (trx, cutoff, limit) => trx.run(SPEND_EXCHANGE_TOKENS, [cutoff, limit]),
};

/**
 * The internal failure limit's rows that count nothing any more (whatever RETENTION says): keys
 * whose failures' window ended and whose reservations lapsed, and the given-back room of lapsed
 * reservations, left by keys that made no reservation since (the next one would have folded it).
 */
const lapsedReleases: PurgeStep = {
  name: 'ehr_internal_auth_releases',
  purge: (trx, _cutoff, limit) => trx.run(PURGE_RELEASES, [JUDGING_PERIOD_MS, limit]),
};
const idleFailureLimits: PurgeStep = {
  name: 'ehr_internal_auth_limits',
  purge: (trx, _cutoff, limit) => trx.run(PURGE_LIMITS, [JUDGING_PERIOD_MS, limit]),
};

/**
 * Interface A's data whose time is over: sessions and exchange tokens (used, burned or never used)
 * that expired longer than RETENTION ago. Until then a late call with such a token gets -33001
 * (expired); after it, the token is unknown (-33000), and an exchange token still cannot be stored
 * again. The user's match to a patient (ehr_user_links, with the user_sign) stays.
 */
export const ehrPurgeSteps: readonly PurgeStep[] = [expiredSessions, expiredExchangeTokens, lapsedReleases, idleFailureLimits];
