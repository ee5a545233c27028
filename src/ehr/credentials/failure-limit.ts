import { Counter, type CounterStore } from '../../limits/counters.js';

/**
 * Counts failed internal credentials per (internal account, client address), across all processes
 * (the shared counters of limits/counters.ts): once `maxFailures` failures fall within `windowMs`
 * of the first one, that pair is refused until the window ends, whatever it sends, so passwords
 * cannot be guessed at request speed.
 *
 * Race-free by answering every call as a one-at-a-time server would, in the order of the shared
 * count: a wrong credential's failure is counted first (one atomic upsert, which returns the count)
 * and the call is told "rejected" only when its failure is within `maxFailures`, else refused as if
 * it had come after the limit was reached; a right credential is admitted only when the failures it
 * read before acting (one read, or a column of the statement that fetches what it is judged
 * against) are below `maxFailures`. A burst of guesses, in one process or many, is told "rejected"
 * `maxFailures` times at most; a right credential in the burst succeeds only if a one-at-a-time
 * server would have judged it before the limit, and right credentials never wait and never count.
 * A right credential costs no round trip of its own when its read rides with its statement
 * (save_auth_info's link query); before, every call took and gave back a "being judged" count: three
 * round trips, 409 instead of 164 µs of CPU per save_auth_info.
 */
export class FailureLimit {
  private readonly failures: Counter;

  constructor(
    store: CounterStore,
    private readonly maxFailures: number,
    windowMs: number,
  ) {
    this.failures = new Counter(store, { name: 'internal-auth-failures', points: 2 ** 31 - 1, windowMs });
  }

  /** The row of the shared counters holding `key`'s failures, for a statement reading them along (pointsInWindow). */
  rowKey(key: string): string {
    return this.failures.rowKey(key);
  }

  /** The failures counted for `key` in its window now (one read). */
  counted(key: string): Promise<number> {
    return this.failures.used(key);
  }

  /** Whether `failures` counted shut the key out (a right credential is refused too). */
  shuts(failures: number): boolean {
    return failures >= this.maxFailures;
  }

  /** Counts a failure of `key`: true when it is within the limit (answer "rejected"), false when beyond (answer as shut out). */
  async failed(key: string): Promise<boolean> {
    const counted = await this.failures.consume(key, 1);
    return counted.used <= this.maxFailures;
  }
}
