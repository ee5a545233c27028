import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';

/**
 * The request an asynchronous flow serves: set by the listener for each HTTP request, read by the
 * logger (every log line of the request names its id) and by the audit trail. AsyncLocalStorage
 * follows the request through its awaits, database calls included.
 */
export interface RequestContext {
  requestId: string;
}

const storage = new AsyncLocalStorage<RequestContext>();

/** A client's x-request-id is kept when it is a sane token: no spaces, quotes or control characters, at most 128 characters. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._~:/+=-]{1,128}$/;

/** The client's x-request-id when it is a sane token, else a new UUID. */
export function requestIdFrom(header: string | string[] | undefined): string {
  return typeof header === 'string' && SANE_REQUEST_ID.test(header) ? header : randomUUID();
}

/** Runs `work` as part of the request `requestId`. */
export function runInRequest<R>(requestId: string, work: () => R): R {
  return storage.run({ requestId }, work);
}

/** The id of the request being served, if any. */
export function currentRequestId(): string | undefined {
  return storage.getStore()?.requestId;
}
