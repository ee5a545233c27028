import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/database.js';
import { FailureLimit } from '../../src/ehr/credentials/failure-limit.js';
import { pointsInWindow } from '../../src/limits/counters.js';
import { loadConfig } from '../../src/config/config.js';
import { createLogger } from '../../src/logging/logger.js';
import { MIGRATIONS } from '../../src/migrations.js';
import { createTestDatabase } from '../support/database.js';

describe('FailureLimit', () => {
  it('shuts a key out once maxFailures failures were counted within the window; right credentials count nothing', async () => {
    const limit = new FailureLimit('memory', 3, 60_000);
    for (let failure = 1; failure <= 3; failure += 1) expect(await limit.failed('a'), `failure ${failure}`).toBe(true);
    expect(limit.shuts(await limit.counted('a'))).toBe(true);
    // A failure beyond the limit is counted too, and answered as shut out.
    expect(await limit.failed('a')).toBe(false);
    expect(limit.shuts(await limit.counted('b'))).toBe(false);
    expect(await limit.counted('c')).toBe(0);
  });

  it('lets a new window start after the old one ends', async () => {
    const limit = new FailureLimit('memory', 1, 1_000);
    expect(await limit.failed('a')).toBe(true);
    expect(limit.shuts(await limit.counted('a'))).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect(limit.shuts(await limit.counted('a'))).toBe(false);
    expect(await limit.failed('a')).toBe(true);
  });

  it('tells no more than maxFailures guesses of one burst that they were wrong', async () => {
    const limit = new FailureLimit('memory', 10, 60_000);
    const told = await Promise.all(Array.from({ length: 199 }, () => limit.failed('guesser')));
    expect(told.filter(Boolean)).toHaveLength(10);
  });

  describe('across processes, on one database', () => {
    let pools: pg.Pool[] = [];
    let databaseUrl: string;

    beforeAll(async () => {
      databaseUrl = await createTestDatabase();
      const database = await openDatabase(loadConfig({ DATABASE_URL: databaseUrl, DATA_KEY: 'a'.repeat(64) }), createLogger('silent'), { adopt: false });
      await migrateToLatest(database, MIGRATIONS);
      await database.close();
      pools = [new pg.Pool({ connectionString: databaseUrl, max: 4 }), new pg.Pool({ connectionString: databaseUrl, max: 4 })];
    });

    afterAll(async () => {
      await Promise.all(pools.map((pool) => pool.end()));
    });

    it('counts the failures of two processes together, and tells a burst split between them 10 times at most', async () => {
      const [one, two] = pools.map((pool) => new FailureLimit({ pool }, 10, 60_000)) as [FailureLimit, FailureLimit];
      for (let failure = 0; failure < 5; failure += 1) expect(await one.failed('shared')).toBe(true);
      for (let failure = 0; failure < 5; failure += 1) expect(await two.failed('shared')).toBe(true);
      expect(one.shuts(await one.counted('shared'))).toBe(true);
      expect(two.shuts(await two.counted('shared'))).toBe(true);

      const told = await Promise.all(Array.from({ length: 100 }, (_, index) => (index % 2 === 0 ? one : two).failed('burst')));
      expect(told.filter(Boolean)).toHaveLength(10);
    });

    it('reads the same count inside another statement (pointsInWindow) as on its own', async () => {
      const limit = new FailureLimit({ pool: pools[0]! }, 10, 60_000);
      for (let failure = 0; failure < 3; failure += 1) await limit.failed('read-along');
      const read = async (key: string) =>
        (await pools[1]!.query<{ failures: number }>(`select ${pointsInWindow('$1', '$2::bigint')} as failures`, [limit.rowKey(key), Date.now()])).rows[0]!
          .failures;
      expect(await read('read-along')).toBe(3);
      expect(await limit.counted('read-along')).toBe(3);
      expect(await read('never-failed')).toBe(0);
    });
  });
});
