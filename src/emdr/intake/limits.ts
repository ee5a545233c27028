import type { IncomingMessage } from 'node:http';
import { ClientGone, type BodyInspector } from '../../http/json-body.js';
import type { SharedAllowance } from '../../limits/allowance.js';
import type { ClinicAccount } from '../accounts/clients.js';
import { ApiError } from '../errors/errors.js';
import type { AdmitBody, BeforeBody, BodyAdmission } from './router.js';

/**
 * What one clinic account may take of interface B before its body is read: requests per minute
 * (RATE_LIMIT), body bytes per minute (BYTE_QUOTA), both shared by all processes
 * (limits/allowance.ts), and large bodies being read at once (LARGE_BODIES_PER_CLINIC, and
 * LARGE_BODIES_PER_PROCESS for all clinics together), and requests taken in at once (IntakeSlots),
 * so that no clinic can fill another's minute, memory or time.
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

/**
 * Requests of one clinic account whose bodies this process reads, parses, validates and hashes at
 * once. Each such request costs the event loop tens of milliseconds in one piece (a 480 KB
 * RegisterDocument with 21 signatures: ~30 ms); a clinic sending 40 at once put 40 of those pieces
 * ahead of another clinic's request (M2 of docs/hostile.md: its acknowledgement 0.1 → 1 s). With
 * this many at a time, the rest waiting before their bodies are read, another clinic's request
 * waits behind at most this many pieces of each busy clinic.
 */
export const INTAKE_SLOTS_PER_CLINIC = 4;
/**
 * Requests of one clinic waiting for a slot; more are refused at once (429 with Retry-After). A
 * waiting request costs the loop nothing (its body is not read, and BODY_MIN_RATE cuts a connection
 * whose body stalls 10 s), so the queue takes what one client address may have open
 * (MAX_CONNECTIONS_PER_CLIENT's default, 64, less the slots): a clinic's burst from one address
 * waits instead of being refused (16 refused the 30 concurrent requests of the scale-out test and
 * the 40 of the fair-scheduling one).
 */
export const INTAKE_QUEUE_PER_CLINIC = 60;

interface ClinicIntake {
  held: number;
  waiting: Array<(release: () => void) => void>;
}

/**
 * IntakeSlots of every clinic, in this process: the loop's time is this process's, so the count is
 * too (a count shared by all processes would cap a clinic's throughput without sparing any loop).
 */
export class IntakeSlots {
  private readonly clinics = new Map<number, ClinicIntake>();

  constructor(private readonly limits: { perClinic: number; queue: number } = { perClinic: INTAKE_SLOTS_PER_CLINIC, queue: INTAKE_QUEUE_PER_CLINIC }) {}

  /**
   * A slot for `request` of `clinicId`: its release once it has one (in the order asked), 'full' when
   * the clinic's queue is full. A request whose client leaves while it waits gives up its place
   * (ClientGone).
   */
  acquire(clinicId: number, request: IncomingMessage): Promise<() => void> | 'full' {
    let clinic = this.clinics.get(clinicId);
    if (!clinic) {
      clinic = { held: 0, waiting: [] };
      this.clinics.set(clinicId, clinic);
    }
    if (clinic.held < this.limits.perClinic) {
      clinic.held += 1;
      return Promise.resolve(this.releaseOf(clinicId, clinic));
    }
    if (clinic.waiting.length >= this.limits.queue) return 'full';
    const queue = clinic.waiting;
    return new Promise((resolve, reject) => {
      const onClose = () => {
        const at = queue.indexOf(grant);
        if (at >= 0) queue.splice(at, 1);
        reject(new ClientGone());
      };
      const grant = (release: () => void) => {
        request.off('close', onClose);
        resolve(release);
      };
      request.once('close', onClose);
      queue.push(grant);
    });
  }

  /** Requests of every clinic holding a slot (being read and handled), and waiting for one (ehr_gateway_intake_requests). */
  totals(): { reading: number; waiting: number } {
    let reading = 0;
    let waiting = 0;
    for (const clinic of this.clinics.values()) {
      reading += clinic.held;
      waiting += clinic.waiting.length;
    }
    return { reading, waiting };
  }

  /** Requests of `clinicId` holding a slot, and waiting for one (for tests and metrics). */
  load(clinicId: number): { held: number; waiting: number } {
    const clinic = this.clinics.get(clinicId);
    return { held: clinic?.held ?? 0, waiting: clinic?.waiting.length ?? 0 };
  }

  /** The slot's release: it passes to the clinic's next waiting request, or is given back. */
  private releaseOf(clinicId: number, clinic: ClinicIntake): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = clinic.waiting.shift();
      if (next) {
        next(this.releaseOf(clinicId, clinic));
        return;
      }
      clinic.held -= 1;
      if (clinic.held === 0) this.clinics.delete(clinicId);
    };
  }
}

/**
 * Waits for an intake slot of the request's clinic (none needed without one): its release, or 429
 * RATE_LIMIT with Retry-After when the clinic's queue is full, before a byte of the body is read.
 */
async function intakeSlot(intake: IntakeSlots, clinic: ClinicAccount, request: IncomingMessage): Promise<() => void> {
  const slot = intake.acquire(clinic.id, request);
  if (slot === 'full')
    throw new ApiError(
      429,
      [{ code: 'RATE_LIMIT', message: 'too many requests of this clinic account are being taken in at once; retry after the seconds in Retry-After' }],
      { 'Retry-After': '1' },
    );
  const release = await slot;
  // The client left as its turn came: nothing to read.
  if (request.destroyed) {
    release();
    throw new ClientGone();
  }
  return release;
}

function declaredLength(request: IncomingMessage): number | undefined {
  const header = request.headers['content-length'];
  return header === undefined ? undefined : Number(header);
}

/**
 * Admission of a clinic's body before a byte of it is read: a large one needs a slot (429 when the
 * clinic holds LARGE_BODIES_PER_CLINIC, 503 when the process reads LARGE_BODIES_PER_PROCESS), and
 * its bytes are taken from BYTE_QUOTA by its Content-Length (429 RATE_LIMIT with Retry-After), or,
 * without one, ahead of the bytes as they arrive, so a body over the quota is never read whole;
 * then it waits its turn among the clinic's requests (IntakeSlots; 429 when the clinic's queue is
 * full). Every body counts, valid or not.
 */
export function clinicBodyAdmission(bytes: SharedAllowance | undefined, slots: LargeBodySlots, intake: IntakeSlots): AdmitBody {
  return async (_operationId, security, request): Promise<BodyAdmission> => {
    const clinic = clinicOf(security);
    if (clinic === undefined) return {};
    // The refusals that need no waiting first (a large body without a slot, the quota): a request
    // refused would otherwise wait its turn only to be refused, and a queue would spare a greedy
    // clinic's large bodies the 429 that sends them away.
    const admission = await bodyAdmission(bytes, slots, clinic, request);
    const releaseBody = admission.release;
    let releaseIntake: () => void;
    try {
      releaseIntake = await intakeSlot(intake, clinic, request);
    } catch (error) {
      releaseBody?.();
      throw error;
    }
    return {
      ...admission,
      release: () => {
        releaseBody?.();
        releaseIntake();
      },
    };
  };
}

/** The large-body slot and the byte quota of a clinic's body (clinicBodyAdmission). */
async function bodyAdmission(
  bytes: SharedAllowance | undefined,
  slots: LargeBodySlots,
  clinic: ClinicAccount,
  request: IncomingMessage,
): Promise<BodyAdmission> {
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
