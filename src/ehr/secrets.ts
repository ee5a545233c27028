import { createCipheriv, createDecipheriv, createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { ConfigError, type Config } from '../config/config.js';

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

const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Encrypts a user_sign with AES-256-GCM; the user id is authenticated data, so a sealed
 * value copied to another user's row does not open. Layout: iv | tag | ciphertext.
 */
export function sealUserSign(key: Buffer, userId: string, userSign: string): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(userId, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(userSign, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), ciphertext]);
}

export function openUserSign(key: Buffer, userId: string, sealed: Buffer): string {
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, IV_BYTES));
  decipher.setAAD(Buffer.from(userId, 'utf8'));
  decipher.setAuthTag(sealed.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  return Buffer.concat([decipher.update(sealed.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
}

export const USER_SIGN_KEY_FILE = 'user-sign.key';

/**
 * USER_SIGN_KEY when set. Otherwise, for local runs on the embedded PostgreSQL only, a key
 * generated once into DATA_DIR/user-sign.key (mode 0600) and reused: the key then lives beside
 * the data it protects, which is acceptable for a developer machine and nowhere else. With
 * DATABASE_URL the key must be configured.
 */
export async function resolveUserSignKey(config: Config): Promise<Buffer> {
  if (config.userSignKey) return config.userSignKey;
  if (config.databaseUrl) throw new ConfigError('USER_SIGN_KEY', 'is required when DATABASE_URL is set');
  const file = path.join(config.dataDir, USER_SIGN_KEY_FILE);
  await fs.mkdir(config.dataDir, { recursive: true });
  // Written aside, then linked into place: a concurrent starter never reads a half-written key.
  const draft = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  await fs.writeFile(draft, randomBytes(32).toString('hex') + '\n', { mode: 0o600 });
  try {
    await fs.link(draft, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    await fs.unlink(draft);
  }
  const key = Buffer.from((await fs.readFile(file, 'utf8')).trim(), 'hex');
  if (key.length !== 32) throw new ConfigError('USER_SIGN_KEY', `${file} does not hold 64 hex characters`);
  return key;
}
