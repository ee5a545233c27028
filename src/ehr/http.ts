import type { IncomingMessage, ServerResponse } from 'node:http';
import { Router, type Response } from 'express';
import { fallbackBody } from '../http/fallback.js';
import { BodyRefusal, ClientGone, readBody, refuseBodyByHeaders } from '../http/json-body.js';
import { JsonShapeError, JsonShapeGuard } from '../http/json-shape.js';
import { sendJson, type HotPath } from '../http/respond.js';
import type { Logger } from '../logging/logger.js';
import { currentRequest } from '../logging/request-context.js';
import type { Channel, RpcEnvelope } from './rpc/envelope.js';
import { rateLimited, StandardErrors } from './rpc/errors.js';

/** Large enough for a batch of 100 calls; patient payloads are small. */
export const RPC_BODY_LIMIT_BYTES = 1024 * 1024;

/** The one method a text/plain body may call: it takes no credentials and changes nothing (the SDK's browser app posts it with fetch and no Content-Type). */
const PLAIN_TEXT_METHOD = 'api_info.healthcheck';
const PLAIN_TEXT_LIMIT_BYTES = 4096;

function isPlainTextUtf8(req: IncomingMessage): boolean {
  const [type, ...parameters] = (req.headers['content-type'] ?? '').split(';');
  return (
    type!.trim().toLowerCase() === 'text/plain' && parameters.every((parameter) => !/^\s*charset\s*=/i.test(parameter) || /=\s*"?utf-8"?\s*$/i.test(parameter))
  );
}

/** Whether a text/plain body is exactly one call of PLAIN_TEXT_METHOD (anything else keeps its 415). */
function isLonePlainTextCall(text: string): boolean {
  try {
    const call = JSON.parse(text) as unknown;
    return typeof call === 'object' && call !== null && !Array.isArray(call) && (call as { method?: unknown }).method === PLAIN_TEXT_METHOD;
  } catch {
    return false;
  }
}

/**
 * Admission of calls by the client's address (RPC_RATE_LIMIT): takes `calls` of the address's
 * allowance; undefined when admitted, else the seconds to wait (a refusal may be held a while
 * first, when the address keeps calling regardless: http/refusal-pacing.ts).
 */
export type RpcAdmission = (clientAddress: string, calls: number) => Promise<number | undefined>;

/** HTTP 429 with Retry-After and a JSON-RPC error of id null: nothing of the request was judged. */
function refuseRate(res: ServerResponse, seconds: number): void {
  sendJson(res, 429, { jsonrpc: '2.0', id: null, error: rateLimited(seconds) }, { 'Retry-After': String(seconds) });
}

/** Whether a body its headers refused may still be PLAIN_TEXT_METHOD's text/plain call (read, then judged by plainTextCall). */
function mayBePlainTextCall(req: IncomingMessage, refusal: BodyRefusal): boolean {
  return (
    refusal.status === 415 &&
    req.headers['content-encoding'] === undefined &&
    isPlainTextUtf8(req) &&
    Number(req.headers['content-length'] ?? 0) <= PLAIN_TEXT_LIMIT_BYTES
  );
}

/** A text/plain body of at most 4 KiB, bounded in shape as it is read, taken only when it is one call of PLAIN_TEXT_METHOD; else the headers' refusal (415). */
async function plainTextCall(req: IncomingMessage, refusal: BodyRefusal): Promise<string> {
  const shape = new JsonShapeGuard();
  const body = await readBody(req, PLAIN_TEXT_LIMIT_BYTES, (chunk) => shape.feed(chunk)).catch((error: unknown) =>
    Promise.reject(error instanceof BodyRefusal || error instanceof JsonShapeError ? refusal : error),
  );
  const text = body.toString('utf8');
  if (!isLonePlainTextCall(text)) throw refusal;
  return text;
}

