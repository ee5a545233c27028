import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Knex } from 'knex';
import { open, seal } from '../db/encryption.js';
import { statement, type Sql } from '../db/sql.js';

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

export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

export class DuplicateClinicAccountError extends Error {}

/** The secrets of a clinic account that the gateway must use again, so they are sealed with the data key rather than hashed. */
type SealedSecret = 'callback_token' | 'signing_secret';

/** Authenticated data of a sealed secret: its column and account, so it opens nowhere else. */
function secretContext(column: SealedSecret, businessId: string, user: string): string {
  return JSON.stringify(['emdr_clients', column, businessId, user]);
}

export function sealClinicSecret(key: Buffer, column: SealedSecret, businessId: string, user: string, secret: string): Buffer {
  return seal(key, secretContext(column, businessId, user), secret);
}

export async function createClinicAccount(knex: Knex, dataKey: Buffer, input: NewClinicAccount): Promise<CreatedClinicAccount> {
  const token = input.token ?? randomToken('emdr_');
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

// Compared against when the account does not exist, so that a miss costs what a hit costs.
const ABSENT_HASH = hashToken(randomBytes(32).toString('hex'));

const ACCOUNT = statement('emdr_clinic_account', 'select id, business_id, user_name, token_hash, organizations, callback_urls from emdr_clients where business_id = $1 and user_name = $2');

/** The account of the three headers, or undefined; the token hash is compared in constant time. */
export async function authenticateClinic(sql: Sql, businessId: string, user: string, token: string): Promise<ClinicAccount | undefined> {
  const row = await sql.row<{ id: string; business_id: string; user_name: string; token_hash: Buffer; organizations: string[] | null; callback_urls: string[] }>(ACCOUNT, [businessId, user]);
  const presented = hashToken(token);
  const matches = timingSafeEqual(presented, row ? row.token_hash : ABSENT_HASH);
  if (!row || !matches) return undefined;
  return {
    id: Number(row.id),
    businessId: row.business_id,
    user: row.user_name,
    organizations: row.organizations,
    callbackUrls: row.callback_urls,
  };
}

/** A clinic's callback token or signing secret, opened with the data key. */
export function openClinicSecret(dataKey: Buffer, column: SealedSecret, account: { businessId: string; user: string }, sealed: Buffer): string {
  return open(dataKey, secretContext(column, account.businessId, account.user), sealed);
}
