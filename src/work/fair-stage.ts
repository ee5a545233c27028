import { DueTimer } from './due-timer.js';
import type { Logger } from '../logging/logger.js';

/**
 * A stage of background work shared fairly between keys (the clinics whose requests are checked,
 * the receiver origins callbacks go to). Unlike Stage (stage.ts), which takes a batch and settles it
 * when its slowest item is done, this one keeps up to `capacity` items in hand and works on each on
 * its own: an item's result is settled as soon as it is ready, with whatever else finished meanwhile
 * (one settle statement at a time; while other items are still in hand, a result waits up to
 * SETTLE_GATHER_MS for them, so a busy stage writes in groups and an idle one at once), and its
 * place goes to the next claim. No key holds more than `perKey` of the places, so another key's item always finds
 * one; the claim itself takes keys in turn (the SQL's business: it gets the keys at their cap and
 * the room each other key has).
 *
 * Leases as in Stage: the claim leases the rows, every item in hand has its lease extended every
 * `leaseMs / 3`, and an item whose processing or settling failed comes back when its lease ends.
 * Items may also be handed off: another statement of this process leases them for this stage
 * (reserveHandOff, then handOff), which spares a key with little in hand its claim statements.
 *
 * A key with nothing else in hand (a clinic sending a document now and then, beside one with a
 * backlog) skips what batches a busy stage's statements: its new work is claimed at once rather than
 * CLAIM_SPACING_MS after the last claim (when the wake names it), its result is settled at once, in a
 * statement of its own while another settle is under way, and it is handed callbacks while other
 * keys fill the places. A busy stage batches for the keys that keep it busy; the others pass by
 * (issue 21: an honest clinic's first callback beside another's burst).
 */
export interface FairStageOptions<T, R> {
  name: string;
  /** Claims up to `limit` items: none of a key in `full`, at most its room of a key in `room`, at most `perKey` of another. */
  claim(limit: number, room: ReadonlyMap<string, number>, perKey: number, full: readonly string[]): Promise<T[]>;
  keyOf(item: T): string;
  /** Works on one item; what it returns is settled with the other results ready at the time. */
  process(item: T): Promise<R>;
  /** Settles results in one go. */
  settle(results: R[]): Promise<void>;
  extend(items: T[]): Promise<unknown>;
  leaseMs: number;
  /** Items in hand at once (claimed and not yet settled). */
  capacity: number;
  /** Items of one key in hand at once. */
  perKey: number;
  /** Results settled in one go at most (a settle statement's size). */
  settleGroup: number;
  idlePollMs: number;
  /** Claims of a busy stage are this far apart at least (default CLAIM_SPACING_MS). */
  claimSpacingMs?: number;
  logger: Logger;
}

/** A key is handed items while it holds fewer than this share of the places: hand-offs spare the claims of a key with little in hand. */
const HAND_OFF_BELOW = 0.25;
/** Waits after a failed claim (the database is down, say) before the next. */
const CLAIM_RETRY_MS = 1000;
/** How long a ready result waits for others still in hand, so that they settle in one statement (issue 24: statements per document). */
const SETTLE_GATHER_MS = 10;
/**
 * Claims of a busy stage are this far apart at least: new work is announced per request (up to 200
 * NOTIFYs a second), and a claim per announcement would cost a statement per item. An idle stage
 * claims at once.
 */
const CLAIM_SPACING_MS = 20;

