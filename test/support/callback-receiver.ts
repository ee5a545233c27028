import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyWebhook } from '../../src/callbacks/signing.js';

/** One callback as the clinic's system received it. */
export interface ReceivedCallback {
  name: string;
  headers: http.IncomingHttpHeaders;
  rawBody: string;
  body: Record<string, unknown>;
  /** Whether webhook-signature verified with the clinic's signing secret. */
  signatureValid: boolean;
}

/** How the receiver answers one callback: HTTP status and body; `hang` never answers. */
export type Reply = { status: number; body: unknown } | 'hang';

export interface CallbackReceiver {
  /** Base URL to register as the clinic's callback URL. */
  url: string;
  /** Every request, in arrival order (duplicates included). */
  received: ReceivedCallback[];
  /** Set once the signing secret is known (after `clients add`). */
  signingSecret: string;
  /** Decides each answer; the default accepts with `{"status":"Success"}`. */
  reply: (callback: ReceivedCallback) => Reply;
  /** Resolves when `predicate` holds for what was received; rejects after timeoutMs. */
  waitFor(predicate: (received: ReceivedCallback[]) => boolean, timeoutMs?: number): Promise<ReceivedCallback[]>;
  close(): Promise<void>;
}

export const SUCCESS: Reply = { status: 200, body: { status: 'Success' } };

/**
 * A clinic's callback endpoint on loopback: verifies the Standard Webhooks signature of each call
 * as a clinic should, records it, and answers as `reply` says.
 */
export async function startCallbackReceiver(): Promise<CallbackReceiver> {
  const waiters = new Set<() => void>();
  const hanging = new Set<http.ServerResponse>();
  const receiver: CallbackReceiver = {
    url: '',
    received: [],
    signingSecret: '',
    reply: () => SUCCESS,
    waitFor: (predicate, timeoutMs = 30_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (predicate(receiver.received)) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(receiver.received);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`callbacks not as expected within ${timeoutMs} ms; got ${receiver.received.map((item) => item.name).join(', ')}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
    close: async () => {
      for (const response of hanging) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      const header = (name: string) => String(request.headers[name] ?? '');
      const callback: ReceivedCallback = {
        name: (request.url ?? '').replace(/^.*\/api\//, ''),
        headers: request.headers,
        rawBody,
        body: JSON.parse(rawBody) as Record<string, unknown>,
        signatureValid: verifyWebhook(receiver.signingSecret, header('webhook-id'), header('webhook-timestamp'), rawBody, header('webhook-signature')),
      };
      const reply = receiver.reply(callback);
      receiver.received.push(callback);
      if (reply === 'hang') hanging.add(response);
      else response.writeHead(reply.status, { 'content-type': 'application/json' }).end(JSON.stringify(reply.body));
      for (const waiter of [...waiters]) waiter();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return receiver;
}
