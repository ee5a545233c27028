import type { OpenrpcDocument, MethodObject, ContentDescriptorObject } from '@open-rpc/schema-utils-js/build/types.js';
import type { ValidateFunction, ErrorObject } from 'ajv/dist/2020.js';
import type { Logger } from '../../logging/logger.js';
import { secondsSince, type Metrics } from '../../metrics/metrics.js';
import { createJsonSchemaAjv, errorPath, reportedErrors } from '../../validation/json-schema.js';
import { isDatabaseUnavailable } from '../../db/database.js';
import { UNSTORABLE_TEXT, unstorableTextPaths } from '../../validation/text.js';
import { RpcError, serviceUnavailable, StandardErrors, type WireError } from './errors.js';
import { tracer } from '../../tracing/tracing.js';

export const MAX_BATCH_SIZE = 100;

/** Which listener a call came in on: internal methods answer only on the internal channel. */
export type Channel = 'public' | 'internal';

/** Where each channel's methods answer, for a call that came to the other listener. */
const LISTENER_OF: Record<Channel, string> = {
  public: 'the public listener (PORT, default 8080)',
  internal: 'the internal listener (INTERNAL_PORT, default 8081), for the authorization server',
};

/** Methods tagged with this name in the OpenRPC document belong to the internal channel. */
export const INTERNAL_TAG = 'internal-channel';

export interface Credentials {
  user: string;
  token: string;
}

export interface CallContext {
  cred: Credentials | undefined;
  /** The envelope's apiKey (a back-office key of the medical record's methods), when it is a string. */
  apiKey?: string;
  channel: Channel;
  /** The peer's address on the connection the call came in on. */
  clientAddress: string;
}

/** A method implementation: named params in, result out; throws RpcError for application errors. */
export type MethodHandler = (params: Record<string, unknown>, context: CallContext) => Promise<unknown>;

type Id = string | number | null;

interface Response {
  jsonrpc: '2.0';
  id: Id;
  result?: unknown;
  error?: WireError;
}

/** What the HTTP route sends: a JSON body, nothing at all (a notification or a batch of them), or a refusal of the batch's rate. */
export type EnvelopeOutcome = { body: Response | Response[] } | { body: undefined } | { retryAfterSeconds: number };

/** Admits the calls of a batch beyond its first (RPC_RATE_LIMIT): undefined when admitted, else the seconds to wait. */
export type AdmitCalls = (calls: number) => Promise<number | undefined>;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isValidId(value: unknown): value is Id {
  return value === null || typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));
}

function toPaths(errors: ErrorObject[] | null | undefined): Array<{ path: string; message: string }> {
  return reportedErrors(errors).map((error) => ({ path: errorPath(error), message: error.message ?? 'is invalid' }));
}

/**
 * The JSON-RPC 2.0 envelope of interface A: parse errors, invalid requests, notifications,
 * batches and dispatch are handled here; every error, thrown or returned, is mapped to the wire
 * here and nowhere else. (Dispatch is ours: @open-rpc/server-js's Router would load its
 * transports and a mock data generator into the service for a map lookup.)
 */
export class RpcEnvelope {
  private readonly handlers = new Map<string, MethodHandler>();
  private readonly paramValidators = new Map<string, { validate: ValidateFunction; names: string[] }>();
  private readonly credValidator: ValidateFunction;
  private readonly methodChannel = new Map<string, Channel>();

  /** `document` must be dereferenced (no $ref): its param schemas are compiled as they are. */
  constructor(
    private readonly document: OpenrpcDocument,
    handlers: Readonly<Record<string, MethodHandler>>,
    private readonly logger: Logger,
    private readonly metrics?: Metrics,
  ) {
    const ajv = createJsonSchemaAjv();
    for (const method of document.methods as MethodObject[]) {
      const handler = handlers[method.name];
      if (!handler) throw new Error(`OpenRPC method ${method.name} has no handler`);
      const params = method.params as ContentDescriptorObject[];
      const names = params.map((param) => param.name);
      this.paramValidators.set(method.name, {
        names,
        validate: ajv.compile({
          type: 'object',
          properties: Object.fromEntries(params.map((param) => [param.name, param.schema])),
          required: params.filter((param) => param.required).map((param) => param.name),
        }),
      });
      const internal = (method.tags ?? []).some((tag) => 'name' in tag && tag.name === INTERNAL_TAG);
      this.methodChannel.set(method.name, internal ? 'internal' : 'public');
      this.handlers.set(method.name, handler);
    }
    for (const name of Object.keys(handlers)) {
      if (!this.methodChannel.has(name)) throw new Error(`handler ${name} is not a method of the OpenRPC document`);
    }
    this.credValidator = ajv.compile({
      type: 'object',
      required: ['user', 'token'],
      properties: { user: { type: 'string' }, token: { type: 'string' } },
    });
  }

