import { createHmac } from 'node:crypto';

/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com/): HMAC-SHA256 keyed with the
 * base64-decoded part of `whsec_…`, over `${id}.${timestamp}.${body}`, sent as `v1,<base64>`.
 */
function key(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
}

/** `body` may come in chunks: signed one after the other, the same as over the bytes joined. */
export function signWebhook(secret: string, id: string, timestamp: number, body: string | Buffer | readonly Buffer[]): string {
  const hmac = createHmac('sha256', key(secret));
  hmac.update(`${id}.${timestamp}.`);
  for (const chunk of typeof body === 'string' || Buffer.isBuffer(body) ? [body] : body) hmac.update(chunk);
  return `v1,${hmac.digest('base64')}`;
}
