import type { RequestListener } from 'node:http';
import { currentRequestId } from '../logging/request-context.js';
import { tracer } from '../tracing/tracing.js';

/** Probes and scrapes come every few seconds from machines: no spans of their own. */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * A server span per request while tracing is on (the handler as it is when off: nothing per
 * request), continuing a client's W3C traceparent. Named by method and listener until the
 * interface names it (interface B by its operation, interface A's calls as child spans); its
 * attributes are the method, the status and the gateway's request id, never the path's query or
 * a header's value besides traceparent.
 */
export function withRequestSpan(handler: RequestListener, listener: 'public' | 'internal'): RequestListener {
  if (!tracer().enabled) return handler;
  return (req, res) => {
    const url = req.url ?? '';
    const query = url.indexOf('?');
    if (UNTRACED_PATHS.has(query < 0 ? url : url.slice(0, query))) {
      handler(req, res);
      return;
    }
    const traceparent = req.headers.traceparent;
    const span = tracer().startSpan(`${req.method} ${listener}`, {
      kind: 'server',
      parent: typeof traceparent === 'string' ? traceparent : undefined,
      attributes: { 'http.request.method': req.method ?? '', 'ehr_gateway.listener': listener, 'ehr_gateway.request_id': currentRequestId() ?? '' },
    });
    res.once('close', () => {
      span.setAttributes({ 'http.response.status_code': res.statusCode });
      if (res.statusCode >= 500) span.fail(String(res.statusCode));
      else if (!res.writableFinished) span.fail('aborted');
      span.end();
    });
    span.run(() => handler(req, res));
  };
}