export class FairStage<T, R> {
  private stopping = false;
  private running: Promise<void> | undefined;
  private readonly inHand = new Set<T>();
  private readonly perKey = new Map<string, number>();
  /** Results ready to settle, the settle under way, and the one of results whose key had nothing else in hand. */
  private ready: Array<{ item: T; result: R }> = [];
  private settling: Promise<void> | undefined;
  private settlingAlone: Promise<void> | undefined;
  private gathering: NodeJS.Timeout | undefined;
  /** Something changed that a claim may act on (a wake-up, a freed place); the claimer sleeps only when nothing did. */
  private changed = false;
  private sleeper: (() => void) | undefined;
  /** A wake named a key with nothing in hand: the next claim does not wait for CLAIM_SPACING_MS. */
  private urgent = false;
  private endSpacing: (() => void) | undefined;
  /** When the earliest retry this process scheduled falls due. */
  private readonly due = new DueTimer(() => this.wake());
  /**
   * The keys whose work may wait for a claim: full after the last claim (it left them out, or took all their room), or
   * refused a hand-off since (reserveHandOff). And whether the last claim took all it asked for.
   */
  private waitingForClaim = new Set<string>();
  private lastClaimFilled = false;
  private lastClaimAt = 0;
  /** Places reserved for hand-offs (reserveHandOff), counted in `perKey` and against `capacity` until handOff. */
  private reserved = 0;

  constructor(private readonly options: FairStageOptions<T, R>) {}

  start(): void {
    this.running = this.loop();
  }

  /** There is work (of `key`, when the caller knows it): the claimer claims now, at once when the key has nothing in hand. */
  wake(key?: string): void {
    this.changed = true;
    if (key !== undefined && !this.perKey.has(key)) {
      this.urgent = true;
      this.endSpacing?.();
    }
    this.sleeper?.();
  }

  /** Work falls due at `at` (epoch ms): the claimer claims then. */
  wakeAt(at: number): void {
    this.due.at(at);
  }

  /**
   * Places for items another statement will lease to this process (a hand-off: they are worked on
   * without a claim statement): of the keys wanted (key → count), how many of each it may take now,
   * within `capacity` and each key's `perKey`, as a claim would. None while stopping or while a
   * claim may have left work behind; none of a key that holds a quarter of the places or whose
   * older items may wait for a claim. Each reservation ends with handOff, with the items leased or
   * with none.
   */
  reserveHandOff(wanted: ReadonlyMap<string, number>): Map<string, number> {
    const granted = new Map<string, number>();
    // Not while older work may wait for a claim (the last claim took all it could hold, or found the places full).
    if (this.stopping || this.lastClaimFilled) return granted;
    let free = this.free;
    for (const [key, count] of wanted) {
      const held = this.perKey.get(key) ?? 0;
      // Nor to a key that keeps the stage busy: its newest items would take the places first, and under load its older ones
      // waited to the end of the burst (a pipeline run's ack -> result p99 went from 1.5-1.8 s to 2.2-2.7 s). Nor to one
      // whose older items wait for a claim. Another key, idle beside it, is handed its items.
      const busy = this.waitingForClaim.has(key) || held >= HAND_OFF_BELOW * this.options.capacity;
      const take = busy ? 0 : Math.min(count, free, this.options.perKey - held);
      // The rest waits for a claim: later hand-offs of this key would pass it.
      if (take < count) this.waitingForClaim.add(key);
      if (take <= 0) continue;
      granted.set(key, take);
      this.perKey.set(key, (this.perKey.get(key) ?? 0) + take);
      this.reserved += take;
      free -= take;
    }
    return granted;
  }

  /** Ends a reservation: its places are given back, and the items leased meanwhile are worked on as claimed ones are. */
  handOff(reserved: ReadonlyMap<string, number>, items: readonly T[]): void {
    for (const count of reserved.values()) this.reserved -= count;
    for (const item of items) this.begin(item);
    this.freed(reserved);
  }

  /** Places neither in hand nor reserved for a hand-off: what a claim may take. */
  private get free(): number {
    return this.options.capacity - this.inHand.size - this.reserved;
  }

  /** Items in hand now, by key, with places reserved for hand-offs (for tests and metrics). */
  held(key: string): number {
    return this.perKey.get(key) ?? 0;
  }

