import type { Knex } from 'knex';
import { statement, type Queryable } from '../../db/sql.js';

/** The SQL of the operator's commands on clinic accounts (`clients list|show|disable|enable|rotate-*`). */

/** A clinic account as the operator sees it: no secret, no hash. */
export interface AccountSummary {
  businessId: string;
  user: string;
  state: 'active' | 'disabled';
  /** null: every organization (`--all-organizations`). */
  organizations: string[] | null;
  callbackUrls: string[];
  createdAt: string;
  disabledAt: string | null;
  /** Until when the token before the last `clients rotate-token` is still accepted; null: none is. */
  previousTokenValidUntil: string | null;
  /** Until when callbacks carry a signature with the signing secret before the last rotation too; null: one secret. */
  signingOverlapEndsAt: string | null;
}

export interface AccountActivity {
  /** Requests kept (RETENTION purges ended ones), by state. */
  requests: Record<string, number>;
  /** Callbacks waiting to be sent or retried, and failed ones (a replay sends them again). */
  callbacks: { pending: number; failed: number };
}

interface SummaryRow {
  business_id: string;
  user_name: string;
  organizations: string[] | null;
  callback_urls: string[];
  created_at: Date;
  disabled_at: Date | null;
  previous_token_expires_at: Date | null;
  signing_overlap_ends_at: Date | null;
}

const SUMMARY_COLUMNS = [
  'business_id',
  'user_name',
  'organizations',
  'callback_urls',
  'created_at',
  'disabled_at',
  'previous_token_expires_at',
  'signing_overlap_ends_at',
];

function summaryOf(row: SummaryRow, now: Date): AccountSummary {
  const future = (at: Date | null) => (at && at > now ? at.toISOString() : null);
  return {
    businessId: row.business_id,
    user: row.user_name,
    state: row.disabled_at ? 'disabled' : 'active',
    organizations: row.organizations,
    callbackUrls: row.callback_urls,
    createdAt: row.created_at.toISOString(),
    disabledAt: row.disabled_at?.toISOString() ?? null,
    previousTokenValidUntil: future(row.previous_token_expires_at),
    signingOverlapEndsAt: row.signing_overlap_ends_at?.toISOString() ?? null,
  };
}

async function databaseNow(knex: Knex): Promise<Date> {
  return ((await knex.raw('select now() as now')) as { rows: Array<{ now: Date }> }).rows[0]!.now;
}

export async function listAccounts(knex: Knex, filter: { state?: 'active' | 'disabled'; businessId?: string }): Promise<AccountSummary[]> {
  const query = knex('emdr_clients').select(SUMMARY_COLUMNS).orderBy(['business_id', 'user_name']);
  if (filter.businessId !== undefined) query.where('business_id', filter.businessId);
  if (filter.state === 'active') query.whereNull('disabled_at');
  if (filter.state === 'disabled') query.whereNotNull('disabled_at');
  const now = await databaseNow(knex);
  return ((await query) as SummaryRow[]).map((row) => summaryOf(row, now));
}

export async function showAccount(knex: Knex, businessId: string, user: string): Promise<(AccountSummary & AccountActivity) | undefined> {
  const row = (await knex('emdr_clients')
    .select('id', ...SUMMARY_COLUMNS)
    .where({ business_id: businessId, user_name: user })
    .first()) as (SummaryRow & { id: string }) | undefined;
  if (!row) return undefined;
  const requests = (await knex('emdr_requests').select('state').count({ count: '*' }).where('client_id', row.id).groupBy('state')) as Array<{
    state: string;
    count: string;
  }>;
  const callbacks = (await knex('emdr_callbacks as c')
    .join('emdr_requests as r', 'r.queue_message_id', 'c.queue_message_id')
    .where('r.client_id', row.id)
    .whereIn('c.state', ['pending', 'failed'])
    .select('c.state')
    .count({ count: '*' })
    .groupBy('c.state')) as Array<{ state: 'pending' | 'failed'; count: string }>;
  const byState = (rows: Array<{ state: string; count: string }>): Record<string, number> =>
    Object.fromEntries(rows.map((entry) => [entry.state, Number(entry.count)]));
  const pendingOrFailed = byState(callbacks);
  return {
    ...summaryOf(row, await databaseNow(knex)),
    requests: byState(requests),
    callbacks: { pending: pendingOrFailed.pending ?? 0, failed: pendingOrFailed.failed ?? 0 },
  };
}

