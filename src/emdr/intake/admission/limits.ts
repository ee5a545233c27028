import type { IncomingMessage } from 'node:http';
import { ClientGone, type BodyInspector } from '../../../http/json-body.js';
import { holdBody } from '../../../http/listener.js';
import type { SharedAllowance } from '../../../limits/allowance.js';
import type { LoopTurns } from '../../../work/loop-turns.js';
import type { ClinicAccount } from '../../accounts/clients.js';
import { ApiError } from '../../errors/errors.js';
import type { AdmitBody, BeforeBody, BodyAdmission } from '../router.js';
import type { RefusalPacer } from '../../../http/refusal-pacing.js';

/**
 * What one clinic account may take of interface B before its body is read: requests per minute
 * (RATE_LIMIT), body bytes per minute (BYTE_QUOTA), both shared by all processes
 * (limits/allowance.ts), and, in this process, requests and body bytes taken in at once
 * (IntakeSlots: INTAKE_SLOTS_PER_CLINIC, BODY_BYTES_IN_FLIGHT_PER_CLINIC, and
 * BODY_BYTES_IN_FLIGHT_PER_PROCESS for all clinics together), so that no clinic can fill another's
 * minute, memory or time.
 */

/**
 * A body of at most this many bytes is small: it is taken in even when the process's bodies fill
 * BODY_BYTES_IN_FLIGHT_PER_PROCESS (and counted), so that no clinic's small request waits for other
 * clinics' documents to be stored. What it can add is bounded by the intake slots: at most
 * INTAKE_SLOTS_PER_CLINIC of them per clinic.
 */
export const SMALL_BODY_BYTES = 1024 * 1024;
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

/**
 * The 429s of a clinic account are paced (http/refusal-pacing.ts): past 20 a second, each further
 * one is held a while before it is answered, its body unread. Answered at once, a client that does
 * not wait its Retry-After asks again at once: beside the M4 abuser (64 connections sending 24 MiB
 * bodies back to back) the gateway refused 600–900 requests a second, each a connection accepted,
 * answered and closed with its body's bytes in the buffers (an account lookup each: caching the
 * lookups for a few seconds, tried, left the abuser only coming back faster, at 71% of the loop).
 * Counted per authenticated account: never per client address (clinics behind one proxy share it)
 * nor per claimed account (anyone could get a victim held).
 */
async function refuseClinic(pacer: RefusalPacer, clinic: ClinicAccount, error: ApiError): Promise<never> {
  await pacer.pace(`clinic ${clinic.id}`);
  throw error;
}

