import { createHash, randomBytes } from 'node:crypto';
import { statement, type Queryable, type Sql } from '../../db/sql.js';

/**
 * Back-office api keys of interface A (the envelope's `apiKey`): each scoped to the patients of
 * its organizations (OIDs). A key is shown once, when it is made; only its SHA-256 is stored, so a
 * lookup by hash finds it and a dump of the table yields no usable key. Revoked keys stay listed.
 * A rotated key gets a successor with the same name and organizations and stays valid beside it
 * until its revoked_at, the end of the grace: the back office switches without a refused call.
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
/** A key is live until its revoked_at (in the future while a rotation's grace runs). */
const FIND = statement(
  'ehr_api_key_find',
  'select id::text, organizations from ehr_api_keys where key_hash = $1 and (revoked_at is null or revoked_at > now())',
);
const LIST = statement(
  'ehr_api_key_list',
  `select id::text, name, organizations, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created,
          to_char(revoked_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as revoked
     from ehr_api_keys order by id`,
);
/** The live key to rotate, locked so that two rotations of one key make one successor. */
const LOCK_LIVE = statement(
  'ehr_api_key_lock_live',
  'select name, organizations from ehr_api_keys where id = $1::bigint and (revoked_at is null or revoked_at > now()) for update',
);
const END_AFTER_GRACE = statement(
  'ehr_api_key_end_after_grace',
  `update ehr_api_keys set revoked_at = now() + $2 * interval '1 millisecond' where id = $1::bigint
   returning to_char(revoked_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as revoked`,
);
const REVOKE = statement('ehr_api_key_revoke', 'update ehr_api_keys set revoked_at = coalesce(revoked_at, now()) where id = $1::bigint returning id::text');

/** Makes a key for the organizations; `key` is for the demo's fixed one only (seed-demo), else a fresh random one. */
export async function createApiKey(
  sql: Queryable,
  options: { name: string; organizations: readonly string[]; key?: string },
): Promise<(ApiKeyAccount & { name: string; created: string; apiKey: string }) | undefined> {
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

export interface RotatedApiKey extends ApiKeyAccount {
  name: string;
  created: string;
  /** The new key, printed once. */
  apiKey: string;
  previousId: string;
  /** When the previous key stops being accepted (now, for a grace of 0). */
  previousKeyValidUntil: string;
}

/** Gives a live key a successor and ends the old one after `graceMs`; undefined when there is no live key with that id. */
export function rotateApiKey(sql: Sql, id: string, graceMs: number): Promise<RotatedApiKey | undefined> {
  return sql.transaction(async (trx) => {
    const live = await trx.row<{ name: string; organizations: string[] }>(LOCK_LIVE, [id]);
    if (!live) return undefined;
    const successor = await createApiKey(trx, { name: live.name, organizations: live.organizations });
    if (!successor) throw new Error('a fresh api key collided with a stored one');
    const ended = await trx.row<{ revoked: string }>(END_AFTER_GRACE, [id, graceMs]);
    return { ...successor, previousId: id, previousKeyValidUntil: ended!.revoked };
  });
}
