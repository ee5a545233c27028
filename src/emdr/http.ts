import express, { Router, type ErrorRequestHandler, type Request } from 'express';
import fs from 'node:fs/promises';
import { OpenAPIBackend, type Context, type Document } from 'openapi-backend';
import { Validator as OpenApi31Validator } from '@seriousme/openapi-schema-validator';
import { parse as parseYaml } from 'yaml';
import type { ErrorObject } from 'ajv';
import type { Logger } from '../logging/logger.js';
import { createJsonSchemaAjv, errorPath } from '../validation/json-schema.js';
import { ApiError, errorBody, type ErrorItem } from './errors.js';
import { base64MemberBody } from './base64-member.js';

/** What an operation handler returns (ts-rest style); the router puts it on the wire. */
export interface HandlerResult {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** An operation handler: gets the validated request, returns status and body, or throws ApiError. */
export type OperationHandler = (context: Context, request: Request) => Promise<HandlerResult>;

/**
 * Checks one security scheme of the definition; a falsy result (or a throw) fails it, and the
 * router answers 401 ACCESS_DENIED. A truthy result is available as `context.security[scheme]`.
 */
export type SecurityHandler = (context: Context, request: Request) => Promise<unknown>;

export interface EmdrRouterOptions {
  /** The OpenAPI document, or the path of specs/openapi.yaml. */
  definition: Document | string;
  handlers: Readonly<Record<string, OperationHandler>>;
  securityHandlers?: Readonly<Record<string, SecurityHandler>>;
  bodyLimitBytes: number;
  /** Per operationId, a top-level body member of large base64 kept out of the parsed body (see base64-member.ts). */
  base64Members?: Readonly<Record<string, string>>;
  logger: Logger;
}

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

async function loadDefinition(definition: Document | string): Promise<Document> {
  const document = typeof definition === 'string' ? (parseYaml(await fs.readFile(definition, 'utf8')) as Document) : definition;
  const result = await new OpenApi31Validator({ strict: false }).validate(document as never);
  if (!result.valid) {
    const errors = typeof result.errors === 'string' ? result.errors : JSON.stringify(result.errors?.slice(0, 5));
    throw new Error(`interface B definition is not valid OpenAPI: ${errors}`);
  }
  return document;
}

/**
 * Interface B on openapi-backend: routing and request validation come from specs/openapi.yaml
 * (OpenAPI 3.1, validated with Ajv's draft 2020-12 and formats, compiled once at start).
 * Every error, thrown or from validation, leaves in the one shape of errors.ts.
 */
export async function createEmdrRouter(options: EmdrRouterOptions): Promise<Router> {
  const definition = await loadDefinition(options.definition);
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
      notFound: async () => {
        throw ApiError.single(404, 'NOT_FOUND', 'no such operation');
      },
      methodNotAllowed: async (context: Context) => {
        // RFC 9110: a 405 lists the methods the path supports.
        const allowed = HTTP_METHODS.filter((method) => api.router.matchOperation({ ...context.request, method }) !== undefined);
        throw new ApiError(405, [{ code: 'METHOD_NOT_ALLOWED', message: 'method not allowed on this path' }], { Allow: allowed.map((method) => method.toUpperCase()).join(', ') });
      },
      unauthorizedHandler: async () => {
        throw ApiError.single(401, 'ACCESS_DENIED', 'unknown clinic account or wrong token (send the headers businessId, user and token)');
      },
      notImplemented: async (context: Context) => {
        throw ApiError.single(501, 'NOT_IMPLEMENTED', `operation ${context.operation.operationId ?? ''} is not implemented`);
      },
    },
  });
  for (const [scheme, handler] of Object.entries(options.securityHandlers ?? {})) {
    api.registerSecurityHandler(scheme, (context: Context, request: Request) => handler(context, request));
  }
  for (const [operationId, handler] of Object.entries(options.handlers)) {
    api.register(operationId, (context: Context, request: Request) => handler(context, request));
  }
  await api.init();
  if (Object.keys(definition.paths ?? {}).length > 0 && api.getOperations().length === 0) {
    throw new Error('interface B definition loaded no operations');
  }

  // body-parser turns an empty JSON body into {}, which would pass for a required request body.
  const emptyBodies = new WeakSet<object>();
  const router = Router();
  router.use(
    base64MemberBody({
      limit: options.bodyLimitBytes,
      memberName: (req) => {
        const operation = api.router.matchOperation({ method: req.method, path: req.baseUrl + req.path, headers: req.headers as Record<string, string> });
        return operation?.operationId === undefined ? undefined : options.base64Members?.[operation.operationId];
      },
      verify: (req, raw) => {
        if (raw.length === 0) emptyBodies.add(req);
      },
    }),
  );
  router.use(
    express.json({
      limit: options.bodyLimitBytes,
      type: (req) => {
        const type = req.headers['content-type'];
        return type === undefined || /^application\/json\s*(;|$)/i.test(type);
      },
      verify: (req, _res, raw) => {
        if (raw.length === 0) emptyBodies.add(req);
      },
    }),
  );
  router.use(async (req, res) => {
    if ((req.method === 'POST' || req.method === 'PUT') && req.headers['content-type'] && !/^application\/json\s*(;|$)/i.test(req.headers['content-type'])) {
      res.status(415).json(errorBody([{ code: 'UNSUPPORTED_MEDIA_TYPE', message: 'send the body as application/json' }]));
      return;
    }
    try {
      const result = (await api.handleRequest(
        { method: req.method, path: req.baseUrl + req.path, body: emptyBodies.has(req) ? undefined : req.body, query: req.query as Record<string, string>, headers: req.headers as Record<string, string> },
        req,
      )) as HandlerResult;
      res.status(result.status);
      for (const [name, value] of Object.entries(result.headers ?? {})) res.setHeader(name, value);
      res.json(result.body);
    } catch (error) {
      sendError(res, error, options.logger);
    }
  });
  const bodyErrors: ErrorRequestHandler = (error, _req, res, _next) => {
    const err = error as { status?: number; type?: string };
    if (err.status === 413) sendError(res, ApiError.single(413, 'REQUEST_TOO_LARGE', `body larger than ${options.bodyLimitBytes} bytes`), options.logger);
    else if (err.type === 'entity.parse.failed') sendError(res, ApiError.single(400, 'VALIDATION_ERROR', 'body is not valid JSON'), options.logger);
    else sendError(res, error, options.logger);
  };
  router.use(bodyErrors);
  return router;
}

function sendError(res: express.Response, error: unknown, logger: Logger): void {
  if (error instanceof ApiError) {
    for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
    res.status(error.status).json(errorBody(error.items));
    return;
  }
  logger.error({ err: error }, 'interface B request failed');
  res.status(500).json(errorBody([{ code: 'INTERNAL_ERROR', message: 'internal error' }]));
}
