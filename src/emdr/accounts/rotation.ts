import type { Knex } from 'knex';
import type { PurgeStep } from '../../db/retention.js';
import { hashToken, newClinicToken, newSigningSecret, openClinicSecret, sealClinicSecret } from './clients.js';
import { endSigningOverlaps, forgetPreviousTokens, lockSigningSecret, replaceSigningSecret, replaceToken } from './store.js';

/**
 * Rotation of a clinic's credentials without downtime. The token: the new one is valid at once, the
 * old one too for a grace period, so the clinic's МИС can switch whenever it likes within it. The
 * signing secret: during the overlap every callback carries two signatures (Standard Webhooks allows
 * several in webhook-signature), one with the new secret and one with the old, so the clinic's
 * receiver verifies with either and can switch at any moment; after it, the new secret alone.
 * The worker role ends overlaps and forgets old tokens in its retention rounds (accountPurgeSteps).
 */

export interface Account {
  businessId: string;
  user: string;
}

export interface RotatedToken extends Account {
  token: string;
  /** Until when the previous token is accepted too; null: from now on it is refused. */
  previousTokenValidUntil: string | null;
}

export interface RotatedSigningSecret extends Account {
  signingSecret: string;
  /** Until when callbacks carry a signature with the previous secret too; null: no overlap. */
  overlapEndsAt: string | null;
}

/** undefined when there is no such account. */
export async function rotateClinicToken(knex: Knex, account: Account, graceMs: number): Promise<RotatedToken | undefined> {
  const token = newClinicToken();
  const startedAt = Date.now();
  if (!(await replaceToken(knex, account.businessId, account.user, hashToken(token), graceMs))) return undefined;
  return { ...account, token, previousTokenValidUntil: graceMs > 0 ? new Date(startedAt + graceMs).toISOString() : null };
}

/**
 * A new signing secret, signing beside the newest of the secrets in force for `overlapMs` (0: alone
 * at once). A rotation during an overlap drops the oldest secret: two sign at most. undefined when
 * there is no such account.
 */
export async function rotateSigningSecret(knex: Knex, dataKey: Buffer, account: Account, overlapMs: number): Promise<RotatedSigningSecret | undefined> {
  const signingSecret = newSigningSecret();
  const startedAt = Date.now();
  const seal = (secrets: string) => sealClinicSecret(dataKey, 'signing_secret', account.businessId, account.user, secrets);
  const done = await knex.transaction(async (trx) => {
    const row = await lockSigningSecret(trx, account.businessId, account.user);
    if (!row) return false;
    if (overlapMs > 0) {
      const [newest] = openClinicSecret(dataKey, 'signing_secret', account, row.signing_secret_sealed).split(' ');
      await replaceSigningSecret(trx, account.businessId, account.user, seal(`${signingSecret} ${newest}`), { sealed: seal(signingSecret), overlapMs });
    } else {
      await replaceSigningSecret(trx, account.businessId, account.user, seal(signingSecret), undefined);
    }
    return true;
  });
  if (!done) return undefined;
  return { ...account, signingSecret, overlapEndsAt: overlapMs > 0 ? new Date(startedAt + overlapMs).toISOString() : null };
}

/** The worker's retention rounds end what is over (at most an hour late: see retentionIntervalMs). */
export const accountPurgeSteps: readonly PurgeStep[] = [
  { name: 'emdr signing overlaps ended', purge: (trx, _cutoff, limit) => endSigningOverlaps(trx, limit) },
  { name: 'emdr previous tokens forgotten', purge: (trx, _cutoff, limit) => forgetPreviousTokens(trx, limit) },
];
