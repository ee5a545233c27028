import type { RequestListener } from 'node:http';
import type { Logger } from '../logging/logger.js';
import { currentRequest, runInRequest } from '../logging/request-context.js';

/** Probes and scrapes come every few seconds from machines: logged at debug, so that info shows what people and clients did. */
const PROBE_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/** A path as long as any of ours; a longer one is cut, so a client cannot write a megabyte into the log. */
const PATH_LIMIT = 200;

/**
 * One log line per request once its answer is sent (or the connection closed under it): method,
 * path without the query string (a client may put a secret there), status, duration and the
 * request ids (from the logger's request context). Nothing of headers or bodies.
 */
export function withAccessLog(handler: RequestListener, logger: Logger, listener: 'public' | 'internal'): RequestListener {
  return (req, res) => {
    const started = performance.now();
    const url = req.url ?? '';
    const query = url.indexOf('?');
    const path = (query < 0 ? url : url.slice(0, query)).slice(0, PATH_LIMIT);
    // The request's own context (its ids), set by the listener around this handler.
    const context = currentRequest() ?? { requestId: String(res.getHeader('x-request-id') ?? '') };
    res.once('close', () => {
      const line = {
        listener,
        method: req.method,
        path,
        status: res.statusCode,
        durationMs: Math.round((performance.now() - started) * 10) / 10,
        ...(res.writableFinished ? {} : { aborted: true }),
      };
      runInRequest(context, () => (PROBE_PATHS.has(path) ? logger.debug(line, 'request') : logger.info(line, 'request')));
    });
    handler(req, res);
  };
}