/** The per-clinic request rate (RATE_LIMIT), checked once the clinic is known and before its body is read: 429 RATE_LIMIT with Retry-After (paced). */
export function clinicRateLimit(requests: SharedAllowance, pacer: RefusalPacer): BeforeBody {
  return async (_operationId, security) => {
    const clinic = clinicOf(security);
    if (clinic === undefined) return;
    const wait = await requests.take(String(clinic.id), 1);
    if (wait !== undefined) await refuseClinic(pacer, clinic, tooMuch(wait, 'requests'));
  };
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
 * waiting request costs the loop nothing (its body is not read; BODY_MIN_RATE does not count the
 * wait, REQUEST_TIMEOUT does), so the queue takes what one client address may have open
 * (MAX_CONNECTIONS_PER_CLIENT's default, 64, less the slots): a clinic's burst from one address
 * waits instead of being refused (16 refused the 30 concurrent requests of the scale-out test and
 * the 40 of the fair-scheduling one).
 */
export const INTAKE_QUEUE_PER_CLINIC = 60;

export interface IntakeLimits {
  /** Requests of a clinic taken in at once (INTAKE_SLOTS_PER_CLINIC). */
  perClinic: number;
  /** Requests of a clinic waiting (INTAKE_QUEUE_PER_CLINIC). */
  queue: number;
  /** Body bytes of a clinic taken in at once (BODY_BYTES_IN_FLIGHT_PER_CLINIC): at least the largest body. */
  clinicBytes: number;
  /** Body bytes of every clinic taken in at once (BODY_BYTES_IN_FLIGHT_PER_PROCESS): at least clinicBytes. */
  processBytes: number;
}

interface ClinicIntake {
  held: number;
  heldBytes: number;
  /** Its requests in `IntakeSlots.queue`. */
  waiting: number;
}

/** A request waiting to be taken in, with the bytes its body reserves. */
interface Waiter {
  clinic: ClinicIntake;
  clinicId: number;
  bytes: number;
  grant(release: () => void): void;
}

/**
 * The intake of every clinic, in this process: a request is taken in (its body read, parsed,
 * validated, hashed and stored) while its clinic holds fewer than `perClinic` requests and its
 * body's bytes fit the clinic's `clinicBytes` and the process's `processBytes` (a small body, at
 * most SMALL_BODY_BYTES, fits the process always); otherwise it waits, body unread, in the order it
 * came. A clinic's request never passes an earlier one of the same clinic, and a large body never
 * passes an earlier large body waiting for the process's bytes (so a 32 MiB body is not starved by
 * smaller ones), but nothing waits for another clinic's limits. The loop's time and the memory are
 * this process's, so the counts are too (a count shared by all processes would cap a clinic's
 * throughput without sparing any loop).
 */
export class IntakeSlots {
  private readonly clinics = new Map<number, ClinicIntake>();
  /** Every waiting request, in the order it came. */
  private readonly queue: Waiter[] = [];
  private heldBytes = 0;

  constructor(private readonly limits: IntakeLimits) {}

  /**
   * A place for `request` of `clinicId`, whose body reserves `bytes`: its release once taken in (in
   * the order asked), 'full' when the clinic's queue is full. A request whose client leaves while it
   * waits gives up its place (ClientGone).
   */
  acquire(clinicId: number, request: IncomingMessage, bytes: number): Promise<() => void> | 'full' {
    let clinic = this.clinics.get(clinicId);
    if (!clinic) {
      clinic = { held: 0, heldBytes: 0, waiting: 0 };
      this.clinics.set(clinicId, clinic);
    }
    if (clinic.waiting >= this.limits.queue) return 'full';
    const intake = clinic;
    return new Promise((resolve, reject) => {
      // A client is not cut off as too slow (BODY_MIN_RATE) for the time its body waits here unread.
      const unhold = holdBody(request);
      const waiter: Waiter = {
        clinic: intake,
        clinicId,
        bytes,
        grant: (release) => {
          unhold();
          request.off('close', onClose);
          resolve(release);
        },
      };
      const onClose = () => {
        const at = this.queue.indexOf(waiter);
        if (at < 0) return;
        unhold();
        this.queue.splice(at, 1);
        intake.waiting -= 1;
        this.forget(clinicId, intake);
        // A waiter gone from a queue's head may let those behind it in.
        this.admit();
        reject(new ClientGone());
      };
      request.once('close', onClose);
      this.queue.push(waiter);
      intake.waiting += 1;
      this.admit();
    });
  }

  /** Requests of every clinic taken in (being read and handled) and waiting, and the body bytes taken in (ehr_gateway_intake_*). */
  totals(): { reading: number; waiting: number; bytes: number } {
    let reading = 0;
    for (const clinic of this.clinics.values()) reading += clinic.held;
    return { reading, waiting: this.queue.length, bytes: this.heldBytes };
  }

  /** Requests of `clinicId` taken in and waiting, and its body bytes taken in (for tests and metrics). */
  load(clinicId: number): { held: number; waiting: number; bytes: number } {
    const clinic = this.clinics.get(clinicId);
    return { held: clinic?.held ?? 0, waiting: clinic?.waiting ?? 0, bytes: clinic?.heldBytes ?? 0 };
  }

  /** Takes in every waiting request that fits, in the order they came (see the class). */
  private admit(): void {
    const blocked = new Set<ClinicIntake>();
    let largeBlocked = false;
    for (let at = 0; at < this.queue.length; ) {
      const waiter = this.queue[at]!;
      const { clinic, bytes } = waiter;
      // A clinic with nothing taken in takes any body, and so does an idle process: nothing waits for ever.
      const clinicFits =
        !blocked.has(clinic) && clinic.held < this.limits.perClinic && (clinic.held === 0 || clinic.heldBytes + bytes <= this.limits.clinicBytes);
      const small = bytes <= SMALL_BODY_BYTES;
      const processFits = small || (!largeBlocked && (this.heldBytes === 0 || this.heldBytes + bytes <= this.limits.processBytes));
      if (!clinicFits || !processFits) {
        blocked.add(clinic);
        if (clinicFits && !small) largeBlocked = true;
        at += 1;
        continue;
      }
      this.queue.splice(at, 1);
      clinic.waiting -= 1;
      clinic.held += 1;
      clinic.heldBytes += bytes;
      this.heldBytes += bytes;
      waiter.grant(this.releaseOf(waiter));
    }
  }

  /** The place's release: its bytes and slot given back, and whoever waited for them taken in. */
  private releaseOf(waiter: Waiter): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const { clinic, clinicId, bytes } = waiter;
      clinic.held -= 1;
      clinic.heldBytes -= bytes;
      this.heldBytes -= bytes;
      this.forget(clinicId, clinic);
      this.admit();
    };
  }

  /** A clinic with nothing taken in or waiting is dropped (the map holds only busy clinics). */
  private forget(clinicId: number, clinic: ClinicIntake): void {
    if (clinic.held === 0 && clinic.waiting === 0 && this.clinics.get(clinicId) === clinic) this.clinics.delete(clinicId);
  }
}

