import type { ClinicAccount } from '../clients.js';
import { ApiError } from '../errors.js';
import type { BeforeBody, BodyRead } from './router.js';

/** A per-clinic allowance per minute (requests, or body bytes): a fixed window kept in this process. */
export class MinuteAllowance {
  private windowStart = 0;
  private used = new Map<number, number>();

  /** `limit` 0: no limit. */
  constructor(private readonly limit: number) {}

  /** Takes `amount` of the clinic's allowance; when that would pass the limit, takes nothing and returns the seconds to wait. */
  take(clientId: number, amount: number): number | undefined {
    if (this.limit === 0) return undefined;
    const now = Date.now();
    const window = Math.floor(now / 60_000) * 60_000;
    if (window !== this.windowStart) {
      this.windowStart = window;
      this.used.clear();
    }
    const used = (this.used.get(clientId) ?? 0) + amount;
    if (used > this.limit) return Math.ceil((window + 60_000 - now) / 1000);
    this.used.set(clientId, used);
    return undefined;
  }
}

/**
 * The per-clinic request rate (RATE_LIMIT), checked once the clinic is known and before its body is
 * read (the router's beforeBody): 429 RATE_LIMIT with Retry-After.
 */
export function clinicRateLimit(perMinute: number): BeforeBody {
  const requests = new MinuteAllowance(perMinute);
  return (_operationId, security) => {
    const clinic = security.Token as ClinicAccount | undefined;
    const wait = clinic === undefined ? undefined : requests.take(clinic.id, 1);
    if (wait !== undefined) throw tooMuch(wait, 'requests');
  };
}

export function tooMuch(wait: number, what: string): ApiError {
  return new ApiError(429, [{ code: 'RATE_LIMIT', message: `too many ${what} this minute; retry after the seconds in Retry-After` }], { 'Retry-After': String(wait) });
}

/**
 * The per-clinic byte quota (BYTE_QUOTA): a body's bytes as read off the wire, counted before it is
 * parsed (the router's bodyRead), so bodies that fail parsing or validation count too: 429 RATE_LIMIT
 * with Retry-After once the minute's bytes would pass the quota.
 */
export function clinicByteQuota(perMinute: number): BodyRead {
  const bytes = new MinuteAllowance(perMinute);
  return (_operationId, security, length) => {
    const clinic = security.Token as ClinicAccount | undefined;
    const wait = clinic === undefined ? undefined : bytes.take(clinic.id, length);
    if (wait !== undefined) throw tooMuch(wait, 'bytes');
  };
}
