import { createHmac, createSecretKey, type Hmac, type KeyObject } from 'node:crypto';

/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com/): HMAC-SHA256 keyed with the
 * base64-decoded part of `whsec_…`, over `${id}.${timestamp}.${body}`, sent as `v1,<base64>`.
 * `secret` may hold several secrets separated by spaces (a rotation's overlap): the header then
 * carries one signature per secret, space-separated, as the specification allows, so a receiver
 * that knows either secret verifies the callback.
 */
function hmacsOf(secret: string, id: string, timestamp: number): Hmac[] {
  return secret.split(' ').map((one) => createHmac('sha256', keyOf(one)).update(`${id}.${timestamp}.`));
}

function header(hmacs: readonly Hmac[]): string {
  return hmacs.map((hmac) => `v1,${hmac.digest('base64')}`).join(' ');
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

/** The webhook-signature header of a body held whole. */
export function signWebhook(secret: string, id: string, timestamp: number, body: string | Buffer): string {
  const hmacs = hmacsOf(secret, id, timestamp);
  for (const hmac of hmacs) hmac.update(body);
  return header(hmacs);
}

/** The webhook-signature header of a body that comes in chunks (signed one after the other, the same as over the bytes joined). */
export async function signWebhookChunks(secret: string, id: string, timestamp: number, chunks: Iterable<Buffer> | AsyncIterable<Buffer>): Promise<string> {
  const hmacs = hmacsOf(secret, id, timestamp);
  for await (const chunk of chunks) for (const hmac of hmacs) hmac.update(chunk);
  return header(hmacs);
}
