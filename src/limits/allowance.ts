import { Counter, type CounterStore } from './counters.js';

/**
 * An allowance per key and window (requests per clinic, body bytes per clinic, calls per client
 * address) that holds across all processes: the points live in the shared counter (counters.ts),
 * but a process takes them in leases of a twentieth of the allowance and serves takes from its
 * lease in memory, so the hot path asks PostgreSQL about once per twenty requests, not on each.
 *
 * What that costs in accuracy: a lease taken is counted whole, so with N processes a key may be
 * refused while up to N − 1 partly used leases are still unspent (at most N − 1 twentieths of the
 * allowance, for the rest of the window); it never gets more than the allowance. One process is
 * exact. Near the end of the allowance a process asks for only what it needs, and once the store
 * refuses, further takes are refused from memory until the window ends (no query per refusal).
 */

/** A lease is this fraction of the allowance (at least 1 point). */
const LEASE_FRACTION = 20;

/** Two answers of the store about one window give its end within this (each reads the clock on its own). */
const SAME_WINDOW_MS = 500;

interface Lease {
  /** Points of the lease not yet taken. */
  remaining: number;
  /** The store's window ends (epoch ms): the lease with it. */
  endsAt: number;
}

interface Known {
  /** Points the store had left at its last answer: an upper bound, since other processes only take more. */
  remaining: number;
  endsAt: number;
}

export interface AllowanceOptions {
  /** Names the allowance in the shared counters. */
  name: string;
  /** Points per window; 0 means no limit. */
  perWindow: number;
  windowMs: number;
}

export class SharedAllowance {
  private readonly counter: Counter | undefined;
  private readonly leaseSize: number;
  private readonly leases = new Map<string, Lease>();
  private readonly known = new Map<string, Known>();
  /** A lease being asked for, per key: other takes of the key wait for it. */
  private readonly asking = new Map<string, Promise<unknown>>();

  constructor(
    store: CounterStore,
    private readonly options: AllowanceOptions,
  ) {
    this.counter = options.perWindow > 0 ? new Counter(store, { name: options.name, points: options.perWindow, windowMs: options.windowMs }) : undefined;
    this.leaseSize = Math.max(1, Math.floor(options.perWindow / LEASE_FRACTION));
  }

  /** Takes `amount` points of `key`'s allowance: undefined when taken, else the milliseconds until the window ends. */
  async take(key: string, amount: number): Promise<number | undefined> {
    if (!this.counter || amount <= 0) return undefined;
    if (amount > this.options.perWindow) return this.options.windowMs;
    for (;;) {
      const now = Date.now();
      const lease = this.current(this.leases, key, now);
      if (lease && lease.remaining >= amount) {
        lease.remaining -= amount;
        return undefined;
      }
      const known = this.current(this.known, key, now);
      if (known && amount - (lease?.remaining ?? 0) > known.remaining) return known.endsAt - now;
      const asking = this.asking.get(key);
      if (asking) {
        await asking;
        continue;
      }
      // The old lease's points go into this take (no other take may spend them meanwhile); the store pays the rest.
      const carried = lease?.remaining ?? 0;
      if (lease) lease.remaining = 0;
      const need = amount - carried;
      const request = Math.max(need, Math.min(this.leaseSize, known?.remaining ?? this.leaseSize));
      const leased = this.lease(key, need, request).finally(() => this.asking.delete(key));
      this.asking.set(key, leased);
      const granted = await leased;
      if (!granted) {
        if (lease) lease.remaining += carried;
        return Math.max(1000, (this.known.get(key)?.endsAt ?? now + this.options.windowMs) - Date.now());
      }
      // The carried points count only within the window they were leased in; else the grant pays for the whole take.
      const sameWindow = lease !== undefined && Math.abs(lease.endsAt - granted.endsAt) < SAME_WINDOW_MS;
      this.leases.set(key, { remaining: Math.max(0, granted.points - (sameWindow ? need : amount)), endsAt: granted.endsAt });
      return undefined;
    }
  }

  /**
   * Asks the store for `request` points (at least `need`): what it granted and until when, or
   * undefined when refused. A refused request larger than the need is undone and the need asked
   * for alone, so a lease never costs the last points of a window.
   */
  private async lease(key: string, need: number, request: number): Promise<{ points: number; endsAt: number } | undefined> {
    let asked = await this.counter!.consume(key, request);
    if (!asked.taken && request > need) {
      await this.counter!.reward(key, request).catch(() => undefined);
      asked = await this.counter!.consume(key, need);
      request = need;
    }
    this.known.set(key, { remaining: asked.taken ? asked.remaining : 0, endsAt: asked.endsAt });
    this.prune();
    return asked.taken ? { points: request, endsAt: asked.endsAt } : undefined;
  }

  private current<T extends { endsAt: number }>(map: Map<string, T>, key: string, now: number): T | undefined {
    const entry = map.get(key);
    if (entry && entry.endsAt <= now) {
      map.delete(key);
      return undefined;
    }
    return entry;
  }

  /** Keys seen once stay only until their window ends: expired entries go when the maps grow. */
  private prune(): void {
    if (this.known.size < 10_000) return;
    const now = Date.now();
    for (const map of [this.known, this.leases] as Array<Map<string, { endsAt: number }>>) {
      for (const [key, entry] of map) if (entry.endsAt <= now) map.delete(key);
    }
  }
}
