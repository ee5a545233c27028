import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Logger } from '../logging/logger.js';

/**
 * The answer of both listeners outside the interfaces' own routes (an unknown path or version, a
 * method a path does not take, a malformed URL), and of Node itself for a request it cannot parse:
 * interface A's documented shape `{error, supportedVersions}`. Never Express's HTML page.
 */
export interface FallbackBody {
  error: string;
  supportedVersions: string[];
}

const MESSAGES: Record<number, string> = {
  400: 'malformed request (a bad percent-escape in the path?)',
  404: 'no such path; interface A is at /<version>/, interface B at /api/*',
  405: 'method not allowed on this path',
  408: 'request not received in time',
  413: 'request too large',
  415: 'unsupported media type',
  431: 'request headers too large',
  500: 'internal error',
};

export function fallbackBody(supportedVersions: readonly string[]): (status: number, message?: string) => FallbackBody {
  return (status, message) => ({ error: message ?? MESSAGES[status] ?? MESSAGES[status >= 500 ? 500 : 400]!, supportedVersions: [...supportedVersions] });
}

/** The last route of an app: anything no route took is a 404 in the fallback shape (`message`: what this listener does answer). */
export function notFound(body: (status: number, message?: string) => FallbackBody, message?: string): RequestHandler {
  return (_req, res) => {
    res.status(404).json(body(404, message));
  };
}

/** A 404 for the paths under `prefixes` that another listener answers, saying which (e.g. /api/* sent to the internal listener). */
export function onAnotherListener(prefixes: readonly string[], message: string, body: (status: number, message?: string) => FallbackBody): RequestHandler {
  return (req, res, next) => {
    if (!prefixes.some((prefix) => req.path === prefix || req.path.startsWith(`${prefix}/`))) return next();
    res.status(404).json(body(404, message));
  };
}

/**
 * The last error handler of an app: a client error (4xx from Express or a parser, e.g. a bad
 * percent-escape) keeps its status; anything else is a 500, logged. Never a stack on the wire.
 */
export function errorHandler(logger: Logger, body: (status: number) => FallbackBody): ErrorRequestHandler {
  return (error, _req, res, _next) => {
    const declared = (error as { status?: unknown; statusCode?: unknown }).status ?? (error as { statusCode?: unknown }).statusCode;
    const status = typeof declared === 'number' && declared >= 400 && declared < 500 ? declared : 500;
    if (status === 500) logger.error({ err: error }, 'request failed');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.status(status).json(body(status));
  };
}
