import type { IncomingMessage } from 'node:http';
import type { BodyInspector } from '../../http/json-body.js';
import type { SharedAllowance } from '../../limits/allowance.js';
import type { ClinicAccount } from '../accounts/clients.js';
import { ApiError } from '../errors/errors.js';
import type { AdmitBody, BeforeBody, BodyAdmission } from './router.js';

/**
 * What one clinic account may take of interface B before its body is read: requests per minute
 * (RATE_LIMIT), body bytes per minute (BYTE_QUOTA), both shared by all processes
 * (limits/allowance.ts), and large bodies being read at once (LARGE_BODIES_PER_CLINIC, and
 * LARGE_BODIES_PER_PROCESS for all clinics together), so that no clinic can fill another's minute,
 * memory or time.
 */

/** A body above this is large: it is read only with a slot of LargeBodySlots. A body without Content-Length counts as large. */
export const LARGE_BODY_BYTES = 1024 * 1024;
/** BYTE_QUOTA is counted in KiB (the shared counters hold whole points). */
export const QUOTA_UNIT_BYTES = 1024;
/** A body without Content-Length reserves its quota this much ahead as it arrives. */
const CHUNKED_RESERVE_KIB = 256;

const clinicOf = (security: Readonly<Record<string, unknown>>) => security.Token as ClinicAccount | undefined;

/** Seconds for Retry-After: at least 1. */
const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

export function tooMuch(waitMs: number, what: string): ApiError {
  return new ApiError(429, [{ code: 'RATE_LIMIT', message: `too many ${what} this minute; retry after the seconds in Retry-After` }], {
    'Retry-After': String(seconds(waitMs)),
  });
}

/** The per-clinic request rate (RATE_LIMIT), checked once the clinic is known and before its body is read: 429 RATE_LIMIT with Retry-After. */
export function clinicRateLimit(requests: SharedAllowance): BeforeBody {
  return async (_operationId, security) => {
    const clinic = clinicOf(security);
    const wait = clinic === undefined ? undefined : await requests.take(String(clinic.id), 1);
    if (wait !== undefined) throw tooMuch(wait, 'requests');
  };
}

/** Large bodies being read at once, per clinic account and in this process (memory: at most perProcess × BODY_LIMIT). */
export class LargeBodySlots {
  private total = 0;
  private readonly perClinic = new Map<number, number>();

  constructor(private readonly limits: { perClinic: number; perProcess: number }) {}

  /** A slot for a body of `clinicId`: its release, or why there is none. */
  acquire(clinicId: number): (() => void) | 'clinic' | 'process' {
    const held = this.perClinic.get(clinicId) ?? 0;
    if (held >= this.limits.perClinic) return 'clinic';
    if (this.total >= this.limits.perProcess) return 'process';
    this.total += 1;
    this.perClinic.set(clinicId, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total -= 1;
      const left = (this.perClinic.get(clinicId) ?? 1) - 1;
      if (left <= 0) this.perClinic.delete(clinicId);
      else this.perClinic.set(clinicId, left);
    };
  }
}

function declaredLength(request: IncomingMessage): number | undefined {
  const header = request.headers['content-length'];
  return header === undefined ? undefined : Number(header);
}

/**
 * Admission of a clinic's body before a byte of it is read: a large one needs a slot (429 when the
 * clinic holds LARGE_BODIES_PER_CLINIC, 503 when the process reads LARGE_BODIES_PER_PROCESS), and
 * its bytes are taken from BYTE_QUOTA by its Content-Length (429 RATE_LIMIT with Retry-After), or,
 * without one, ahead of the bytes as they arrive, so a body over the quota is never read whole.
 * Every body counts, valid or not.
 */
export function clinicBodyAdmission(bytes: SharedAllowance | undefined, slots: LargeBodySlots): AdmitBody {
  return async (_operationId, security, request): Promise<BodyAdmission> => {
    const clinic = clinicOf(security);
    if (clinic === undefined) return {};
    const declared = declaredLength(request);
    let release: (() => void) | undefined;
    if (declared === undefined || declared > LARGE_BODY_BYTES) {
      const slot = slots.acquire(clinic.id);
      if (slot === 'clinic')
        throw new ApiError(
          429,
          [{ code: 'RATE_LIMIT', message: 'too many large bodies of this clinic account are being read at once; retry after the seconds in Retry-After' }],
          { 'Retry-After': '1' },
        );
      if (slot === 'process')
        throw new ApiError(
          503,
          [{ code: 'SERVICE_UNAVAILABLE', message: 'the service is reading as many large bodies as it takes at once; retry after the seconds in Retry-After' }],
          { 'Retry-After': '1' },
        );
      release = slot;
    }
    try {
      if (!bytes) return release ? { release } : {};
      const key = String(clinic.id);
      if (declared !== undefined) {
        const wait = await bytes.take(key, Math.ceil(declared / QUOTA_UNIT_BYTES));
        if (wait !== undefined) throw tooMuch(wait, 'bytes');
        return release ? { release } : {};
      }
      return { ...(release ? { release } : {}), inspect: reserveAhead(bytes, key) };
    } catch (error) {
      release?.();
      throw error;
    }
  };
}

/** For a body without Content-Length: its quota taken CHUNKED_RESERVE_KIB ahead of what arrived; a refusal stops the reading. */
function reserveAhead(bytes: SharedAllowance, key: string): BodyInspector {
  let receivedBytes = 0;
  let reservedKib = 0;
  const reserve = async (step: number) => {
    const wait = await bytes.take(key, step);
    if (wait !== undefined) throw tooMuch(wait, 'bytes');
    reservedKib += step;
  };
  // Synchronous while the reservation covers the bytes: reading holds only when more must be taken.
  return (chunk) => {
    receivedBytes += chunk.length;
    const needed = Math.ceil(receivedBytes / QUOTA_UNIT_BYTES);
    if (needed <= reservedKib) return undefined;
    return reserve(Math.max(needed - reservedKib, CHUNKED_RESERVE_KIB));
  };
}