/**
 * Waits until the request's body can be taken in (IntakeSlots): its release, or 429 RATE_LIMIT
 * with Retry-After when the clinic's queue is full, before a byte of the body is read.
 */
async function intakeSlot(intake: IntakeSlots, clinic: ClinicAccount, request: IncomingMessage, bytes: number): Promise<() => void> {
  const slot = intake.acquire(clinic.id, request, bytes);
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
 * Admission of a clinic's body before a byte of it is read: its bytes are taken from BYTE_QUOTA by
 * its Content-Length (429 RATE_LIMIT with Retry-After), or, without one, ahead of the bytes as they
 * arrive, so a body over the quota is never read whole; then it waits its turn among the clinic's
 * requests (IntakeSlots, by its Content-Length, or the operation's `limitBytes` without one; 429
 * when the clinic's queue is full). Every body counts, valid or not. A large body's pieces of work
 * take `turns` of the event loop in turn with other clinics' (router.ts, LARGE_BODY_TURN_BYTES).
 */
export function clinicBodyAdmission(bytes: SharedAllowance | undefined, intake: IntakeSlots, pacer: RefusalPacer, turns?: LoopTurns): AdmitBody {
  return async (_operationId, security, request, limitBytes): Promise<BodyAdmission> => {
    const clinic = clinicOf(security);
    if (clinic === undefined) return {};
    const declared = declaredLength(request);
    try {
      // The refusal that needs no waiting first: a request refused would otherwise wait its turn only to be refused.
      const inspect = await quotaAdmission(bytes, clinic, declared);
      const release = await intakeSlot(intake, clinic, request, declared ?? limitBytes);
      return { ...(inspect ? { inspect } : {}), release, ...(turns ? { turn: () => turns.take(String(clinic.id)) } : {}) };
    } catch (error) {
      if (error instanceof ApiError && error.status === 429) return refuseClinic(pacer, clinic, error);
      throw error;
    }
  };
}

/** The byte quota of a clinic's body (clinicBodyAdmission): taken now by its Content-Length, or an inspector that takes it as the body arrives. */
async function quotaAdmission(bytes: SharedAllowance | undefined, clinic: ClinicAccount, declared: number | undefined): Promise<BodyInspector | undefined> {
  if (!bytes) return undefined;
  const key = String(clinic.id);
  if (declared === undefined) return reserveAhead(bytes, key);
  const wait = await bytes.take(key, Math.ceil(declared / QUOTA_UNIT_BYTES));
  if (wait !== undefined) throw tooMuch(wait, 'bytes');
  return undefined;
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
