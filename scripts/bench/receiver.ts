/**
 * The clinic's side of the pipeline benchmark, as its own process: receives the gateway's
 * callbacks, checks each Standard Webhooks signature (HMAC-SHA256), answers {"status":"Success"}
 * and notes when each arrived (epoch milliseconds, sub-millisecond, comparable across processes).
 *
 *   POST /configure   {"secret": "whsec_…"}: the clinic's signing secret; clears what was received
 *   POST /api/<Name>  a callback
 *   GET  /stats       {"received", "badSignatures", "duplicates", "errors", "firstError"}: `errors` counts the
 *                     callbacks saying "status": "error" (a rejected or failed request), the first one's body kept
 *   GET  /arrivals    [[name, queueMessageId, atMs], …]
 *   GET  /files       [[queueMessageId, SHA-256 (hex) of the decoded document.content], …] of the file callbacks
 *
 *   tsx scripts/bench/receiver.ts   (env PORT, default a free one it binds itself; prints "receiver listening on PORT" when ready)
 */
import { createHash, createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

let key = Buffer.alloc(0);
let arrivals: Array<[string, string, number]> = [];
let files: Array<[string, string]> = [];
let seen = new Set<string>();
let badSignatures = 0;
let duplicates = 0;
let errors = 0;
let firstError: string | undefined;

const SUCCESS = Buffer.from('{"status":"Success"}');

function signatureValid(headers: http.IncomingHttpHeaders, body: Buffer): boolean {
  const expected = createHmac('sha256', key).update(`${headers['webhook-id']}.${headers['webhook-timestamp']}.`).update(body).digest('base64');
  return String(headers['webhook-signature'] ?? '')
    .split(' ')
    .some((signature) => signature === `v1,${expected}`);
}

function answer(response: http.ServerResponse, status: number, body: Buffer | string): void {
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  response.end(body);
}

const server = http.createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const at = performance.timeOrigin + performance.now();
    const body = Buffer.concat(chunks);
    if (request.url === '/configure') {
      key = Buffer.from((JSON.parse(body.toString()).secret as string).replace(/^whsec_/, ''), 'base64');
      arrivals = [];
      files = [];
      seen = new Set();
      badSignatures = 0;
      duplicates = 0;
      errors = 0;
      firstError = undefined;
      answer(response, 200, '{}');
    } else if (request.url === '/stats') {
      answer(response, 200, JSON.stringify({ received: arrivals.length, badSignatures, duplicates, errors, firstError }));
    } else if (request.url === '/arrivals') {
      answer(response, 200, JSON.stringify(arrivals));
    } else if (request.url === '/files') {
      answer(response, 200, JSON.stringify(files));
    } else if (request.url?.startsWith('/api/')) {
      if (!signatureValid(request.headers, body)) {
        badSignatures += 1;
        answer(response, 401, '{"status":"Error"}');
        return;
      }
      const webhookId = String(request.headers['webhook-id']);
      if (seen.has(webhookId)) duplicates += 1;
      else {
        seen.add(webhookId);
        const name = request.url.slice('/api/'.length);
        if (/"status"\s*:\s*"error"/.test(body.toString('latin1'))) {
          errors += 1;
          firstError ??= `${name}: ${body.toString('utf8').slice(0, 500)}`;
        }
        // The file callback is parsed whole (its members may come in any order, the file first); the others are small.
        if (name === 'SendDocumentFileResultResponse') {
          const parsed = JSON.parse(body.toString('utf8')) as { queueMessageId: string; document?: { content?: string } };
          arrivals.push([name, parsed.queueMessageId, at]);
          files.push([
            parsed.queueMessageId,
            createHash('sha256')
              .update(Buffer.from(parsed.document?.content ?? '', 'base64'))
              .digest('hex'),
          ]);
        } else arrivals.push([name, /"queueMessageId"\s*:\s*"([^"]+)"/.exec(body.toString('latin1'))?.[1] ?? '', at]);
      }
      answer(response, 200, SUCCESS);
    } else answer(response, 404, '{}');
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => console.log(`receiver listening on ${(server.address() as AddressInfo).port}`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