  /** Stops claiming and waits for the items in hand to settle (at most `graceMs`; the rest come back when their leases end). */
  async stop(graceMs = 20_000): Promise<void> {
    this.stopping = true;
    this.due.clear();
    this.endSpacing?.();
    this.wake();
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
    const drained = (async () => {
      await this.running;
      while (this.inHand.size > 0 || this.reserved > 0) await new Promise<void>((resolve) => (this.sleeper = resolve));
    })();
    await Promise.race([drained, grace]);
    clearTimeout(timer);
  }

  private async loop(): Promise<void> {
    const heartbeat = setInterval(
      () => {
        if (this.inHand.size === 0) return;
        this.options
          .extend([...this.inHand])
          .catch((error: unknown) =>
            this.options.logger.warn({ code: (error as { code?: unknown }).code, stage: this.options.name }, 'extending leases failed'),
          );
      },
      Math.max(100, this.options.leaseMs / 3),
    );
    try {
      while (!this.stopping) {
        this.changed = false;
        const spacing = this.lastClaimAt + (this.options.claimSpacingMs ?? CLAIM_SPACING_MS) - Date.now();
        if (this.inHand.size > 0 && spacing > 0 && !this.stopping && !this.urgent) await this.spaceClaims(spacing);
        this.urgent = false;
        const free = this.free;
        if (free > 0 && !this.stopping) {
          this.lastClaimAt = Date.now();
          let claimed: T[];
          const { room, full } = this.rooms();
          try {
            claimed = await this.options.claim(free, room, this.options.perKey, full);
          } catch (error) {
            this.options.logger.error({ err: error, stage: this.options.name }, 'claiming work failed; trying again');
            await this.sleep(CLAIM_RETRY_MS);
            continue;
          }
          this.lastClaimFilled = claimed.length >= free;
          for (const item of claimed) this.begin(item);
          this.waitingForClaim = this.fullAfter(claimed, room, full);
          if (this.lastClaimFilled) continue;
        } else if (free <= 0) {
          // Full without a claim (hand-offs filled the places): work announced meanwhile is claimed once a quarter of them
          // is free, as after a claim that took all it could hold. Else it waited for the idle poll (a pipeline run's
          // callbacks, 10 s).
          this.lastClaimFilled = true;
        }
        if (!this.changed) await this.sleep(this.options.idlePollMs);
      }
    } finally {
      clearInterval(heartbeat);
    }
  }

  /**
   * The keys that may have more waiting after a claim: those it left out (at their cap), those at
   * their cap now, and those it gave all the room it offered. The last are not always at their cap:
   * items that ended while the claim ran freed places it did not offer, and with no key marked full
   * nothing would claim again until a NOTIFY or the idle poll (issue 24: with a 10 s poll, a
   * pipeline run's last documents waited 10–20 s in the acceptance stage).
   */
  private fullAfter(claimed: readonly T[], offered: ReadonlyMap<string, number>, leftOut: readonly string[]): Set<string> {
    const full = new Set(leftOut);
    for (const [key, count] of this.perKey) if (count >= this.options.perKey) full.add(key);
    const took = new Map<string, number>();
    for (const item of claimed) {
      const key = this.options.keyOf(item);
      took.set(key, (took.get(key) ?? 0) + 1);
    }
    for (const [key, count] of took) if (count >= (offered.get(key) ?? this.options.perKey)) full.add(key);
    return full;
  }

  /** The room each key in hand has left, and the keys with none. */
  private rooms(): { room: Map<string, number>; full: string[] } {
    const room = new Map<string, number>();
    const full: string[] = [];
    for (const [key, count] of this.perKey) {
      if (count >= this.options.perKey) full.push(key);
      else room.set(key, this.options.perKey - count);
    }
    return { room, full };
  }