/** `clients disable|enable`; false when there is no such account. */
export async function setAccountDisabled(knex: Knex, businessId: string, user: string, disabled: boolean): Promise<boolean> {
  const updated = await knex('emdr_clients')
    .where({ business_id: businessId, user_name: user })
    .update({ disabled_at: disabled ? knex.raw('coalesce(disabled_at, now())') : null });
  return updated > 0;
}

/** The new token's hash in place; the old one accepted for `graceMs` more (none when 0). False when there is no such account. */
export async function replaceToken(knex: Knex, businessId: string, user: string, tokenHash: Buffer, graceMs: number): Promise<boolean> {
  const updated = await knex('emdr_clients')
    .where({ business_id: businessId, user_name: user })
    .update({
      previous_token_hash: graceMs > 0 ? knex.ref('token_hash') : null,
      previous_token_expires_at: graceMs > 0 ? knex.raw(`now() + ? * interval '1 millisecond'`, [graceMs]) : null,
      token_hash: tokenHash,
    });
  return updated > 0;
}

export interface SigningSecretRow {
  signing_secret_sealed: Buffer;
}

/** The sealed signing secrets, locked for the rest of the transaction. */
export async function lockSigningSecret(trx: Knex.Transaction, businessId: string, user: string): Promise<SigningSecretRow | undefined> {
  return (await trx('emdr_clients').select('signing_secret_sealed').where({ business_id: businessId, user_name: user }).forUpdate().first()) as
    | SigningSecretRow
    | undefined;
}

/** `sealed` signs from now on; `nextSealed` alone (the new secret) takes its place after `overlapMs` (at once: no overlap). */
export async function replaceSigningSecret(
  trx: Knex.Transaction,
  businessId: string,
  user: string,
  sealed: Buffer,
  next: { sealed: Buffer; overlapMs: number } | undefined,
): Promise<void> {
  await trx('emdr_clients')
    .where({ business_id: businessId, user_name: user })
    .update({
      signing_secret_sealed: sealed,
      signing_secret_next_sealed: next?.sealed ?? null,
      signing_overlap_ends_at: next ? trx.raw(`now() + ? * interval '1 millisecond'`, [next.overlapMs]) : null,
    });
}

/** Ends the overlaps whose time is over: the new secret alone signs. */
const END_SIGNING_OVERLAPS = statement(
  'emdr_end_signing_overlaps',
  `update emdr_clients set signing_secret_sealed = signing_secret_next_sealed, signing_secret_next_sealed = null, signing_overlap_ends_at = null
    where id in (select id from emdr_clients where signing_overlap_ends_at <= now() limit $1)`,
);

/** Forgets the previous tokens whose grace is over (authentication already ignores them). */
const FORGET_PREVIOUS_TOKENS = statement(
  'emdr_forget_previous_tokens',
  `update emdr_clients set previous_token_hash = null, previous_token_expires_at = null
    where id in (select id from emdr_clients where previous_token_expires_at <= now() limit $1)`,
);

export function endSigningOverlaps(trx: Queryable, limit: number): Promise<number> {
  return trx.run(END_SIGNING_OVERLAPS, [limit]);
}

export function forgetPreviousTokens(trx: Queryable, limit: number): Promise<number> {
  return trx.run(FORGET_PREVIOUS_TOKENS, [limit]);
}

/** `clients rotate-signing-secret --finish`: the overlap ends now; false when none was running. */
export async function endSigningOverlapNow(knex: Knex, businessId: string, user: string): Promise<boolean> {
  const updated = await knex('emdr_clients')
    .where({ business_id: businessId, user_name: user })
    .whereNotNull('signing_secret_next_sealed')
    .update({ signing_secret_sealed: knex.ref('signing_secret_next_sealed'), signing_secret_next_sealed: null, signing_overlap_ends_at: null });
  return updated > 0;
}
