import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Knex } from 'knex';
import { open, seal } from '../../db/encryption.js';
import type { SealedColumn } from '../../db/sealed-columns.js';
import { statement, type Sql } from '../../db/sql.js';

/** A clinic account as the request handlers and the callback sender see it. */
export interface ClinicAccount {
  id: number;
  businessId: string;
  user: string;
  /** null: the account may act for any organization. */
  organizations: string[] | null;
  callbackUrls: string[];
}

export interface NewClinicAccount {
  businessId: string;
  user: string;
  callbackUrls: string[];
  /** The organizations the clinic acts for; null: every organization (`--all-organizations`). */
  organizations: string[] | null;
  /** Fixed credentials for the demo account; random otherwise. */
  token?: string;
  callbackToken?: string;
  signingSecret?: string;
}

/** What `clients add` prints: every secret appears here once and nowhere else. */
export interface CreatedClinicAccount {
  businessId: string;
  user: string;
  token: string;
  organizations: string[] | null;
  callbackUrls: string[];
  /** The headers the gateway sends with every callback, for the clinic to check. */
  callbackCredentials: { businessId: string; user: string; token: string };
  /** Standard Webhooks secret for webhook-signature. */
  signingSecret: string;
}

/** The user name the gateway presents on callbacks. */
export const CALLBACK_USER = 'ehr-gateway';

export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

function randomToken(prefix: string): string {
  return `${prefix}${randomBytes(32).toString('base64url')}`;
}

/** A clinic's access token (what `clients add` and `clients rotate-token` print once). */
export function newClinicToken(): string {
  return randomToken('emdr_');
}

export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

export class DuplicateClinicAccountError extends Error {}

/**
 * The secrets of a clinic account that the gateway must use again, so they are sealed with the data
 * key rather than hashed. A sealed signing secret holds the secrets in force, newest first, separated
 * by a space: two while a rotation's overlap lasts (accounts/rotation.ts), one otherwise.
 */
export type SealedSecret = 'callback_token' | 'signing_secret';

/** Authenticated data of a sealed secret: its column and account, so it opens nowhere else. */
function secretContext(column: SealedSecret, businessId: string, user: string): string {
  return JSON.stringify(['emdr_clients', column, businessId, user]);
}

export function sealClinicSecret(key: Buffer, column: SealedSecret, businessId: string, user: string, secret: string): Buffer {
  return seal(key, secretContext(column, businessId, user), secret);
}

export async function createClinicAccount(knex: Knex, dataKey: Buffer, input: NewClinicAccount): Promise<CreatedClinicAccount> {
  const token = input.token ?? newClinicToken();
  const callbackToken = input.callbackToken ?? randomToken('cbt_');
  const signingSecret = input.signingSecret ?? newSigningSecret();
  const { organizations } = input;
  const inserted = await knex('emdr_clients')
    .insert({
      business_id: input.businessId,
      user_name: input.user,
      token_hash: hashToken(token),
      organizations,
      callback_urls: input.callbackUrls,
      callback_user: CALLBACK_USER,
      callback_token_sealed: sealClinicSecret(dataKey, 'callback_token', input.businessId, input.user, callbackToken),
      signing_secret_sealed: sealClinicSecret(dataKey, 'signing_secret', input.businessId, input.user, signingSecret),
    })
    .onConflict(['business_id', 'user_name'])
    .ignore()
    .returning('id');
  if (inserted.length === 0) throw new DuplicateClinicAccountError(`clinic account ${input.businessId}/${input.user} exists already`);
  return {
    businessId: input.businessId,
    user: input.user,
    token,
    organizations,
    callbackUrls: input.callbackUrls,
    callbackCredentials: { businessId: input.businessId, user: CALLBACK_USER, token: callbackToken },
    signingSecret,
  };
}

// Compared against when the account, or its previous token, does not exist, so that a miss costs what a hit costs.
const ABSENT_HASH = hashToken(randomBytes(32).toString('hex'));

/** The account with its token and, while a rotation's grace lasts (accounts/rotation.ts), its previous token. */
const ACCOUNT = statement(
  'emdr_clinic_account',
  `select id, business_id, user_name, token_hash, organizations, callback_urls, disabled_at is not null as disabled,
          case when previous_token_expires_at > now() then previous_token_hash end as previous_token_hash
     from emdr_clients where business_id = $1 and user_name = $2`,
);

interface AccountRow {
  id: string;
  business_id: string;
  user_name: string;
  token_hash: Buffer;
  previous_token_hash: Buffer | null;
  organizations: string[] | null;
  callback_urls: string[];
  disabled: boolean;
}

/**
 * The account of the three headers, or undefined: unknown, disabled (`clients disable`), or neither
 * its token nor its previous one within the grace of a rotation. Both hashes are compared, in
 * constant time, whatever the outcome.
 */
export async function authenticateClinic(sql: Sql, businessId: string, user: string, token: string): Promise<ClinicAccount | undefined> {
  const row = await sql.row<AccountRow>(ACCOUNT, [businessId, user]);
  const presented = hashToken(token);
  const current = timingSafeEqual(presented, row ? row.token_hash : ABSENT_HASH);
  const previous = timingSafeEqual(presented, row?.previous_token_hash ?? ABSENT_HASH);
  if (!row || row.disabled || !(current || previous)) return undefined;
  return {
    id: Number(row.id),
    businessId: row.business_id,
    user: row.user_name,
    organizations: row.organizations,
    callbackUrls: row.callback_urls,
  };
}

/** A clinic's callback token or signing secret (the secrets in force: see SealedSecret), opened with the data key. */
export function openClinicSecret(dataKey: Buffer, column: SealedSecret, account: { businessId: string; user: string }, sealed: Buffer): string {
  return open(dataKey, secretContext(column, account.businessId, account.user), sealed);
}

function sealedClinicColumn(column: string, secret: SealedSecret): SealedColumn {
  return {
    table: 'emdr_clients',
    column,
    idColumn: 'id',
    contextColumns: ['business_id', 'user_name'],
    context: (row) => secretContext(secret, row.business_id as string, row.user_name as string),
  };
}

/** Interface B's sealed columns, for `ehr-gateway data-key check|rotate`; the signing secret's next value (accounts/) is sealed as a signing secret. */
export const emdrSealedColumns: readonly SealedColumn[] = [
  sealedClinicColumn('callback_token_sealed', 'callback_token'),
  sealedClinicColumn('signing_secret_sealed', 'signing_secret'),
  sealedClinicColumn('signing_secret_next_sealed', 'signing_secret'),
];
