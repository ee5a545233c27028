import { createHmac, createSecretKey, type Hmac, type KeyObject } from 'node:crypto';

/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com/): HMAC-SHA256 keyed with the
 * base64-decoded part of `whsec_…`, over `${id}.${timestamp}.${body}`, sent as `v1,<base64>`.
 */
function hmacOf(secret: string, id: string, timestamp: number): Hmac {
  return createHmac('sha256', keyOf(secret)).update(`${id}.${timestamp}.`);
}

/**
 * Each signing secret as a KeyObject, made once: createHmac with raw key bytes first checks whether
 * they are a CryptoKey, which cost more than the HMAC of a small callback body (profiled).
 */
const keys = new Map<string, KeyObject>();
const KEYS_CACHED = 1000;

function keyOf(secret: string): KeyObject {
  let key = keys.get(secret);
  if (!key) {
    if (keys.size >= KEYS_CACHED) keys.clear();
    key = createSecretKey(Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64'));
    keys.set(secret, key);
  }
  return key;
}

/** The signature of a body held whole. */
export function signWebhook(secret: string, id: string, timestamp: number, body: string | Buffer): string {
  return `v1,${hmacOf(secret, id, timestamp).update(body).digest('base64')}`;
}

/** The signature of a body that comes in chunks (signed one after the other, the same as over the bytes joined). */
export async function signWebhookChunks(secret: string, id: string, timestamp: number, chunks: Iterable<Buffer> | AsyncIterable<Buffer>): Promise<string> {
  const hmac = hmacOf(secret, id, timestamp);
  for await (const chunk of chunks) hmac.update(chunk);
  return `v1,${hmac.digest('base64')}`;
}