/**
 * One JSON-RPC POST: the body must be application/json (UTF-8), identity-encoded and at most
 * RPC_BODY_LIMIT_BYTES, checked before it is read: else 415 or 413 with a JSON-RPC error (id null),
 * so browsers cannot send it a simple cross-site request (the one exception, plainTextCall's
 * text/plain healthcheck, reads nothing of anybody's). Then the client's call rate (public
 * listener, RPC_RATE_LIMIT: 429). The body's nesting and members are bounded while it is read
 * (json-shape.ts). Every JSON-RPC answer is HTTP 200; a lone notification (or a batch of them) gets 204.
 */
async function answerRpcPost(
  envelope: RpcEnvelope,
  channel: Channel,
  req: IncomingMessage,
  res: ServerResponse,
  admit: RpcAdmission | undefined,
): Promise<void> {
  const clientAddress = currentRequest()?.clientAddress ?? req.socket.remoteAddress ?? 'unknown';
  let text: string;
  try {
    const refusal = refuseBodyByHeaders(req, RPC_BODY_LIMIT_BYTES, { typeRequired: true });
    if (refusal && !mayBePlainTextCall(req, refusal)) throw refusal;
    const wait = await admit?.(clientAddress, 1);
    if (wait !== undefined) {
      refuseRate(res, wait);
      return;
    }
    if (refusal) text = await plainTextCall(req, refusal);
    else {
      const shape = new JsonShapeGuard();
      text = (await readBody(req, RPC_BODY_LIMIT_BYTES, (chunk) => shape.feed(chunk))).toString('utf8');
    }
  } catch (error) {
    if (error instanceof BodyRefusal) sendJson(res, error.status, { jsonrpc: '2.0', id: null, error: StandardErrors.invalidRequest(error.message) });
    else if (error instanceof JsonShapeError) sendJson(res, 200, { jsonrpc: '2.0', id: null, error: StandardErrors.invalidRequest(error.message) });
    else if (!(error instanceof ClientGone)) throw error;
    return;
  }
  // The rest of a batch is admitted before any of its calls is judged.
  const outcome = await envelope.handle(text, channel, clientAddress, admit && ((calls) => admit(clientAddress, calls)));
  if ('retryAfterSeconds' in outcome) refuseRate(res, outcome.retryAfterSeconds);
  else if (outcome.body === undefined) {
    res.statusCode = 204;
    res.end();
  } else sendJson(res, 200, outcome.body);
}

/**
 * The hot path of interface A: exactly `POST /<version>/` (or without the slash, or with a query)
 * for each served version (the spec's own and the compatible ones it lists), straight to the envelope.
 */
export function rpcHotPath(envelope: RpcEnvelope, channel: Channel, versions: readonly string[], logger: Logger, admit?: RpcAdmission): HotPath {
  const paths = new Set(versions.flatMap((version) => [`/${version}/`, `/${version}`]));
  return (req, res) => {
    if (req.method !== 'POST') return false;
    const url = req.url ?? '';
    const query = url.indexOf('?');
    if (!paths.has(query < 0 ? url : url.slice(0, query))) return false;
    answerRpcPost(envelope, channel, req, res, admit).catch((error: unknown) => {
      logger.error({ err: error }, 'interface A request failed');
      if (!res.headersSent) sendJson(res, 500, fallbackBody(versions)(500));
      else res.destroy();
    });
    return true;
  };
}

/**
 * Interface A's other answers under /<version>: an unknown version gets 404 and another method 405,
 * both `{error, supportedVersions}` (a POST of the version itself takes the hot path).
 */
export function ehrRoutes(envelope: RpcEnvelope, channel: Channel, versions: readonly string[], admit?: RpcAdmission): Router {
  const router = Router();
  const httpError = fallbackBody(versions);
  const unknownVersion = (res: Response) => res.status(404).json(httpError(404, `unknown API version; supported: ${versions.join(', ')}`));

  router.post('/:version', async (req, res) => {
    if (!versions.includes(req.params.version)) unknownVersion(res);
    else await answerRpcPost(envelope, channel, req, res, admit);
  });
  router.all('/:version', (req, res) => {
    if (!versions.includes(req.params.version)) unknownVersion(res);
    else res.status(405).setHeader('Allow', 'POST').json(httpError(405, 'JSON-RPC calls are POSTed'));
  });
  return router;
}
