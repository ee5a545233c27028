import type { IncomingMessage, ServerResponse } from 'node:http';
import fs from 'node:fs/promises';
import { OpenAPIBackend, type Document, type Operation } from 'openapi-backend';
import { Validator as OpenApi31Validator } from '@seriousme/openapi-schema-validator';
import { parse as parseYaml } from 'yaml';
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { Logger } from '../../logging/logger.js';
import { secondsSince, type Metrics } from '../../metrics/metrics.js';
import { isDatabaseUnavailable, RETRY_AFTER_SECONDS } from '../../db/database.js';
import { BodyRefusal, ClientGone, readBody, refuseBodyByHeaders, type BodyInspector } from '../../http/json-body.js';
import { JsonShapeError, JsonShapeGuard } from '../../http/json-shape.js';
import { clientKey } from '../../http/client-address.js';
import type { ClientShares } from '../../limits/client-shares.js';
import { currentRequest } from '../../logging/request-context.js';
import { sendJson, type HotPath } from '../../http/respond.js';
import { droppedBuffer } from '../../memory/garbage.js';
import { inlineLocalRefs } from '../../validation/inline-refs.js';
import { createJsonSchemaAjv, errorPath, reportedErrors } from '../../validation/json-schema.js';
import { hasLoneSurrogate, textPaths } from '../../validation/text.js';
import { ApiError, errorBody, type ErrorItem } from '../errors/errors.js';
import { parseJsonBody, type KeptMember, type ParsedBody } from './body/base64-member.js';
import { tracer } from '../../tracing/tracing.js';

