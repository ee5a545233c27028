/**
 * A reference receiver of ehr-gateway's callbacks, as a clinic's system would run it.
 * Self-contained (Node's standard library only), so a partner can copy it as it is:
 * - verifies the Standard Webhooks signature (`webhook-id`, `webhook-timestamp`,
 *   `webhook-signature`) over the raw body, and the timestamp against the clock;
 * - checks the three headers `businessId`, `user`, `token` when told what to expect;
 * - deduplicates on `webhook-id` (a redelivered callback is acknowledged, not processed again);
 * - answers `{"status":"Success"}`, the only answer the gateway counts as delivered;
 * - saves the document of a SendDocumentFileResultResponse as NAME.xml and NAME.xml.sig.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

/** One callback as the clinic's system received it. */
export interface ReceivedCallback {
  /** The callback's name: the last segment of its path, e.g. SendRegisterDocumentResponse. */
  name: string;
  headers: http.IncomingHttpHeaders;
  rawBody: string;
  body: Record<string, unknown>;
  /** Whether webhook-signature verified with the signing secret and the timestamp was fresh. */
  signatureValid: boolean;
  /** Whether an earlier callback with the same webhook-id was processed already. */
  duplicate: boolean;
}

/** How the receiver answers one callback: HTTP status and JSON body; `hang` never answers. */
export type Reply = { status: number; body: unknown } | 'hang';

export const SUCCESS: Reply = { status: 200, body: { status: 'Success' } };

export interface ClinicReceiverOptions {
  /** The `whsec_…` signing secret `ehr-gateway clients add` printed. Settable later on the receiver. */
  signingSecret?: string;
  /** The callback credentials the gateway sends; unchecked when absent. */
  expectedHeaders?: { businessId: string; user: string; token: string };
  /** Where to save received documents; not saved when absent. */
  documentsDir?: string;
  /** How far webhook-timestamp may be from this clock (default 300 s). */
  toleranceSeconds?: number;
  port?: number;
  host?: string;
  /** Called with every callback as it arrives, before the answer (e.g. to validate or log it). */
  onReceive?: (callback: ReceivedCallback) => void;
  /** Called once a document is written, with the path of its .xml (the .xml.sig beside it). */
  onSaved?: (xmlPath: string) => void;
}

export interface ClinicReceiver {
  /** Base URL to register as the clinic's callback URL. */
  url: string;
  signingSecret: string;
  /** Every request, in arrival order, duplicates and rejected ones included. */
  received: ReceivedCallback[];
  /** Paths of the .xml files saved so far. */
  savedDocuments: string[];
  /**
   * Decides each answer. The default is the clinic's policy: 401 for a bad signature or headers,
   * otherwise `{"status":"Success"}` once processed. Tests replace it to make the gateway retry.
   */
  reply: (callback: ReceivedCallback) => Reply;
  /** Resolves when `predicate` holds for what was received; rejects after timeoutMs. */
  waitFor(predicate: (received: ReceivedCallback[]) => boolean, timeoutMs?: number): Promise<ReceivedCallback[]>;
  close(): Promise<void>;
}

const REJECTED: Reply = { status: 401, body: { status: 'Error', message: 'signature or credentials rejected' } };

function signingKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
}

/** Standard Webhooks: `v1,` + base64 HMAC-SHA256 over `${id}.${timestamp}.${body}`, any of several space-separated. */
export function verifySignature(secret: string, id: string, timestamp: string, rawBody: string, header: string, toleranceSeconds = 300): boolean {
  if (!secret || !id || !/^\d+$/.test(timestamp)) return false;
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > toleranceSeconds) return false;
  const expected = Buffer.from(`v1,${createHmac('sha256', signingKey(secret)).update(`${id}.${timestamp}.${rawBody}`).digest('base64')}`);
  return header.split(' ').some((candidate) => {
    const presented = Buffer.from(candidate);
    return presented.length === expected.length && timingSafeEqual(presented, expected);
  });
}