  /** Handles one HTTP request body, already read as text; `admitCalls` admits a batch's calls beyond the first before any is judged. */
  async handle(text: string, channel: Channel, clientAddress: string, admitCalls?: AdmitCalls): Promise<EnvelopeOutcome> {
    let payload: unknown;
    try {
      payload = JSON.parse(text);
    } catch {
      return { body: errorResponse(null, StandardErrors.parseError()) };
    }
    if (Array.isArray(payload)) {
      if (payload.length === 0) return { body: errorResponse(null, StandardErrors.invalidRequest('empty batch')) };
      if (payload.length > MAX_BATCH_SIZE) {
        return { body: errorResponse(null, StandardErrors.invalidRequest(`batch of more than ${MAX_BATCH_SIZE} calls`)) };
      }
      const wait = payload.length > 1 ? await admitCalls?.(payload.length - 1) : undefined;
      if (wait !== undefined) return { retryAfterSeconds: wait };
      const responses: Response[] = [];
      // Sequential on purpose: calls of one batch often depend on each other's effects.
      for (const call of payload) {
        const response = await this.handleCall(call, channel, clientAddress);
        if (response) responses.push(response);
      }
      return { body: responses.length > 0 ? responses : undefined };
    }
    const response = await this.handleCall(payload, channel, clientAddress);
    return { body: response };
  }

  /** One call answered, counted in the metrics by its method (`unknown` for a name the document lacks, `invalid` for no call at all). */
  private async handleCall(raw: unknown, channel: Channel, clientAddress: string): Promise<Response | undefined> {
    if (!this.metrics) return (await this.answerCall(raw, channel, clientAddress)).response;
    const started = process.hrtime.bigint();
    const { method, response, errorCode } = await this.answerCall(raw, channel, clientAddress);
    this.metrics.rpcCall(method, secondsSince(started), errorCode);
    return response;
  }

  private async answerCall(
    raw: unknown,
    channel: Channel,
    clientAddress: string,
  ): Promise<{ method: string; response: Response | undefined; errorCode?: number }> {
    const invalid = (id: Id, error: WireError) => ({ method: 'invalid', response: errorResponse(id, error), errorCode: error.code });
    if (!isPlainObject(raw)) return invalid(null, StandardErrors.invalidRequest('a call must be an object'));
    const call = withoutNullMembers(raw);
    const id = isValidId(call.id) ? call.id : null;
    const isNotification = !('id' in call);
    const problem = describeInvalidCall(call);
    if (problem) return invalid(id, StandardErrors.invalidRequest(problem));
    if (call.cred !== undefined && (!this.credValidator(call.cred) || unstorableTextPaths(call.cred).length > 0)) {
      return invalid(id, StandardErrors.invalidRequest('cred must be an object with string user and token, without NUL characters or lone surrogates'));
    }

    if (call.apiKey !== undefined && (typeof call.apiKey !== 'string' || call.apiKey.length > 256))
      return invalid(id, StandardErrors.invalidRequest('apiKey must be a string of at most 256 characters'));

    const method = call.method as string;
    const label = method === 'rpc.discover' || this.handlers.has(method) ? method : 'unknown';
    const context: CallContext = {
      cred: call.cred as Credentials | undefined,
      channel,
      clientAddress,
      ...(call.apiKey === undefined ? {} : { apiKey: call.apiKey as string }),
    };
    const dispatched = () => this.dispatch(method, call.params, context);
    const outcome = tracer().enabled ? await tracedCall(label, dispatched) : await dispatched();
    const errorCode = 'error' in outcome ? outcome.error.code : undefined;
    if (isNotification) return { method: label, response: undefined, errorCode };
    return { method: label, response: 'error' in outcome ? errorResponse(id, outcome.error) : { jsonrpc: '2.0', id, result: outcome.result }, errorCode };
  }

