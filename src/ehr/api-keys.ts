import { createHash, randomBytes } from 'node:crypto';
import { statement, type Sql } from '../db/sql.js';

/**
 * Back-office api keys of interface A (the envelope's `apiKey`): each scoped to the patients of
 * its organizations (OIDs). A key is shown once, when it is made; only its SHA-256 is stored, so a
 * lookup by hash finds it and a dump of the table yields no usable key. Revoked keys stay listed.
 */

export interface ApiKeyAccount {
  id: string;
  organizations: string[];
}

export interface ApiKeyListing extends ApiKeyAccount {
  name: string;
  created: string;
  revoked: string | null;
}

const hashKey = (key: string) => createHash('sha256').update(key, 'utf8').digest();

const INSERT = statement(
  'ehr_api_key_insert',
  `insert into ehr_api_keys (name, key_hash, organizations) values ($1, $2, $3) on conflict (key_hash) do nothing
   returning id::text, name, organizations, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created`,
);
const FIND = statement('ehr_api_key_find', 'select id::text, organizations from ehr_api_keys where key_hash = $1 and revoked_at is null');
const LIST = statement(
  'ehr_api_key_list',
  `select id::text, name, organizations, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created,
          to_char(revoked_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as revoked
     from ehr_api_keys order by id`,
);
const REVOKE = statement('ehr_api_key_revoke', 'update ehr_api_keys set revoked_at = coalesce(revoked_at, now()) where id = $1::bigint returning id::text');

/** Makes a key for the organizations; `key` is for the demo's fixed one only (seed-demo), else a fresh random one. */
export async function createApiKey(sql: Sql, options: { name: string; organizations: readonly string[]; key?: string }): Promise<(ApiKeyAccount & { name: string; created: string; apiKey: string }) | undefined> {
  const apiKey = options.key ?? `ehrk_${randomBytes(32).toString('base64url')}`;
  const row = await sql.row<ApiKeyAccount & { name: string; created: string }>(INSERT, [options.name, hashKey(apiKey), options.organizations]);
  return row && { ...row, apiKey };
}

/** The live key's account, or undefined for an unknown or revoked key. */
export function findApiKey(sql: Sql, key: string): Promise<ApiKeyAccount | undefined> {
  return sql.row<ApiKeyAccount>(FIND, [hashKey(key)]);
}

export function listApiKeys(sql: Sql): Promise<ApiKeyListing[]> {
  return sql.rows<ApiKeyListing>(LIST);
}

/** Revokes the key (idempotent); false when there is no such key. */
export async function revokeApiKey(sql: Sql, id: string): Promise<boolean> {
  return (await sql.row(REVOKE, [id])) !== undefined;
}
