import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';

/** A JSON answer on node's own response object (the hot paths run without Express). */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers?: Readonly<Record<string, string>>): void {
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  if (headers) for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.end(text);
}

/** A handler of a few paths: takes the request (and answers it) or returns false. */
export type HotPath = (req: IncomingMessage, res: ServerResponse) => boolean;

/**
 * The listener's handler: the interfaces' own paths first, on node's request and response (no
 * router or middleware per request), everything else (health, docs, fallbacks) to `rest`.
 */
export function withHotPaths(hotPaths: readonly HotPath[], rest: RequestListener): RequestListener {
  return (req, res) => {
    for (const hotPath of hotPaths) if (hotPath(req, res)) return;
    rest(req, res);
  };
}
