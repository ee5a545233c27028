import { Router, type Response } from 'express';
import { fallbackBody } from '../http/fallback.js';
import { BodyRefusal, ClientGone, readBody, refuseBodyByHeaders } from '../http/json-body.js';
import type { Channel, RpcEnvelope } from './rpc/envelope.js';
import { StandardErrors } from './rpc/errors.js';

/** Large enough for a batch of 100 calls; patient payloads are small. */
export const RPC_BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * Interface A over HTTP: POST /<version>/ with a JSON-RPC 2.0 body. Every JSON-RPC answer is
 * HTTP 200; a lone notification (or a batch of them) gets 204; an unknown version gets 404 and
 * another method 405, both `{error, supportedVersions}`. The body must be application/json
 * (UTF-8), identity-encoded and at most RPC_BODY_LIMIT_BYTES, checked before it is read: else 415
 * or 413 with a JSON-RPC error (id null), so browsers cannot send it a simple cross-site request.
 */
export function ehrRoutes(envelope: RpcEnvelope, channel: Channel, version: string): Router {
  const router = Router();
  const httpError = fallbackBody([version]);
  const unknownVersion = (res: Response) => res.status(404).json(httpError(404, `unknown API version; supported: ${version}`));

  router.post('/:version', async (req, res) => {
    if (req.params.version !== version) {
      unknownVersion(res);
      return;
    }
    let text: string;
    try {
      const refusal = refuseBodyByHeaders(req, RPC_BODY_LIMIT_BYTES, { typeRequired: true });
      if (refusal) throw refusal;
      text = (await readBody(req, RPC_BODY_LIMIT_BYTES)).toString('utf8');
    } catch (error) {
      if (error instanceof BodyRefusal) res.status(error.status).json({ jsonrpc: '2.0', id: null, error: StandardErrors.invalidRequest(error.message) });
      else if (!(error instanceof ClientGone)) throw error;
      return;
    }
    const outcome = await envelope.handle(text, channel, req.socket.remoteAddress ?? 'unknown');
    if (outcome.body === undefined) res.status(204).end();
    else res.status(200).json(outcome.body);
  });
  router.all('/:version', (req, res) => {
    if (req.params.version !== version) unknownVersion(res);
    else res.status(405).setHeader('Allow', 'POST').json(httpError(405, 'JSON-RPC calls are POSTed'));
  });
  return router;
}
