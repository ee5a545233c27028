import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';

/**
 * The request an asynchronous flow serves: set by the listener for each HTTP request, read by the
 * logger (every log line of the request names its id) and by the audit trail. AsyncLocalStorage
 * follows the request through its awaits, database calls included.
 */
export interface RequestContext {
  /** The gateway's own id of the request: a new UUID for every request, whatever the client sent. */
  requestId: string;
  /** The client's own x-request-id, when it sent a sane one: echoed on the answer, kept apart from requestId. */
  clientRequestId?: string;
  /** The TCP peer's address. */
  clientAddress?: string;
}

const storage = new AsyncLocalStorage<RequestContext>();

/** A client's x-request-id is kept when it is a sane token: no spaces, quotes or control characters, at most 128 characters. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._~:/+=-]{1,128}$/;

/** The client's x-request-id when it is a sane token. */
export function clientRequestIdFrom(header: string | string[] | undefined): string | undefined {
  return typeof header === 'string' && SANE_REQUEST_ID.test(header) ? header : undefined;
}

/** A request's context: a new request id, the client's own id and address. */
export function newRequestContext(header: string | string[] | undefined, clientAddress: string | undefined): RequestContext {
  const clientRequestId = clientRequestIdFrom(header);
  return { requestId: randomUUID(), ...(clientRequestId === undefined ? {} : { clientRequestId }), ...(clientAddress === undefined ? {} : { clientAddress }) };
}

/** The id a client sees on the answer (x-request-id) and on a callback the request leads to: its own when it sent one. */
export function visibleRequestId(context: RequestContext): string {
  return context.clientRequestId ?? context.requestId;
}

/** Runs `work` as part of the request of `context`. */
export function runInRequest<R>(context: RequestContext, work: () => R): R {
  return storage.run(context, work);
}

export function currentRequest(): RequestContext | undefined {
  return storage.getStore();
}

/** The gateway's id of the request being served, if any. */
export function currentRequestId(): string | undefined {
  return storage.getStore()?.requestId;
}
