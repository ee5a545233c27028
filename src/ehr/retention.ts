import type { PurgeStep } from '../db/retention.js';

const expiredSessions: PurgeStep = {
  name: 'ehr_sessions',
  purge: (trx, cutoff, limit) =>
    trx('ehr_sessions').whereIn('token_hash', trx('ehr_sessions').select('token_hash').where('expires_at', '<', cutoff).limit(limit)).delete(),
};

/**
 * Exchange tokens are emptied, not deleted: the row keeps the token's hash (state 'spent'), so
 * that a replayed save_exchange_token for an old token still hits the unique key (-34004).
 */
const expiredExchangeTokens: PurgeStep = {
  name: 'ehr_exchange_tokens',
  purge: (trx, cutoff, limit) =>
    trx('ehr_exchange_tokens')
      .whereIn('token_hash', trx('ehr_exchange_tokens').select('token_hash').whereNot({ state: 'spent' }).where('expires_at', '<', cutoff).limit(limit))
      .update({ state: 'spent', user_id: null, session_token_hash: null, session_expires_at: null, phone: null, failed_attempts: 0 }),
};

/**
 * Interface A's data whose time is over: sessions and exchange tokens (used, burned or never used)
 * that expired longer than RETENTION ago. Until then a late call with such a token gets -33001
 * (expired); after it, the token is unknown (-33000), and an exchange token still cannot be stored
 * again. The user's match to a patient (ehr_user_links, with the user_sign) stays.
 */
export const ehrPurgeSteps: readonly PurgeStep[] = [expiredSessions, expiredExchangeTokens];
