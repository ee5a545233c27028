import type pg from 'pg';
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { isDatabaseUnavailable } from '../db/database.js';

/**
 * Counters shared by every process of the service, per key and fixed window, in PostgreSQL:
 * rate-limiter-flexible's RateLimiterPostgres on the table of migrations.ts (one atomic upsert per
 * consume, on the service's pool). Unlogged: a count is not worth a WAL flush, and a crash of
 * PostgreSQL forgetting the current windows is harmless. While the database cannot be reached, each
 * process counts alone in memory rather than refusing everything or letting everything through;
 * any other error of the store is a fault and goes up.
 */

/** The table (migrations.ts): the library's own layout (key, points, expire in epoch ms). */
export const COUNTERS_TABLE = 'rate_limit_counters';

export interface CounterOptions {
  /** Names the counted thing; a key's row is `<name>:<key>`. */
  name: string;
  /** Points per window; beyond, a consume is refused. */
  points: number;
  windowMs: number;
}

/** Where counters live: the service's pool (shared by all processes), or this process's memory (unit tests). */
export type CounterStore = { pool: pg.Pool } | 'memory';

/** What a consume answered: taken or refused (then the ms until the window ends), the points used in the window, and when it ends. */
export type Consumed = ({ taken: true } | { taken: false; waitMs: number }) & { used: number; remaining: number; endsAt: number };

/** A counter per key and window, in the store, with this process's memory standing in while the database is unreachable. */
export class Counter {
  private readonly store: RateLimiterAbstract;
  private readonly fallback: RateLimiterAbstract | undefined;

  constructor(store: CounterStore, options: CounterOptions) {
    const common = { keyPrefix: options.name, points: options.points, duration: options.windowMs / 1000 };
    if (store === 'memory') {
      this.store = new RateLimiterMemory(common);
      return;
    }
    // The table comes with the schema's migrations, not from the library at run time.
    this.store = new RateLimiterPostgres({ ...common, storeClient: store.pool, storeType: 'pool', tableName: COUNTERS_TABLE, tableCreated: true });
    this.fallback = new RateLimiterMemory(common);
  }

  /** Takes `points` of `key`'s window (counted even when refused, as the library counts). */
  async consume(key: string, points: number): Promise<Consumed> {
    try {
      return taken(await this.withFallback((limiter) => limiter.consume(key, points)));
    } catch (error) {
      if (!(error instanceof RateLimiterRes)) throw error;
      return {
        taken: false,
        waitMs: Math.max(1000, error.msBeforeNext),
        used: error.consumedPoints,
        remaining: 0,
        endsAt: Date.now() + Math.max(0, error.msBeforeNext),
      };
    }
  }

  /** Gives `points` back to `key`'s current window. */
  async reward(key: string, points: number): Promise<void> {
    await this.withFallback((limiter) => limiter.reward(key, points));
  }

  private async withFallback<T>(run: (limiter: RateLimiterAbstract) => Promise<T>): Promise<T> {
    try {
      return await run(this.store);
    } catch (error) {
      if (!this.fallback || !isDatabaseUnavailable(error)) throw error;
      return run(this.fallback);
    }
  }
}

function taken(res: RateLimiterRes): Consumed {
  return { taken: true, used: res.consumedPoints, remaining: res.remainingPoints, endsAt: Date.now() + Math.max(0, res.msBeforeNext) };
}
