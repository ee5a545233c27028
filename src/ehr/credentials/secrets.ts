import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { open, seal } from '../../db/encryption.js';
import type { SealedColumn } from '../../db/sealed-columns.js';

/** How tokens are kept at rest: SHA-256, so a database dump does not yield usable tokens. */
export function tokenHash(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** The internal channel's credential rule: lowercase hex SHA-1 of (password + second value). */
export function internalCredentialToken(password: string, secondValue: string): string {
  return createHash('sha1')
    .update(password + secondValue, 'utf8')
    .digest('hex');
}

/** What the second value of an internal credential is, per method (the rule is public: specs/openrpc.json). */
export type CredentialSecondValue = 'params.exchangeToken' | 'the user_sign that authenticate answered for authInfo.user';

/**
 * The expected form of an internal credential, told with every rejected one (data.hint): it depends
 * only on the method and on the shape of what was presented, never on whether the account or the
 * token was wrong, so it discloses nothing the spec does not.
 */
export function internalCredentialHint(presented: unknown, secondValue: CredentialSecondValue): string {
  const rule = `cred.token is the lowercase hex SHA-1 (40 characters) of the internal account's password followed by ${secondValue}`;
  if (typeof presented !== 'string') return `no cred {user, token} was sent; ${rule}`;
  if (!/^[0-9a-f]{40}$/.test(presented)) return `cred.token is not 40 lowercase hex characters; ${rule}`;
  return rule;
}

/** Constant-time equality of two strings (hashed first so lengths do not leak either). */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(tokenHash(a), tokenHash(b));
}

/** A new user_sign: 256 random bits, base64url (43 characters). */
export function newUserSign(): string {
  return randomBytes(32).toString('base64url');
}

/** A user_sign sealed with the data key; the user id is authenticated data, so it does not open in another user's row. */
export function sealUserSign(key: Buffer, userId: string, userSign: string): Buffer {
  return seal(key, userId, userSign);
}

export function openUserSign(key: Buffer, userId: string, sealed: Buffer): string {
  return open(key, userId, sealed);
}

/** Interface A's sealed column, for `ehr-gateway data-key check|rotate`. */
export const ehrSealedColumns: readonly SealedColumn[] = [
  { table: 'ehr_user_links', column: 'user_sign_sealed', idColumn: 'user_id', contextColumns: [], context: (row) => row.user_id as string },
];
