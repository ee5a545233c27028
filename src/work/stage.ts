import { DueTimer } from './due-timer.js';
import type { Logger } from '../logging/logger.js';

/**
 * A stage of background work over rows that are their own queue: each loop claims a batch (the
 * claim leases the rows, and the lease is extended while the batch is in hand, so the rows of a
 * worker that was killed or hangs come back when the lease ends), processes it, and
 * claims again at once while batches come back full. An idle loop sleeps until it is woken (new
 * work committed in this process, a NOTIFY from another, a retry falling due); the first loop also
 * when `idlePollMs` passes, the backstop for leases that ran out and work nobody announced (one
 * loop's look finds it, and wakes the next when its batch comes back full: the others polling too
 * cost a statement each per poll, issue 24). There is no polling floor: a woken or busy stage never
 * waits.
 */
export interface StageOptions<T> {
  name: string;
  /** Claims (and leases) up to `limit` items. */
  claim(limit: number): Promise<T[]>;
  /** Processes a claimed batch; it settles each item itself (an item it leaves unsettled comes back when its lease ends). */
  process(batch: T[]): Promise<void>;
  /** Extends the leases of a batch in hand: called every `leaseMs / 3` while it is processed, so only a worker that stopped loses its rows. */
  extend(batch: T[]): Promise<unknown>;
  /** When the stage's next work falls due (epoch ms), if it knows: an idle loop wakes then rather than at its next poll. */
  nextDue?(): Promise<number | undefined>;
  leaseMs: number;
  batchSize: number;
  /** Loops claiming at once (each with one batch in hand). */
  loops: number;
  /** How often the first loop, idle, looks for work nobody announced. */
  idlePollMs: number;
  logger: Logger;
}

/** Waits after a failed claim (the database is down, say) before the next. */
const CLAIM_RETRY_MS = 1000;
/** The soonest an idle loop claims again for work its claim found due but could not take. */
const DUE_AGAIN_MS = 100;

export class Stage<T> {
  private stopping = false;
  private running: Promise<void>[] = [];
  /** A wake-up came that no claim has served yet (no loop was asleep): the next loop done with its batch claims again instead of sleeping. */
  private unserved = false;
  private sleepers = new Set<() => void>();
  /** When the earliest retry this process scheduled falls due. */
  private readonly due = new DueTimer(() => this.wake());

  constructor(private readonly options: StageOptions<T>) {}

  start(): void {
    this.running = Array.from({ length: this.options.loops }, (_, index) => this.loop(index === 0 ? this.options.idlePollMs : undefined));
  }

  /**
   * There is work: one sleeping loop claims now, and wakes the next if its claim filled a batch (more
   * may wait); with none asleep, the first loop done with its batch claims again. Waking every loop
   * for one announcement, and every loop at work claiming again after it, cost an empty claim per
   * loop (two in five of the submission stage's statements).
   */
  wake(): void {
    const [sleeper] = this.sleepers;
    if (sleeper) sleeper();
    else this.unserved = true;
  }

  private rouse(loops: number): void {
    for (const sleeper of [...this.sleepers].slice(0, loops)) sleeper();
  }

  /** Work falls due at `at` (epoch ms): a loop claims then. */
  wakeAt(at: number): void {
    this.due.at(at);
  }

  /** Stops claiming and waits for the batches in hand (at most `graceMs`; the rest come back when their leases end). */
  async stop(graceMs = 20_000): Promise<void> {
    this.stopping = true;
    this.due.clear();
    this.rouse(Infinity);
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
    await Promise.race([Promise.all(this.running), grace]);
    clearTimeout(timer);
  }

  /** A loop; `idlePollMs` undefined: idle, it sleeps until woken. */
  private async loop(idlePollMs: number | undefined): Promise<void> {
    while (!this.stopping) {
      // This claim serves the wake-ups so far.
      this.unserved = false;
      let claimed: T[];
      try {
        claimed = await this.options.claim(this.options.batchSize);
      } catch (error) {
        this.options.logger.error({ err: error, stage: this.options.name }, 'claiming work failed; trying again');
        await this.sleep(CLAIM_RETRY_MS);
        continue;
      }
      if (claimed.length >= this.options.batchSize) this.rouse(1);
      if (claimed.length > 0) await this.processHolding(claimed);
      if (claimed.length < this.options.batchSize && !this.unserved) {
        await this.scheduleNextDue();
        // Unless a wake-up came while the next due time was read.
        if (!this.unserved) await this.sleep(idlePollMs);
      }
    }
  }

  /**
   * Before an idle sleep: a wake-up when the next work falls due, when the stage can tell. Not while
   * a wake-up is already set: the read would only find work due sooner that this process did not
   * schedule (another process's, or a lease that ends), which that wake-up's claim or the idle poll
   * finds; reading at every idle cost a statement per document at a steady rate (issue 24: the
   * registry's answer loop goes idle after each answer).
   */
  private async scheduleNextDue(): Promise<void> {
    if (!this.options.nextDue || this.stopping || this.due.pending) return;
    try {
      const at = await this.options.nextDue();
      // Not at once for work due already (rows another worker is claiming this moment): the claim just missed them.
      if (at !== undefined) this.wakeAt(Math.max(at, Date.now() + DUE_AGAIN_MS));
    } catch (error) {
      this.options.logger.warn({ code: (error as { code?: unknown }).code, stage: this.options.name }, 'reading when work falls due failed');
    }
  }

  /** Processes a batch, its leases extended meanwhile. */
  private async processHolding(batch: T[]): Promise<void> {
    const heartbeat = setInterval(
      () => {
        this.options
          .extend(batch)
          .catch((error: unknown) =>
            this.options.logger.warn({ code: (error as { code?: unknown }).code, stage: this.options.name }, 'extending leases failed'),
          );
      },
      Math.max(100, this.options.leaseMs / 3),
    );
    try {
      await this.options.process(batch);
    } catch (error) {
      this.options.logger.error({ err: error, stage: this.options.name }, 'a batch failed; its items come back when their leases end');
    } finally {
      clearInterval(heartbeat);
    }
  }

  /** Until woken, or `ms` passed when given. */
  private sleep(ms: number | undefined): Promise<void> {
    if (this.stopping) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.sleepers.delete(done);
        resolve();
      };
      const timer = ms === undefined ? undefined : setTimeout(done, ms);
      this.sleepers.add(done);
    });
  }
}

/** How long an item whose processing failed waits before it is tried again: doubling from 1 s with each claim, at most `leaseMs`. */
export function retryDelayMs(claims: number, leaseMs: number): number {
  return Math.min(leaseMs, 1000 * 2 ** Math.min(Math.max(0, claims - 1), 16));
}
