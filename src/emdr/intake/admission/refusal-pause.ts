import type { IncomingMessage } from 'node:http';
import { ClientGone } from '../../../http/json-body.js';
import { holdBody } from '../../../http/listener.js';
import type { ApiError } from '../../errors/errors.js';

/**
 * A clinic account's 429s answered after a pause once it ignores them: past REFUSALS_BEFORE_PAUSE
 * refusals within a second, each further one is answered after about REFUSAL_PAUSE_MS, its body
 * unread.
 *
 * Why: an answer at once is the next request at once for a client that does not wait its
 * Retry-After. Beside the M4 abuser (64 connections sending 24 MiB bodies back to back) the gateway
 * refused 600–900 requests a second, each a connection accepted, an answer written and a socket
 * closed with its body's bytes in the buffers; with the account lookups cached (auth-cache.ts) that
 * was still 71% of the loop, the abuser only coming back faster. Paused, such a
 * client's connections wait and send nothing (their bodies are unread, so TCP holds them back),
 * and its refusals come at most one per connection per pause. What a paused refusal holds is a
 * connection the client could hold anyway by sending slowly (MAX_CONNECTIONS_PER_CLIENT bounds
 * both).
 *
 * Counted per authenticated clinic account, in this process: never per client address (clinics
 * behind one proxy share it) nor per claimed account (anyone could get a victim paused).
 */

/** Refusals of a clinic within a second that are answered at once: a burst that ran past a limit is told so without delay. */
export const REFUSALS_BEFORE_PAUSE = 10;
/**
 * How long a further refusal waits before it is answered, on average; Retry-After is at least 1 s
 * anyway. Each pause is drawn from half to one and a half of it: paused alike, a client's connections
 * were answered in one burst a second (64 answers and closes in one piece of 100–190 ms of the loop)
 * and came back together, to be paused alike again.
 */
export const REFUSAL_PAUSE_MS = 1000;
const WINDOW_MS = 1000;

interface Recent {
  windowStart: number;
  refusals: number;
}

export class RefusalPause {
  private readonly recent = new Map<number, Recent>();

  constructor(
    private readonly options: { refusalsBeforePause: number; pauseMs: number } = { refusalsBeforePause: REFUSALS_BEFORE_PAUSE, pauseMs: REFUSAL_PAUSE_MS },
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Refuses `request` of `clinicId` with `error`: at once while the clinic's refusals this second
   * are few, else after the pause (ClientGone when the client leaves meanwhile).
   */
  async refuse(clinicId: number, request: IncomingMessage, error: ApiError): Promise<never> {
    if (this.count(clinicId) > this.options.refusalsBeforePause) await this.pause(request);
    throw error;
  }

  /** The clinic's refusals in the current window, this one included. */
  private count(clinicId: number): number {
    const now = this.now();
    let recent = this.recent.get(clinicId);
    if (!recent || now - recent.windowStart >= WINDOW_MS) {
      if (!recent) this.forgetQuiet(now);
      recent = { windowStart: now, refusals: 0 };
      this.recent.set(clinicId, recent);
    }
    recent.refusals += 1;
    return recent.refusals;
  }

  private pause(request: IncomingMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      // Not cut off as too slow (BODY_MIN_RATE) for a wait that is ours.
      const unhold = holdBody(request);
      // The socket's close, not the request's: a request without a body may close as read.
      const socket = request.socket;
      const done = () => {
        clearTimeout(timer);
        socket.off('close', onClose);
        unhold();
      };
      const onClose = () => {
        done();
        reject(new ClientGone());
      };
      const timer = setTimeout(
        () => {
          done();
          resolve();
        },
        this.options.pauseMs * (0.5 + Math.random()),
      );
      socket.once('close', onClose);
    });
  }

  /** Clinics refused in no recent window are dropped when a new one is counted (the map holds recent refusers only). */
  private forgetQuiet(now: number): void {
    if (this.recent.size < 1024) return;
    for (const [clinicId, recent] of this.recent) if (now - recent.windowStart >= WINDOW_MS) this.recent.delete(clinicId);
  }
}