function sameText(presented: string, expected: string): boolean {
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A document file name that cannot leave the documents folder. */
function safeName(name: string): string {
  return (
    path
      .basename(name)
      .replace(/\.xml$/i, '')
      .replace(/[^\p{L}\p{N}._-]/gu, '_') || 'document'
  );
}

export async function startClinicReceiver(options: ClinicReceiverOptions = {}): Promise<ClinicReceiver> {
  const waiters = new Set<() => void>();
  const hanging = new Set<http.ServerResponse>();
  const processed = new Set<string>();

  async function saveDocument(body: Record<string, unknown>): Promise<void> {
    const document = body.document as { fileName?: string; localUid?: string; content?: string; signature?: string } | undefined;
    if (!options.documentsDir || !document?.content || !document.signature) return;
    const base = path.join(options.documentsDir, safeName(document.fileName ?? document.localUid ?? String(body.emdrId)));
    // Medical documents: readable by their owner only (a folder made here, 0700; the files, 0600, also when they existed).
    await fs.mkdir(options.documentsDir, { recursive: true, mode: 0o700 });
    for (const [file, content] of [
      [`${base}.xml`, document.content],
      [`${base}.xml.sig`, document.signature],
    ] as const) {
      await fs.writeFile(file, Buffer.from(content, 'base64'), { mode: 0o600 });
      await fs.chmod(file, 0o600);
    }
    receiver.savedDocuments.push(`${base}.xml`);
    options.onSaved?.(`${base}.xml`);
  }

  function clinicPolicy(callback: ReceivedCallback): Reply {
    const expected = options.expectedHeaders;
    const header = (name: string) => String(callback.headers[name.toLowerCase()] ?? '');
    const headersMatch =
      !expected ||
      (sameText(header('businessId'), expected.businessId) && sameText(header('user'), expected.user) && sameText(header('token'), expected.token));
    return callback.signatureValid && headersMatch ? SUCCESS : REJECTED;
  }

  const receiver: ClinicReceiver = {
    url: '',
    signingSecret: options.signingSecret ?? '',
    received: [],
    savedDocuments: [],
    reply: clinicPolicy,
    waitFor: (predicate, timeoutMs = 30_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (!predicate(receiver.received)) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(receiver.received);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`callbacks not as expected within ${timeoutMs} ms; got ${receiver.received.map((item) => item.name).join(', ') || 'none'}`));
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
    request.on('end', async () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      const header = (name: string) => String(request.headers[name] ?? '');
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(rawBody) as Record<string, unknown>;
      } catch {
        response.writeHead(400, { 'content-type': 'application/json' }).end('{"status":"Error","message":"body is not JSON"}');
        return;
      }
      const webhookId = header('webhook-id');
      const callback: ReceivedCallback = {
        name: (request.url ?? '').replace(/^.*\/api\//, '').replace(/\?.*$/, ''),
        headers: request.headers,
        rawBody,
        body,
        signatureValid: verifySignature(
          receiver.signingSecret,
          webhookId,
          header('webhook-timestamp'),
          rawBody,
          header('webhook-signature'),
          options.toleranceSeconds,
        ),
        duplicate: processed.has(webhookId),
      };
      options.onReceive?.(callback);
      const reply = receiver.reply(callback);
      const accepted = reply !== 'hang' && reply.status === 200;
      if (accepted && !callback.duplicate) {
        processed.add(webhookId);
        if (callback.name === 'SendDocumentFileResultResponse') await saveDocument(body);
      }
      receiver.received.push(callback);
      if (reply === 'hang') hanging.add(response);
      else response.writeHead(reply.status, { 'content-type': 'application/json' }).end(JSON.stringify(reply.body));
      for (const waiter of [...waiters]) waiter();
    });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve));
  receiver.url = `http://${options.host ?? '127.0.0.1'}:${(server.address() as AddressInfo).port}`;
  return receiver;
}
