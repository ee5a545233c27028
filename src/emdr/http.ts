import type express from 'express';
import { Router, type Request } from 'express';
import fs from 'node:fs/promises';
import { OpenAPIBackend, type Context, type Document, type Operation } from 'openapi-backend';
import { Validator as OpenApi31Validator } from '@seriousme/openapi-schema-validator';
import { parse as parseYaml } from 'yaml';
import type { ErrorObject } from 'ajv';
import type { Logger } from '../logging/logger.js';
import { isDatabaseUnavailable, RETRY_AFTER_SECONDS } from '../db/database.js';
import { BodyRefusal, ClientGone, readBody, refuseBodyByHeaders } from '../http/json-body.js';
import { inlineLocalRefs } from '../validation/inline-refs.js';
import { createJsonSchemaAjv, errorPath } from '../validation/json-schema.js';
import { hasLoneSurrogate, textPaths } from '../validation/text.js';
import { ApiError, errorBody, type ErrorItem } from './errors.js';
import { parseJsonBody } from './base64-member.js';

/** What an operation handler returns (ts-rest style); the router puts it on the wire. */
export interface HandlerResult {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** An operation handler: gets the validated request, returns status and body, or throws ApiError. */
export type OperationHandler = (context: Context, request: Request) => Promise<HandlerResult>;

/**
 * Checks one security scheme of the definition from the request's headers, before its body is
 * read. A falsy result fails the scheme (401 ACCESS_DENIED when no requirement is met); a truthy
 * one is available as `context.security[scheme]`. A throw is not a refusal: an ApiError keeps its
 * status, an unreachable database answers 503, anything else 500.
 */
export type SecurityHandler = (context: { operation: Operation }, request: Request) => Promise<unknown>;

/** Admission after authentication and before the body is read (the rate limit); throws ApiError to refuse. */
export type BeforeBody = (operationId: string, security: Readonly<Record<string, unknown>>, request: Request) => void | Promise<void>;

export interface EmdrRouterOptions {
  /** The OpenAPI document, or the path of specs/openapi.yaml. */
  definition: Document | string;
  handlers: Readonly<Record<string, OperationHandler>>;
  securityHandlers?: Readonly<Record<string, SecurityHandler>>;
  beforeBody?: BeforeBody;
  /** Largest request body: `default`, and per operationId where an operation takes more (RegisterDocument: BODY_LIMIT). */
  bodyLimits: { default: number; byOperation?: Readonly<Record<string, number>> };
  /** Per operationId, a top-level body member of large base64 kept out of the parsed body (see base64-member.ts). */
  base64Members?: Readonly<Record<string, string>>;
  logger: Logger;
}

/** The body limit of every operation but RegisterDocument (specs/openapi.yaml, TooLarge). */
export const SMALL_BODY_LIMIT_BYTES = 64 * 1024;

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

function toErrorItems(errors: ErrorObject[] | null | undefined): ErrorItem[] {
  return (errors ?? []).map((error) => ({ code: 'VALIDATION_ERROR', message: error.message ?? 'is invalid', path: errorPath(error) }));
}

/**
 * openapi-backend checks definitions against the OpenAPI 3.0 schema only, so a valid 3.1 document
 * fails there; we check with a 3.1-aware validator first and skip its own check.
 */
class OpenApi31Backend extends OpenAPIBackend {
  override validateDefinition(): Document {
    return this.document;
  }
}

/**
 * The definition, checked, with its references inlined. openapi-backend's compile turns every object
 * it meets twice into a `$ref` (its "decycle"), an array too, which is no schema where an array
 * belongs (`allOf`, `examples`): a `$ref` with siblings, dereferenced, shares its target's arrays.
 * Inlined, nothing is shared.
 */
async function loadDefinition(definition: Document | string): Promise<Document> {
  const document = typeof definition === 'string' ? (parseYaml(await fs.readFile(definition, 'utf8')) as Document) : definition;
  const result = await new OpenApi31Validator({ strict: false }).validate(document as never);
  if (!result.valid) {
    const errors = typeof result.errors === 'string' ? result.errors : JSON.stringify(result.errors?.slice(0, 5));
    throw new Error(`interface B definition is not valid OpenAPI: ${errors}`);
  }
  return inlineLocalRefs(document) as Document;
}

/** The operations of the definition on openapi-backend, its security handlers reading what `authenticate` found. */
async function createBackend(definition: Document, options: EmdrRouterOptions, securityResults: WeakMap<Request, Record<string, unknown>>): Promise<OpenAPIBackend> {
  const api = new OpenApi31Backend({
    definition,
    apiRoot: '/',
    // Fail at start on a definition that does not load: in non-strict mode it silently loads no operations.
    strict: true,
    quick: false,
    customizeAjv: (_original, ajvOptions) => createJsonSchemaAjv(ajvOptions) as never,
    handlers: {
      validationFail: async (context: Context) => {
        throw new ApiError(400, toErrorItems(context.validation.errors as ErrorObject[]));
      },
      notImplemented: async (context: Context) => {
        throw ApiError.single(501, 'NOT_IMPLEMENTED', `operation ${context.operation.operationId ?? ''} is not implemented`);
      },
    },
  });
  for (const scheme of Object.keys(options.securityHandlers ?? {})) {
    api.registerSecurityHandler(scheme, (_context: Context, request: Request) => securityResults.get(request)?.[scheme]);
  }
  for (const [operationId, handler] of Object.entries(options.handlers)) {
    api.register(operationId, (context: Context, request: Request) => handler(context, request));
  }
  await api.init();
  if (Object.keys(definition.paths ?? {}).length > 0 && api.getOperations().length === 0) {
    throw new Error('interface B definition loaded no operations');
  }
  return api;
}

/** The operation of the request's method and path: else 404, or 405 listing the methods the path takes (RFC 9110). */
function operationOf(api: OpenAPIBackend, req: Request): Operation {
  const request = { method: req.method, path: req.baseUrl + req.path, headers: req.headers as Record<string, string> };
  const operation = api.router.matchOperation(request);
  if (operation) {
    if (!hasValidEscapes(request.path)) throw ApiError.single(400, 'VALIDATION_ERROR', 'the path has a malformed percent-escape', '/path');
    return operation;
  }
  const allowed = HTTP_METHODS.filter((method) => api.router.matchOperation({ ...request, method }) !== undefined);
  if (allowed.length === 0) throw ApiError.single(404, 'NOT_FOUND', 'no such operation');
  throw new ApiError(405, [{ code: 'METHOD_NOT_ALLOWED', message: 'method not allowed on this path' }], { Allow: allowed.map((method) => method.toUpperCase()).join(', ') });
}

/** Runs the operation's security requirements on the headers (one met is enough): their results, or 401. */
async function authenticate(options: EmdrRouterOptions, operation: Operation, req: Request): Promise<Record<string, unknown>> {
  const requirements = operation.security ?? [];
  const schemes = [...new Set(requirements.flatMap((requirement) => Object.keys(requirement)))];
  const results = Object.fromEntries(await Promise.all(schemes.map(async (scheme) => [scheme, await options.securityHandlers?.[scheme]?.({ operation }, req)] as const)));
  if (requirements.length > 0 && !requirements.some((requirement) => Object.keys(requirement).every((scheme) => Boolean(results[scheme])))) {
    throw ApiError.single(401, 'ACCESS_DENIED', 'unknown clinic account or wrong token (send the headers businessId, user and token)');
  }
  return results;
}

/** The operation's JSON body, refused on its headers (415, 413) before it is read; undefined when the operation takes none or none came. */
async function readJsonBody(options: EmdrRouterOptions, operation: Operation, req: Request): Promise<unknown> {
  if (!operation.requestBody) return undefined;
  const operationId = operation.operationId ?? '';
  const limit = options.bodyLimits.byOperation?.[operationId] ?? options.bodyLimits.default;
  const refusal = refuseBodyByHeaders(req, limit, { typeRequired: false });
  if (refusal) throw refusalError(refusal);
  let body: unknown;
  try {
    body = parseJsonBody(req, await readBody(req, limit), options.base64Members?.[operationId]);
  } catch (error) {
    if (error instanceof BodyRefusal) throw refusalError(error);
    if (error instanceof SyntaxError) throw ApiError.single(400, 'VALIDATION_ERROR', 'body is not valid JSON');
    throw error;
  }
  // openapi-backend would take a string body for unparsed JSON text; every body of the spec is an object anyway.
  if (body !== undefined && typeof body !== 'object') throw ApiError.single(400, 'VALIDATION_ERROR', 'must be a JSON object', '/requestBody');
  // Not Unicode text anywhere in the body: refused before any of it is used (a NUL is the schemas' business).
  const notText = textPaths(body, hasLoneSurrogate);
  if (notText.length > 0) {
    throw new ApiError(400, notText.map((path) => ({ code: 'VALIDATION_ERROR' as const, message: 'must not contain a lone UTF-16 surrogate (not Unicode text)', path: `/requestBody${path === '/' ? '' : path}` })));
  }
  return body;
}

/**
 * Interface B on openapi-backend: routing and request validation come from specs/openapi.yaml
 * (OpenAPI 3.1, validated with Ajv's draft 2020-12 and formats, compiled once at start).
 * Before a byte of a body is read: the route (404, 405), the clinic's headers (401), the rate limit
 * (429), then the body's encoding and type (415) and declared length (413). Every error, thrown or
 * from validation, leaves in the one shape of errors.ts.
 */
export async function createEmdrRouter(options: EmdrRouterOptions): Promise<Router> {
  const definition = await loadDefinition(options.definition);
  const securityResults = new WeakMap<Request, Record<string, unknown>>();
  const api = await createBackend(definition, options, securityResults);
  const router = Router();
  router.use(async (req, res) => {
    try {
      const operation = operationOf(api, req);
      const security = await authenticate(options, operation, req);
      securityResults.set(req, security);
      await options.beforeBody?.(operation.operationId ?? '', security, req);
      const body = await readJsonBody(options, operation, req);
      const result = (await api.handleRequest({ method: req.method, path: req.baseUrl + req.path, body, query: req.query as Record<string, string>, headers: req.headers as Record<string, string> }, req)) as HandlerResult;
      res.status(result.status);
      for (const [name, value] of Object.entries(result.headers ?? {})) res.setHeader(name, value);
      res.json(result.body);
    } catch (error) {
      sendError(res, error, options.logger);
    }
  });
  return router;
}

function hasValidEscapes(path: string): boolean {
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}

function refusalError(refusal: BodyRefusal): ApiError {
  return ApiError.single(refusal.status, refusal.status === 413 ? 'REQUEST_TOO_LARGE' : 'UNSUPPORTED_MEDIA_TYPE', refusal.message);
}

function sendError(res: express.Response, error: unknown, logger: Logger): void {
  if (error instanceof ClientGone || res.headersSent) return;
  if (error instanceof ApiError) {
    for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
    res.status(error.status).json(errorBody(error.items));
    return;
  }
  if (isDatabaseUnavailable(error)) {
    logger.warn({ code: (error as { code?: unknown }).code }, 'interface B: database unavailable');
    res.status(503).setHeader('Retry-After', String(RETRY_AFTER_SECONDS));
    res.json(errorBody([{ code: 'SERVICE_UNAVAILABLE', message: 'the service cannot reach its database; retry after the seconds in Retry-After' }]));
    return;
  }
  logger.error({ err: error }, 'interface B request failed');
  res.status(500).json(errorBody([{ code: 'INTERNAL_ERROR', message: 'internal error' }]));
}
