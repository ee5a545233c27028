import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { openDatabase, type Database } from '../../src/db/database.js';
import { statement } from '../../src/db/sql.js';
import { createLogger } from '../../src/logging/logger.js';
import { createTestDatabase } from '../support/database.js';

const BRIEF_WAIT = statement('test_pool_brief_wait', 'select pg_sleep(0.05)');

/**
 * The runtime pool (DATABASE_POOL_SIZE) keeps a connection once opened. node-postgres closes one
 * that idled 10 s by default; the next burst of calls then waits for new ones (a backend started,
 * a SCRAM exchange, every named statement prepared again), which is when the wait hurts most.
 */
describe('the runtime database pool', () => {
  let database: Database | undefined;

  afterEach(async () => {
    vi.useRealTimers();
    await database?.close();
  });

  it('keeps the connections it opened while they idle', async () => {
    database = await openDatabase(
      loadConfig({ DATABASE_URL: await createTestDatabase(), DATA_KEY: 'a'.repeat(64), DATABASE_POOL_SIZE: '4' }),
      createLogger('silent'),
      { adopt: false },
    );
    // The pool's idle timers are set when a connection comes back: faked from here on, to be run at once below.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const sql = database.sql;
    // Four calls at once: one connection each.
    await Promise.all(Array.from({ length: 4 }, () => sql.run(BRIEF_WAIT)));
    expect(sql.pool.totalCount).toBe(4);
    expect(sql.pool.idleCount).toBe(4);

    vi.advanceTimersByTime(10 * 60_000);

    expect(sql.pool.totalCount).toBe(4);
  });
});