  private async dispatch(method: string, rawParams: unknown, context: CallContext): Promise<{ result: unknown } | { error: WireError }> {
    if (method === 'rpc.discover') return { result: this.document };
    const validator = this.paramValidators.get(method);
    if (!validator) return { error: StandardErrors.methodNotFound(method) };
    const channel = this.methodChannel.get(method)!;
    if (channel !== context.channel) return { error: StandardErrors.methodOnOtherListener(method, LISTENER_OF[channel]) };
    const params = rawParams ?? {};
    if (Array.isArray(params)) {
      // By-position params are mapped to names so that one validator and one handler signature serve both.
      if (params.length > validator.names.length) {
        return { error: StandardErrors.invalidParams([{ path: '/', message: `takes at most ${validator.names.length} params` }]) };
      }
      return this.validateAndCall(method, validator, Object.fromEntries(params.map((value, index) => [validator.names[index], value])), context);
    }
    return this.validateAndCall(method, validator, params as Record<string, unknown>, context);
  }

  private async validateAndCall(
    method: string,
    validator: { validate: ValidateFunction; names: string[] },
    params: Record<string, unknown>,
    context: CallContext,
  ): Promise<{ result: unknown } | { error: WireError }> {
    const unstorable = unstorableTextPaths(params);
    if (unstorable.length > 0) return { error: StandardErrors.invalidParams(unstorable.map((path) => ({ path, message: UNSTORABLE_TEXT }))) };
    if (!validator.validate(params)) return { error: StandardErrors.invalidParams(toPaths(validator.validate.errors)) };
    // Only the params the method declares reach the handler (unknown members are ignored).
    const named = Object.fromEntries(validator.names.filter((name) => params[name] !== undefined).map((name) => [name, params[name]]));
    try {
      return { result: await this.handlers.get(method)!(named, context) };
    } catch (error) {
      return { error: this.toWireError(method, error) };
    }
  }

  private toWireError(method: string, error: unknown): WireError {
    if (error instanceof RpcError) return error.toWire();
    if (isDatabaseUnavailable(error)) {
      this.logger.warn({ method, code: (error as { code?: unknown }).code }, 'JSON-RPC method: database unavailable');
      return serviceUnavailable();
    }
    this.logger.error({ method, err: error }, 'JSON-RPC method failed');
    return StandardErrors.internalError();
  }
}

/**
 * A member whose value is null counts as absent (the peer SDK sends "cred": null, "apiKey": null),
 * except `id`, where null keeps its JSON-RPC meaning: a request, not a notification.
 */
function withoutNullMembers(call: Record<string, unknown>): Record<string, unknown> {
  for (const name in call) {
    if (call[name] === null && name !== 'id') return Object.fromEntries(Object.entries(call).filter(([member, value]) => value !== null || member === 'id'));
  }
  return call;
}

function describeInvalidCall(call: Record<string, unknown>): string | undefined {
  if (call.jsonrpc !== '2.0') return 'jsonrpc must be exactly "2.0"';
  if (typeof call.method !== 'string' || call.method === '') return 'method must be a non-empty string';
  if ('id' in call && !isValidId(call.id)) return 'id must be a string, a number or null';
  if ('params' in call && typeof call.params !== 'object') return 'params must be an object or an array';
  return undefined;
}

function errorResponse(id: Id, error: WireError): Response {
  return { jsonrpc: '2.0', id, error };
}

/** A call's span (a child of its request's), named by its method: a batch's calls are told apart. */
function tracedCall(
  method: string,
  dispatched: () => Promise<{ result: unknown } | { error: WireError }>,
): Promise<{ result: unknown } | { error: WireError }> {
  return tracer().inSpan(method, { attributes: { 'rpc.system': 'jsonrpc', 'rpc.method': method } }, async (span) => {
    const outcome = await dispatched();
    if ('error' in outcome) {
      span.setAttributes({ 'rpc.jsonrpc.error_code': outcome.error.code });
      span.fail(String(outcome.error.code));
    }
    return outcome;
  });
}
