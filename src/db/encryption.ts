import { createCipheriv, createDecipheriv, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { ConfigError, type Config } from '../config/config.js';

/**
 * Encryption at rest of the secrets the service must use again (user_sign, a clinic's callback token
 * and signing secret): AES-256-GCM under one data key (DATA_KEY). Each sealed value is bound to its
 * place by authenticated data (`context`), so a sealed value copied to another row does not open.
 */

export const DATA_KEY_FILE = 'data.key';
/** The key file's name before the data key covered more than user_sign; still read. */
export const OLD_DATA_KEY_FILE = 'user-sign.key';

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** The key as a KeyObject, made once per key: a raw key is imported again by every cipher made from it. */
const keyObjects = new WeakMap<Buffer, KeyObject>();
function keyObjectOf(key: Buffer): KeyObject {
  let object = keyObjects.get(key);
  if (!object) {
    object = createSecretKey(key);
    keyObjects.set(key, object);
  }
  return object;
}

/**
 * The key a data key replaces (DATA_KEY_PREVIOUS, during a rotation): open() tries it after the key
 * itself, seal() never uses it. Kept beside the key rather than in every caller, so the code that
 * opens secrets (the callback sender, interface A) reads both keys without knowing of a rotation.
 */
const previousKeys = new WeakMap<Buffer, Buffer>();

/** `key`, remembering `previous` as the key open() falls back to. */
export function withPreviousKey(key: Buffer, previous: Buffer | undefined): Buffer {
  if (previous) previousKeys.set(key, previous);
  return key;
}

export function previousKeyOf(key: Buffer): Buffer | undefined {
  return previousKeys.get(key);
}

/** Layout: iv | tag | ciphertext. */
export function seal(key: Buffer, context: string, plaintext: string): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', keyObjectOf(key), iv);
  cipher.setAAD(Buffer.from(context, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), ciphertext]);
}

/** The plaintext of `seal(key, context, …)` or of `seal(previous key, …)`; throws when neither key opens it or the context differs. */
export function open(key: Buffer, context: string, sealed: Buffer): string {
  try {
    return openWith(key, context, sealed);
  } catch (error) {
    const previous = previousKeys.get(key);
    if (!previous) throw error;
    return openWith(previous, context, sealed);
  }
}

/** The plaintext of `seal(key, context, …)`, with this key only. */
export function openWith(key: Buffer, context: string, sealed: Buffer): string {
  const decipher = createDecipheriv('aes-256-gcm', keyObjectOf(key), sealed.subarray(0, IV_BYTES));
  decipher.setAAD(Buffer.from(context, 'utf8'));
  decipher.setAuthTag(sealed.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  return Buffer.concat([decipher.update(sealed.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
}

async function readKeyFile(file: string): Promise<Buffer> {
  const key = Buffer.from((await fs.readFile(file, 'utf8')).trim(), 'hex');
  if (key.length !== 32) throw new ConfigError('DATA_KEY', `${file} does not hold 64 hex characters`);
  return key;
}

/**
 * DATA_KEY (or its old name USER_SIGN_KEY) when set. Otherwise, for local runs on the embedded
 * PostgreSQL only, a key generated once into DATA_DIR/data.key (mode 0600) and reused, or the
 * DATA_DIR/user-sign.key an older version generated: the key then lives beside the data it
 * protects, which is acceptable for a developer machine and nowhere else. With DATABASE_URL the
 * key must be configured. DATA_KEY_PREVIOUS, when set, is remembered as the key it replaces.
 */
export async function resolveDataKey(config: Config): Promise<Buffer> {
  return withPreviousKey(await currentDataKey(config), config.dataKeyPrevious);
}

async function currentDataKey(config: Config): Promise<Buffer> {
  if (config.dataKey) return config.dataKey;
  if (config.databaseUrl) throw new ConfigError('DATA_KEY', 'is required when DATABASE_URL is set');
  const file = path.join(config.dataDir, DATA_KEY_FILE);
  const oldFile = path.join(config.dataDir, OLD_DATA_KEY_FILE);
  if (!existsSync(file) && existsSync(oldFile)) return readKeyFile(oldFile);
  await createFileOnce(file, () => `${randomBytes(32).toString('hex')}\n`);
  return readKeyFile(file);
}

/**
 * Writes `file` (mode 0600, its folder created) with `content()` unless it exists. Written aside,
 * then linked into place: a concurrent starter never reads a half-written file, and the first one wins.
 */
export async function createFileOnce(file: string, content: () => string): Promise<void> {
  if (existsSync(file)) return;
  await fs.mkdir(path.dirname(file), { recursive: true });
  const draft = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  await fs.writeFile(draft, content(), { mode: 0o600 });
  try {
    await fs.link(draft, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    await fs.unlink(draft);
  }
}
