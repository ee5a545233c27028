import type { ErrorCode } from './codes.js';

/** One entry of interface B's error shape; `code` is one of codes.ts (classifier 1.2.643.5.1.13.13.99.2.305 or the gateway's own). */
export interface ErrorItem {
  code: ErrorCode;
  message: string;
  path?: string;
}

/** The only error body interface B sends: `{status: "Error", errors: [...]}`. */
export function errorBody(items: readonly ErrorItem[]): { status: 'Error'; errors: ErrorItem[] } {
  return { status: 'Error', errors: [...items] };
}

/** An error a handler throws on purpose; the router maps it to its HTTP status and the error shape. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly items: readonly ErrorItem[],
    /** Extra response headers, e.g. Retry-After on 429. */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(items.map((item) => `${item.code}: ${item.message}`).join('; '));
    this.name = 'ApiError';
  }

  static single(status: number, code: ErrorCode, message: string, path?: string): ApiError {
    return new ApiError(status, [path === undefined ? { code, message } : { code, message, path }]);
  }
}
