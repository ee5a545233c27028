import { Counter, type CounterStore } from '../../limits/counters.js';

/**
 * Counts failed internal credentials per (internal account, client address), across all processes
 * (the shared counters of limits/counters.ts): once `maxFailures` failures fall within `windowMs`
 * of the first one, that pair is refused until the window ends, whatever it sends, so passwords
 * cannot be guessed at request speed.
 *
 * Race-free: a call is judged only while the failures counted plus the calls being judged stay
 * within `maxFailures` (a call being judged may turn out a failure). Two counters per key: calls
 * being judged (taken before judging, given back after) and failures (taken when one is found,
 * before its judging is given back, so the sum never drops below the truth). A call that finds
 * room only in calls still being judged waits for them to settle, so a burst of right credentials
 * is slowed down, never refused; a burst of guesses gets `maxFailures` judged, no more (before, the
 * check ran before the first await and the count after it: 199 guesses of one burst were judged).
 */

/** How long a call waits, at most, for calls being judged to settle before it is refused. */
const JUDGING_WAIT_MS = 5_000;
const RETRY_MS = 20;
/** The window of the calls-being-judged count: a count left by a process killed while judging clears within it. */
const JUDGING_WINDOW_MS = 5 * 60_000;
/** Both counters are compared here, never refused by the library itself. */
const UNBOUNDED = 2 ** 31 - 1;

export class FailureLimit {
  private readonly failures: Counter;
  private readonly judging: Counter;

  constructor(
    store: CounterStore,
    private readonly maxFailures: number,
    windowMs: number,
  ) {
    this.failures = new Counter(store, { name: 'internal-auth-failures', points: UNBOUNDED, windowMs });
    this.judging = new Counter(store, { name: 'internal-auth-judging', points: UNBOUNDED, windowMs: JUDGING_WINDOW_MS });
  }

  /** Room to judge a call's credential; undefined when the key has failed `maxFailures` times (refuse the call). */
  async attempt(key: string): Promise<FailureAttempt | undefined> {
    const deadline = Date.now() + JUDGING_WAIT_MS;
    for (;;) {
      const judging = await this.judging.consume(key, 1);
      const failed = await this.failures.used(key);
      if (failed + judging.used <= this.maxFailures) return new FailureAttempt(this.failures, this.judging, key, judging.endsAt);
      await this.judging.reward(key, 1);
      if (failed >= this.maxFailures || Date.now() >= deadline) return undefined;
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS + Math.random() * RETRY_MS));
    }
  }
}

/** A call's room to be judged: settled as a success (nothing counted) or a failure (counted). */
export class FailureAttempt {
  private settled = false;

  constructor(
    private readonly failures: Counter,
    private readonly judging: Counter,
    private readonly key: string,
    private readonly judgingEndsAt: number,
  ) {}

  /** The credential was right (or the call ended before it was judged): nothing is counted. */
  async succeeded(): Promise<void> {
    if (this.settled) return;
    this.settled = true;
    await this.release();
  }

  /** The credential was wrong: a failure is counted, then the room given back. */
  async failed(): Promise<void> {
    if (this.settled) return;
    this.settled = true;
    await this.failures.consume(this.key, 1);
    await this.release();
  }

  /** The room given back, within its window only (a new window starts from nothing). */
  private async release(): Promise<void> {
    if (Date.now() < this.judgingEndsAt) await this.judging.reward(this.key, 1);
  }
}