/** What an operation handler returns (ts-rest style); the router puts it on the wire. */
export interface HandlerResult {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** A request that passed routing, the security schemes, the rate limit and validation. */
export interface OperationRequest {
  operationId: string;
  /** The validated JSON body (a large base64 member replaced, see base64-member.ts). */
  body: unknown;
  /** Path parameters by name. */
  params: Readonly<Record<string, string>>;
  /** Query parameters by name, as strings (validated against the operation's schemas). */
  query: Readonly<Record<string, unknown>>;
  /** Each security scheme's result (the clinic account under Token). */
  security: Readonly<Record<string, unknown>>;
  http: IncomingMessage;
  /** The body's large base64 member (base64Members), when it was kept out of the body as bytes (base64-member.ts). */
  base64Member?: KeptMember;
  /**
   * Waits for the body's next turn of the event loop before a piece of synchronous work on it (a
   * large body's, see LARGE_BODY_TURN_BYTES: its base64 checks, its hash, its storing). Absent for
   * a small body, which goes on at once: even an await of nothing costs a microtask turn, and a
   * 10 KiB acknowledgement took five of them for no wait.
   */
  turn?: () => Promise<void>;
}

/** An operation handler: gets the validated request, returns status and body, or throws ApiError. */
export type OperationHandler = (request: OperationRequest) => Promise<HandlerResult>;

/**
 * Checks one security scheme of the definition from the request's headers, before its body is
 * read. A falsy result fails the scheme (401 UNAUTHENTICATED when no requirement is met); a truthy
 * one is available as `request.security[scheme]`. A throw is not a refusal: an ApiError keeps its
 * status, an unreachable database answers 503, anything else 500.
 */
export type SecurityHandler = (request: IncomingMessage) => Promise<unknown>;

/** Admission after authentication and before the body is read (the rate limit); throws ApiError to refuse. */
export type BeforeBody = (operationId: string, security: Readonly<Record<string, unknown>>, request: IncomingMessage) => void | Promise<void>;

/**
 * What a body is admitted with: a look at each chunk as it arrives (throws to refuse it), what to
 * release once the request is answered, and the turns of the event loop a large body's pieces of
 * synchronous work wait for (LoopTurns, by clinic).
 */
export interface BodyAdmission {
  inspect?: BodyInspector;
  release?: () => void;
  turn?: () => Promise<void>;
}

/**
 * Admission of a body after its headers were checked and before a byte of it is read (the byte
 * quota, the intake slots and bytes); `limitBytes` is the operation's body limit. Throws ApiError to
 * refuse.
 */
export type AdmitBody = (
  operationId: string,
  security: Readonly<Record<string, unknown>>,
  request: IncomingMessage,
  limitBytes: number,
) => Promise<BodyAdmission>;

export interface EmdrRouterOptions {
  /** The OpenAPI document, or the path of specs/openapi.yaml. */
  definition: Document | string;
  handlers: Readonly<Record<string, OperationHandler>>;
  securityHandlers?: Readonly<Record<string, SecurityHandler>>;
  beforeBody?: BeforeBody;
  admitBody?: AdmitBody;
  /** Largest request body: `default`, and per operationId where an operation takes more (RegisterDocument: BODY_LIMIT). */
  bodyLimits: { default: number; byOperation?: Readonly<Record<string, number>> };
  /** Per operationId, a top-level body member of large base64 kept out of the parsed body (see base64-member.ts). */
  base64Members?: Readonly<Record<string, string>>;
  logger: Logger;
  /** Requests, durations and errors per operation (`none`: a path or method the definition lacks). */
  metrics?: Metrics;
  /** Requests of one client address in progress while other addresses are served (CLIENT_REQUESTS_IN_PROGRESS); unset: no such share. */
  clientShares?: ClientShares;
}

/** What the metrics learn of a request: its operation once routed, its error code when it failed. */
interface Answered {
  operation: string;
  errorCode?: string;
}

/** The body limit of every operation but RegisterDocument (specs/openapi.yaml, TooLarge). */
export const SMALL_BODY_LIMIT_BYTES = 64 * 1024;

/**
 * A body of more than this many bytes is parsed, validated and handled in pieces, each waiting for
 * a turn of the event loop (BodyAdmission.turn): a piece of such a body costs about a millisecond
 * per 100 KB, and several bodies' pieces in one iteration held everything else that waited in it.
 * Smaller bodies (every operation's but RegisterDocument's, and most of those) go at once.
 */
export const LARGE_BODY_TURN_BYTES = SMALL_BODY_LIMIT_BYTES;

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

function toErrorItems(errors: readonly ErrorObject[] | null | undefined): ErrorItem[] {
  return reportedErrors(errors).map((error) => ({ code: 'VALIDATION_ERROR', message: error.message ?? 'is invalid', path: errorPath(error) }));
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

/** The operations of the definition on openapi-backend: its router and its validators (Ajv, compiled at start). */
async function createBackend(definition: Document): Promise<OpenAPIBackend> {
  const api = new OpenApi31Backend({
    definition,
    apiRoot: '/',
    // Fail at start on a definition that does not load: in non-strict mode it silently loads no operations.
    strict: true,
    quick: false,
    customizeAjv: (_original, ajvOptions) => createJsonSchemaAjv(ajvOptions) as never,
  });
  await api.init();
  if (Object.keys(definition.paths ?? {}).length > 0 && api.getOperations().length === 0) {
    throw new Error('interface B definition loaded no operations');
  }
  return api;
}

/** What a method and path resolve to, worked out once per method+path (routing is the same for every request). */
type Route =
  | {
      operation: Operation;
      operationId: string;
      schemes: string[];
      requirements: Array<Record<string, unknown>>;
      /** The path's parameters by name (a route is one method and one concrete path). */
      params: Record<string, string>;
      /** The operation's compiled request schemas (openapi-backend's: the body, and the path, query, header and cookie parameters). */
      validators: ReadonlyArray<ValidateFunction>;
    }
  | { refusal: ApiError };

type OperationRoute = Extract<Route, { operation: Operation }>;

/** At most this many distinct method+path resolutions are kept (paths with ids vary without end). */
const ROUTE_CACHE_SIZE = 1024;

function resolveRoute(api: OpenAPIBackend, method: string, path: string): Route {
  const request = { method, path, headers: {} };
  const operation = api.router.matchOperation(request);
  if (operation) {
    if (!hasValidEscapes(path)) return { refusal: ApiError.single(400, 'VALIDATION_ERROR', 'the path has a malformed percent-escape', '/path') };
    const requirements = (operation.security ?? []) as Array<Record<string, unknown>>;
    const operationId = operation.operationId ?? '';
    return {
      operation,
      operationId,
      schemes: [...new Set(requirements.flatMap((requirement) => Object.keys(requirement)))],
      requirements,
      params: api.router.parseRequest(request, operation).params as Record<string, string>,
      validators: (api.validator.getRequestValidatorsForOperation(operationId) ?? []) as ValidateFunction[],
    };
  }
  // RFC 9110: a path that exists answers another method with 405 and the methods it takes.
  const allowed = HTTP_METHODS.filter((candidate) => api.router.matchOperation({ ...request, method: candidate }) !== undefined);
  if (allowed.length === 0) return { refusal: ApiError.single(404, 'NOT_FOUND', 'no such operation') };
  return {
    refusal: new ApiError(405, [{ code: 'METHOD_NOT_ALLOWED', message: 'method not allowed on this path' }], {
      Allow: allowed.map((name) => name.toUpperCase()).join(', '),
    }),
  };
}

/** Interface B, wired once at start: routes cached per method+path, validators compiled, handlers bound. */
class EmdrRouter {
  private readonly routes = new Map<string, Route>();

  constructor(
    private readonly api: OpenAPIBackend,
    private readonly options: EmdrRouterOptions,
  ) {}

  private route(method: string, path: string): Route {
    const key = `${method} ${path}`;
    let route = this.routes.get(key);
    if (!route) {
      route = resolveRoute(this.api, method, path);
      if (this.routes.size >= ROUTE_CACHE_SIZE) this.routes.clear();
      this.routes.set(key, route);
    }
    return route;
  }

  /** Runs the operation's security requirements on the headers (one met is enough): their results, or 401. */
  private async authenticate(route: OperationRoute, req: IncomingMessage): Promise<Record<string, unknown>> {
    const results: Record<string, unknown> = {};
    for (const scheme of route.schemes) results[scheme] = await this.options.securityHandlers?.[scheme]?.(req);
    if (route.requirements.length > 0 && !route.requirements.some((requirement) => Object.keys(requirement).every((scheme) => Boolean(results[scheme])))) {
      throw ApiError.single(401, 'UNAUTHENTICATED', 'unknown clinic account or wrong token (send the headers businessId, user and token)');
    }
    return results;
  }

  /**
   * The operation's JSON body, refused on its headers (415, 413) before it is read, then admitted
   * (AdmitBody: quota, intake slots and bytes) and bounded in shape while it arrives (json-shape.ts);
   * undefined when the operation takes none or none came.
   */
  private async readJsonBody(
    route: OperationRoute,
    security: Readonly<Record<string, unknown>>,
    req: IncomingMessage,
    admission: BodyAdmission,
    read: { raw?: Buffer; turn?: () => Promise<void> },
  ): Promise<ParsedBody> {
    const { operation, operationId } = route;
    if (!operation.requestBody) return { body: undefined };
    const limit = this.options.bodyLimits.byOperation?.[operationId] ?? this.options.bodyLimits.default;
    const refusal = refuseBodyByHeaders(req, limit, { typeRequired: false });
    if (refusal) throw refusalError(refusal);
    Object.assign(admission, await this.options.admitBody?.(operationId, security, req, limit));
    const shape = new JsonShapeGuard();
    const inspect = admission.inspect;
    let parsed: ParsedBody;
    try {
      const raw = await readBody(req, limit, (chunk) => {
        shape.feed(chunk);
        return inspect?.(chunk);
      });
      read.raw = raw;
      if (raw.length > LARGE_BODY_TURN_BYTES && admission.turn) read.turn = admission.turn;
      if (read.turn) await read.turn();
      parsed = await parseJsonBody(raw, this.options.base64Members?.[operationId]);
    } catch (error) {
      if (error instanceof BodyRefusal) throw refusalError(error);
      if (error instanceof JsonShapeError) throw ApiError.single(400, 'VALIDATION_ERROR', error.message, '/requestBody');
      if (error instanceof SyntaxError) throw ApiError.single(400, 'VALIDATION_ERROR', 'body is not valid JSON');
      throw error;
    }
    const { body } = parsed;
    // Every body of the spec is an object.
    if (body !== undefined && typeof body !== 'object') throw ApiError.single(400, 'VALIDATION_ERROR', 'must be a JSON object', '/requestBody');
    // Not Unicode text anywhere in the body: refused before any of it is used (a NUL is the schemas' business).
    const notText = textPaths(body, hasLoneSurrogate);
    if (notText.length > 0) {
      throw new ApiError(
        400,
        notText.map((path) => ({
          code: 'VALIDATION_ERROR' as const,
          message: 'must not contain a lone UTF-16 surrogate (not Unicode text)',
          path: `/requestBody${path === '/' ? '' : path}`,
        })),
      );
    }
    return parsed;
  }

  /**
   * The request against the operation's compiled schemas, as openapi-backend's validateRequest
   * builds their input, without its per-request routing and path parsing (the route has them): 400
   * with every error.
   */
  private validate(route: OperationRoute, req: IncomingMessage, query: Record<string, unknown>, body: unknown): void {
    const parameters: Record<string, unknown> = { path: { ...route.params }, query, header: { ...req.headers }, cookie: {} };
    const contentType = String(req.headers['content-type'] ?? '')
      .split(';')[0]!
      .trim()
      .toLowerCase();
    if (typeof body === 'object' || contentType === 'application/json') parameters.requestBody = body;
    // Bounded by the body's shape (json-shape.ts); only the first MAX_REPORTED_ERRORS are answered.
    const errors: ErrorObject[] = [];
    for (const validate of route.validators) {
      validate(parameters);
      for (const error of validate.errors ?? []) errors.push(error);
    }
    if (errors.length > 0) throw new ApiError(400, toErrorItems(errors));
  }

  /**
   * Before a byte of a body is read: the route (404, 405), the clinic's headers (401), the rate
   * limit (429), the body's encoding and type (415) and declared length (413), then its admission:
   * the byte quota (429) and its turn among the clinic's requests (429 when too many wait). While it is read: its shape (400) and,
   * without a Content-Length, the byte quota again.
   */
  async answer(req: IncomingMessage, res: ServerResponse, answered?: Answered): Promise<void> {
    const url = req.url ?? '/';
    const queryAt = url.indexOf('?');
    const path = queryAt < 0 ? url : url.slice(0, queryAt);
    const route = this.route(req.method ?? 'GET', path);
    if ('refusal' in route) throw route.refusal;
    if (answered) answered.operation = route.operationId;
    // The request's span (http/request-span.ts) is named by its operation.
    if (tracer().enabled) {
      const span = tracer().current();
      span.rename(route.operationId);
      span.setAttributes({ 'ehr_gateway.operation': route.operationId });
    }
    const security = await this.authenticate(route, req);
    await this.options.beforeBody?.(route.operationId, security, req);
    const admission: BodyAdmission = {};
    const read: { raw?: Buffer; turn?: () => Promise<void> } = {};
    let result: HandlerResult;
    try {
      const { body, member } = await this.readJsonBody(route, security, req, admission, read);
      const turn = read.turn;
      const query = queryAt < 0 ? {} : this.api.router.parseRequestQuery({ method: req.method ?? 'GET', path: url, headers: {} });
      if (turn) await turn();
      this.validate(route, req, query, body);
      const handler = this.options.handlers[route.operationId];
      if (!handler) throw ApiError.single(501, 'NOT_IMPLEMENTED', `operation ${route.operationId} is not implemented`);
      result = await handler({
        operationId: route.operationId,
        body,
        params: route.params,
        query,
        security,
        http: req,
        base64Member: member,
        turn,
      });
    } finally {
      // A large body (a document) is garbage once handled: freed at once rather than while the workers take the document on.
      if (read.raw) droppedBuffer(read.raw);
      // A body's intake place and bytes are held until it was handled (stored): its memory is theirs.
      admission.release?.();
    }
    sendJson(res, result.status, result.body, result.headers);
  }
}

/**
 * Interface B on openapi-backend: routing and request validation come from specs/openapi.yaml
 * (OpenAPI 3.1, validated with Ajv's draft 2020-12 and formats, compiled once at start); the route of
 * a method and path is resolved once and kept. It takes every path under /api (as Express's mount
 * did: any case, with or without more path), on node's own request and response. Every error,
 * thrown or from validation, leaves in the one shape of errors.ts.
 */
export async function createEmdrRouter(options: EmdrRouterOptions): Promise<HotPath> {
  const router = new EmdrRouter(await createBackend(await loadDefinition(options.definition)), options);
  const shares = options.clientShares;
  // Nothing of a request is read or looked up before its address's share admits it.
  const answer = (req: IncomingMessage, res: ServerResponse, answered?: Answered): Promise<void> => {
    if (!shares) return router.answer(req, res, answered);
    const entered = shares.enter(clientKey(currentRequest()?.clientAddress ?? req.socket.remoteAddress));
    if (typeof entered === 'function') return router.answer(req, res, answered).finally(entered);
    // A client that gave up while it waited costs nothing more: not even its account's lookup.
    return entered.then((release) => {
      if (req.socket.destroyed) {
        release();
        throw new ClientGone();
      }
      return router.answer(req, res, answered).finally(release);
    });
  };
  return (req, res) => {
    const url = req.url ?? '';
    if (url.slice(0, 4).toLowerCase() !== '/api' || (url.length > 4 && url[4] !== '/' && url[4] !== '?')) return false;
    const metrics = options.metrics;
    if (!metrics) {
      answer(req, res).catch((error: unknown) => sendError(res, error, options.logger));
      return true;
    }
    const started = process.hrtime.bigint();
    const answered: Answered = { operation: 'none' };
    answer(req, res, answered)
      .catch((error: unknown) => (answered.errorCode = sendError(res, error, options.logger)))
      .finally(() => metrics.apiRequest(answered.operation, res.statusCode, secondsSince(started), answered.errorCode));
    return true;
  };
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

/** Puts the error on the wire; returns its code (undefined when nothing could be sent). */
function sendError(res: ServerResponse, error: unknown, logger: Logger): string | undefined {
  if (error instanceof ClientGone || res.headersSent) return undefined;
  if (error instanceof ApiError) {
    sendJson(res, error.status, errorBody(error.items), error.headers);
    return error.items[0]?.code;
  }
  if (isDatabaseUnavailable(error)) {
    logger.warn({ code: (error as { code?: unknown }).code }, 'interface B: database unavailable');
    sendJson(res, 503, errorBody([{ code: 'SERVICE_UNAVAILABLE', message: 'the service cannot reach its database; retry after the seconds in Retry-After' }]), {
      'Retry-After': String(RETRY_AFTER_SECONDS),
    });
    return 'SERVICE_UNAVAILABLE';
  }
  logger.error({ err: error }, 'interface B request failed');
  sendJson(res, 500, errorBody([{ code: 'INTERNAL_ERROR', message: 'internal error' }]));
  return 'INTERNAL_ERROR';
}
