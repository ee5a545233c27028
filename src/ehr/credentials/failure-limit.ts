import type { Queryable } from '../../db/sql.js';
import { FAIL, GIVE_BACK, RESERVE } from './failure-limit-sql.js';

/**
 * Counts failed internal credentials per (internal account, client address), across all processes
 * (one row per key in PostgreSQL, failure-limit-sql.ts): once `maxFailures` failures fall within
 * `windowMs` of the first one, that pair is refused until the window ends, whatever it sends, so
 * passwords cannot be guessed at request speed.
 *
 * Race-free: a call is judged only while the failures counted plus the calls already being judged
 * are fewer than `maxFailures` (a call being judged may turn out a failure). The key's row holds both
 * counts; room is reserved in one atomic update of it, which the call's own statement may carry
 * (save_auth_info's link query), and given back by the statement that settles the call: a failure
 * is counted in the same update that gives its room back, so the sum never drops below the truth;
 * a right credential's room is given back by the statement that stores its work. Two round trips
 * per call, as without a limit. A call that finds room only in calls still being judged waits for
 * them to settle (woken when one of this process settles, else looking again every 20-40 ms), so a
 * burst of right credentials is slowed down, never refused (within 5 s); a burst of guesses
 * gets `maxFailures` judged, no more (before, the check ran before the first await and the count
 * after it: 199 guesses of one burst were judged).
 */

/** What a statement reserving room answers (reserveRoom's `reserved`), beside its own columns. */
export interface RoomColumns {
  granted: boolean;
  /** The reservation's period (bigint as text), to give it back. */
  period: string;
  failures: number;
}

export interface FailureLimitOptions {
  /** How long a call waits, at most, for calls being judged to settle before it is refused. */
  judgingWaitMs?: number;
  /** Reservations are counted per period of this length and lapse after two: room held by a process killed while judging. */
  judgingPeriodMs?: number;
}

export const JUDGING_PERIOD_MS = 60_000;
const JUDGING_WAIT_MS = 5_000;
const RETRY_MS = 20;

export class FailureLimit {
  private readonly judgingWaitMs: number;
  readonly judgingPeriodMs: number;
  /** Calls of this process waiting for room, per key, first come first: woken when a call of the key settles here. */
  private readonly waiting = new Map<string, Array<() => void>>();

  constructor(
    private readonly sql: Queryable,
    private readonly maxFailures: number,
    private readonly windowMs: number,
    options: FailureLimitOptions = {},
  ) {
    this.judgingWaitMs = options.judgingWaitMs ?? JUDGING_WAIT_MS;
    this.judgingPeriodMs = options.judgingPeriodMs ?? JUDGING_PERIOD_MS;
  }

  /** Room to judge a call's credential, reserved by a statement of its own; undefined when the key has failed `maxFailures` times (refuse the call). */
  async attempt(key: string): Promise<FailureAttempt | undefined> {
    return (await this.attemptWith(key))?.attempt;
  }

  /**
   * Room to judge a call's credential, reserved by `reserve` (by default a statement of its own): a
   * statement carrying reserveRoom (failure-limit-sql.ts) given its values (`room`), run again while
   * the key has no room and has not failed `maxFailures` times, for up to judgingWaitMs. Answers
   * the statement's row with the attempt, or undefined when the call is to be refused.
   */
  async attemptWith<R extends RoomColumns = RoomColumns>(
    key: string,
    reserve: (room: readonly unknown[]) => Promise<R | undefined> = (room) => this.sql.row<R>(RESERVE, room),
  ): Promise<{ attempt: FailureAttempt; row: R } | undefined> {
    const deadline = Date.now() + this.judgingWaitMs;
    const room = [key, this.maxFailures, this.judgingPeriodMs];
    for (;;) {
      const row = await reserve(room);
      if (!row) throw new Error('a statement reserving room answered no row');
      if (row.granted) return { attempt: new FailureAttempt(this.sql, key, row.period, this.windowMs, () => this.wakeOne(key)), row };
      if (row.failures >= this.maxFailures || Date.now() >= deadline) return undefined;
      await this.pause(key);
    }
  }

  /** Until a call of `key` settles in this process, or a short while (calls of other processes settle unseen). */
  private pause(key: string): Promise<void> {
    return new Promise((resolve) => {
      const queue = this.waiting.get(key) ?? [];
      this.waiting.set(key, queue);
      const wake = () => {
        clearTimeout(timer);
        const at = queue.indexOf(wake);
        if (at >= 0) queue.splice(at, 1);
        if (queue.length === 0 && this.waiting.get(key) === queue) this.waiting.delete(key);
        resolve();
      };
      const timer = setTimeout(wake, RETRY_MS + Math.random() * RETRY_MS);
      queue.push(wake);
    });
  }

  /** A call of `key` settled here: its room is back (or, after a failure, the key may now be shut): the first waiter looks again. */
  private wakeOne(key: string): void {
    this.waiting.get(key)?.[0]?.();
  }
}

/** A call's room to be judged: settled as a success (nothing counted) or a failure (counted). */
export class FailureAttempt {
  private settled = false;

  constructor(
    private readonly sql: Queryable,
    private readonly key: string,
    private readonly period: string,
    private readonly windowMs: number,
    /** Called once the room is back (a waiting call of the key may take it). */
    private readonly onSettled: () => void,
  ) {}

  /** The values of giveBackRoom (failure-limit-sql.ts), for the statement that stores a right credential's work. */
  giveBackValues(): readonly unknown[] {
    return [this.key, this.period];
  }

  /** The statement carrying giveBackValues committed: the room is back. */
  givenBack(): void {
    this.settled = true;
    this.onSettled();
  }

  /** The credential was right (or the call ended before it was judged): nothing is counted. */
  async succeeded(): Promise<void> {
    if (this.settled) return;
    this.settled = true;
    await this.sql.run(GIVE_BACK, this.giveBackValues());
    this.onSettled();
  }

  /** The credential was wrong: a failure is counted, and the room given back, in one statement. */
  async failed(): Promise<void> {
    if (this.settled) return;
    this.settled = true;
    await this.sql.run(FAIL, [this.key, this.windowMs, this.period]);
    this.onSettled();
  }
}
