import express, { Router, type ErrorRequestHandler } from 'express';
import type { Channel, RpcEnvelope } from './rpc/envelope.js';
import { StandardErrors } from './rpc/errors.js';

/** Large enough for a batch of 100 calls; patient payloads are small. */
const RPC_BODY_LIMIT = '1mb';

/**
 * Interface A over HTTP: POST /<version>/ with a JSON-RPC 2.0 body. Every JSON-RPC answer is
 * HTTP 200; a lone notification (or a batch of them) gets 204; an unknown version gets 404.
 */
export function ehrRoutes(envelope: RpcEnvelope, channel: Channel, version: string): Router {
  const router = Router();
  // Read as text whatever the Content-Type, so that malformed JSON becomes -32700 rather than an HTML page.
  router.post('/:version', express.text({ type: () => true, limit: RPC_BODY_LIMIT }), async (req, res) => {
    if (req.params.version !== version) {
      res.status(404).json({ error: `unknown API version; supported: ${version}`, supportedVersions: [version] });
      return;
    }
    const text = typeof req.body === 'string' ? req.body : '';
    const outcome = await envelope.handle(text, channel, req.socket.remoteAddress ?? 'unknown');
    if (outcome.body === undefined) res.status(204).end();
    else res.status(200).json(outcome.body);
  });
  const bodyErrors: ErrorRequestHandler = (error, _req, res, next) => {
    const status = (error as { status?: number }).status;
    if (status === 413) res.status(413).json({ jsonrpc: '2.0', id: null, error: StandardErrors.invalidRequest(`body larger than ${RPC_BODY_LIMIT}`) });
    else next(error);
  };
  router.use(bodyErrors);
  return router;
}
