import { RETRY_AFTER_SECONDS } from '../../db/database.js';

/** The error object of a JSON-RPC 2.0 response. */
export interface WireError {
  code: number;
  message: string;
  data?: unknown;
}

/**
 * An error a method handler throws on purpose; the envelope puts it on the wire as it is.
 * Its message and data must not carry personal data or secrets.
 */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'RpcError';
  }

  toWire(): WireError {
    return this.data === undefined ? { code: this.code, message: this.message } : { code: this.code, message: this.message, data: this.data };
  }
}

/** The errors of the JSON-RPC 2.0 specification itself. */
export const StandardErrors = {
  parseError: (): WireError => ({ code: -32700, message: 'Parse error' }),
  invalidRequest: (reason: string): WireError => ({ code: -32600, message: 'Invalid Request', data: { reason } }),
  methodNotFound: (method: string): WireError => ({
    code: -32601,
    message: 'Method not found',
    data: { reason: `no method ${method.slice(0, 100)} on this endpoint` },
  }),
  /** A method of the other listener: the reason names the listener it answers on. */
  methodOnOtherListener: (method: string, listener: string): WireError => ({
    code: -32601,
    message: 'Method not found',
    data: { reason: `${method} answers only on ${listener}, not on this one` },
  }),
  invalidParams: (errors: Array<{ path: string; message: string }>): WireError => ({ code: -32602, message: 'Invalid params', data: { errors } }),
  internalError: (): WireError => ({ code: -32603, message: 'Internal error' }),
};

/** A server error of ours (the -32000 to -32099 range): the database cannot be reached right now; not the caller's fault. */
export const serviceUnavailable = (): WireError => ({
  code: -32001,
  message: 'ServiceUnavailable',
  data: { reason: 'service temporarily unavailable; retry later', retryAfter: RETRY_AFTER_SECONDS },
});

/** A server error of ours: the client address sent more than RPC_RATE_LIMIT calls this minute (HTTP 429, before its body was read or its batch judged). */
export const rateLimited = (retryAfter: number): WireError => ({
  code: -32002,
  message: 'RateLimited',
  data: { reason: 'too many calls from this address; retry later', retryAfter },
});
