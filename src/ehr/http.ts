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

/**
 * Admission of calls by the client's address (RPC_RATE_LIMIT): takes `calls` of the address's
 * allowance; undefined when admitted, else the seconds to wait.
 */
export type RpcAdmission = (clientAddress: string, calls: number) => Promise<number | undefined>;

/** HTTP 429 with Retry-After and a JSON-RPC error of id null: nothing of the request was judged. */
function refuseRate(res: ServerResponse, seconds: number): void {
  sendJson(res, 429, { jsonrpc: '2.0', id: null, error: rateLimited(seconds) }, { 'Retry-After': String(seconds) });
}

/**
 * One JSON-RPC POST: the client's call rate (public listener, RPC_RATE_LIMIT: 429), then the body
 * must be application/json (UTF-8), identity-encoded and at most RPC_BODY_LIMIT_BYTES, checked
 * before it is read: else 415 or 413 with a JSON-RPC error (id null), so browsers cannot send it a
 * simple cross-site request. The body's nesting and members are bounded while it is read
 * (json-shape.ts). Every JSON-RPC answer is HTTP 200; a lone notification (or a batch of them) gets 204.
 */
async function answerRpcPost(envelope: RpcEnvelope, channel: Channel, req: IncomingMessage, res: ServerResponse, admit: RpcAdmission | undefined): Promise<void> {
  const clientAddress = currentRequest()?.clientAddress ?? req.socket.remoteAddress ?? 'unknown';
  let text: string;
  try {
    const refusal = refuseBodyByHeaders(req, RPC_BODY_LIMIT_BYTES, { typeRequired: true });
    if (refusal) throw refusal;
    const wait = await admit?.(clientAddress, 1);
    if (wait !== undefined) {
      refuseRate(res, wait);
      return;
    }
    const shape = new JsonShapeGuard();
    text = (await readBody(req, RPC_BODY_LIMIT_BYTES, (chunk) => shape.feed(chunk))).toString('utf8');
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

/** The hot path of interface A: exactly `POST /<version>/` (or without the slash, or with a query), straight to the envelope. */
export function rpcHotPath(envelope: RpcEnvelope, channel: Channel, version: string, logger: Logger, admit?: RpcAdmission): HotPath {
  const paths = new Set([`/${version}/`, `/${version}`]);
  return (req, res) => {
    if (req.method !== 'POST') return false;
    const url = req.url ?? '';
    const query = url.indexOf('?');
    if (!paths.has(query < 0 ? url : url.slice(0, query))) return false;
    answerRpcPost(envelope, channel, req, res, admit).catch((error: unknown) => {
      logger.error({ err: error }, 'interface A request failed');
      if (!res.headersSent) sendJson(res, 500, fallbackBody([version])(500));
      else res.destroy();
    });
    return true;
  };
}

/**
 * Interface A's other answers under /<version>: an unknown version gets 404 and another method 405,
 * both `{error, supportedVersions}` (a POST of the version itself takes the hot path).
 */
export function ehrRoutes(envelope: RpcEnvelope, channel: Channel, version: string, admit?: RpcAdmission): Router {
  const router = Router();
  const httpError = fallbackBody([version]);
  const unknownVersion = (res: Response) => res.status(404).json(httpError(404, `unknown API version; supported: ${version}`));

  router.post('/:version', async (req, res) => {
    if (req.params.version !== version) unknownVersion(res);
    else await answerRpcPost(envelope, channel, req, res, admit);
  });
  router.all('/:version', (req, res) => {
    if (req.params.version !== version) unknownVersion(res);
    else res.status(405).setHeader('Allow', 'POST').json(httpError(405, 'JSON-RPC calls are POSTed'));
  });
  return router;
}
