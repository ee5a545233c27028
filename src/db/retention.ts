import { statement, type Queryable, type Sql } from './sql.js';
import type { Logger } from '../logging/logger.js';

/**
 * The periodic clean-up of data whose time is over (RETENTION). Each domain brings its steps; the
 * worker role runs them. Several worker processes may run it at once: every batch takes a
 * transaction-level advisory lock first, and a worker that does not get it leaves the round to the
 * one that has it.
 */

/** One kind of data to delete: at most `limit` rows older than `cutoff` per call, returning how many went. */
export interface PurgeStep {
  name: string;
  purge(trx: Queryable, cutoff: Date, limit: number): Promise<number>;
}

export interface RetentionOptions {
  retentionMs: number;
  steps: readonly PurgeStep[];
  logger: Logger;
}

export interface Retention {
  /** One round now (also what the timer runs); resolves with the rows each step deleted. */
  runOnce(): Promise<Record<string, number>>;
  stop(): Promise<void>;
}

const BATCH = 500;
// "ehr-gateway retention" as a 64-bit advisory lock key.
const LOCK_KEY = 0x6568_7267_7265_746en;
const TRY_LOCK = statement('retention_try_lock', 'select pg_try_advisory_xact_lock($1::bigint) as locked');
// The database's clock, the one the rows were stamped with.
const CUTOFF = statement('retention_cutoff', `select now() - $1 * interval '1 millisecond' as cutoff`);

/** How often the rounds run: a tenth of RETENTION, at least every hour, at most every second. */
export function retentionIntervalMs(retentionMs: number): number {
  return Math.min(3_600_000, Math.max(1_000, Math.round(retentionMs / 10)));
}

export function startRetention(sql: Sql, options: RetentionOptions): Retention {
  let running: Promise<Record<string, number>> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  /** The batches of one step, until it has no more or another worker holds the lock. */
  async function purgeAll(step: PurgeStep, cutoff: Date): Promise<number> {
    let total = 0;
    for (;;) {
      const deleted = await sql.transaction(async (trx) => {
        const lock = await trx.row<{ locked: boolean }>(TRY_LOCK, [LOCK_KEY.toString()]);
        return lock!.locked ? step.purge(trx, cutoff, BATCH) : undefined;
      });
      if (deleted === undefined) return total;
      total += deleted;
      if (deleted < BATCH || stopped) return total;
    }
  }

  async function round(): Promise<Record<string, number>> {
    const { cutoff } = (await sql.row<{ cutoff: Date }>(CUTOFF, [options.retentionMs]))!;
    const deleted: Record<string, number> = {};
    for (const step of options.steps) deleted[step.name] = await purgeAll(step, cutoff);
    if (Object.values(deleted).some((count) => count > 0)) options.logger.info({ deleted, cutoff }, 'retention: purged');
    return deleted;
  }

  const runOnce = (): Promise<Record<string, number>> => {
    running ??= round().finally(() => (running = undefined));
    return running;
  };

  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      runOnce()
        .catch((error: unknown) => options.logger.error({ err: error }, 'retention round failed; the next round tries again'))
        .finally(schedule);
    }, retentionIntervalMs(options.retentionMs));
  };
  schedule();

  return {
    runOnce,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running?.catch(() => {});
    },
  };
}