  private begin(item: T): void {
    const key = this.options.keyOf(item);
    this.inHand.add(item);
    this.perKey.set(key, (this.perKey.get(key) ?? 0) + 1);
    this.options.process(item).then(
      (result) => {
        this.ready.push({ item, result });
        this.flush();
      },
      (error: unknown) => {
        this.options.logger.error({ err: error, stage: this.options.name }, 'an item failed; it comes back when its lease ends');
        this.end([item]);
      },
    );
  }

  /**
   * Settles what is ready, unless a settle is under way (then the next one takes it) or other items
   * in hand may finish within SETTLE_GATHER_MS (then they go together). A result whose key has
   * nothing else in hand goes at once: with what is ready, or in a statement of its own beside the
   * settle under way.
   */
  private flush(): void {
    if (this.ready.length === 0) return;
    if (this.settling) {
      this.settleAlone();
      return;
    }
    const othersInHand = this.inHand.size > this.ready.length;
    if (othersInHand && this.ready.length < this.options.settleGroup && !this.stopping && !this.ready.some((entry) => this.alone(entry.item))) {
      this.gathering ??= setTimeout(() => {
        this.gathering = undefined;
        this.settleReady();
      }, SETTLE_GATHER_MS);
      return;
    }
    this.settleReady();
  }

  private settleReady(): void {
    clearTimeout(this.gathering);
    this.gathering = undefined;
    if (this.settling || this.ready.length === 0) return;
    const group = this.ready.splice(0, this.options.settleGroup);
    this.settling = this.settleResults(group).finally(() => {
      this.settling = undefined;
      this.flush();
    });
  }

  /** The ready results whose keys have nothing else in hand, settled now beside the settle under way (one such settle at a time). */
  private settleAlone(): void {
    if (this.settlingAlone) return;
    const group = this.ready.filter((entry) => this.alone(entry.item));
    if (group.length === 0) return;
    this.ready = this.ready.filter((entry) => !group.includes(entry));
    this.settlingAlone = this.settleResults(group).finally(() => {
      this.settlingAlone = undefined;
      this.flush();
    });
  }

  private async settleResults(group: Array<{ item: T; result: R }>): Promise<void> {
    try {
      await this.options.settle(group.map((entry) => entry.result));
    } catch (error) {
      this.options.logger.error({ err: error, stage: this.options.name }, 'settling failed; the items come back when their leases end');
    }
    this.end(group.map((entry) => entry.item));
  }

  /** Whether the item's key has nothing else in hand (nor places reserved for it). */
  private alone(item: T): boolean {
    return (this.perKey.get(this.options.keyOf(item)) ?? 0) <= 1;
  }

  /** Items out of hand: their places go to the next claim, which runs now when it may find work it could not take before. */
  private end(items: T[]): void {
    for (const item of items) this.inHand.delete(item);
    this.freed(items.map((item) => [this.options.keyOf(item), 1]));
  }

  /** Places given back (ended items, unused reservations), by key: a claim runs now when it may find work it could not take before. */
  private freed(places: Iterable<readonly [string, number]>): void {
    let reclaim = false;
    for (const [key, count] of places) {
      const left = (this.perKey.get(key) ?? count) - count;
      if (left <= 0) this.perKey.delete(key);
      else this.perKey.set(key, left);
      // A key whose work may wait for a claim now has room: in half its places, so a busy key is claimed for in groups.
      if (this.waitingForClaim.has(key) && this.options.perKey - left >= Math.max(1, Math.floor(this.options.perKey / 2))) reclaim = true;
    }
    // The last claim took all it could hold: more may wait, claimed once a quarter of the places is free.
    const free = this.free;
    if (this.lastClaimFilled && free >= Math.max(1, Math.floor(this.options.capacity / 4))) reclaim = true;
    if (reclaim || this.stopping) this.wake();
  }

  /** Waits out the claims' spacing, less when a wake names a key with nothing in hand. */
  private spaceClaims(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.endSpacing = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.endSpacing = done;
    });
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopping) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        if (this.sleeper === done) this.sleeper = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.sleeper = done;
    });
  }
}
