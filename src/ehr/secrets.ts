import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { open, seal } from '../db/encryption.js';
import type { SealedColumn } from '../db/sealed-columns.js';

/** How tokens are kept at rest: SHA-256, so a database dump does not yield usable tokens. */
export function tokenHash(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** The internal channel's credential rule: lowercase hex SHA-1 of (password + second value). */
export function internalCredentialToken(password: string, secondValue: string): string {
  return createHash('sha1').update(password + secondValue, 'utf8').digest('hex');
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
