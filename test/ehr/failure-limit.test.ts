import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/database.js';
import { Sql } from '../../src/db/sql.js';
import { FailureLimit } from '../../src/ehr/credentials/failure-limit.js';
import { loadConfig } from '../../src/config/config.js';
import { createLogger } from '../../src/logging/logger.js';
import { MIGRATIONS } from '../../src/migrations.js';
import { createTestDatabase } from '../support/database.js';
import { until } from '../support/until.js';

describe('FailureLimit', () => {
  // Two pools on one database: two processes of the service.
  let pools: pg.Pool[] = [];
  let sql: Sql;

  beforeAll(async () => {
    const databaseUrl = await createTestDatabase();
    const database = await openDatabase(loadConfig({ DATABASE_URL: databaseUrl, DATA_KEY: 'a'.repeat(64) }), createLogger('silent'), { adopt: false });
    await migrateToLatest(database, MIGRATIONS);
    await database.close();
    pools = [new pg.Pool({ connectionString: databaseUrl, max: 4 }), new pg.Pool({ connectionString: databaseUrl, max: 4 })];
    sql = new Sql(pools[0]!);
  });

  afterAll(async () => {
    await Promise.all(pools.map((pool) => pool.end()));
  });

  it('refuses a key once maxFailures calls failed within the window; a right credential gives its failure back', async () => {
    const limit = new FailureLimit(sql, 3, 60_000);
    for (let failure = 1; failure <= 3; failure += 1) {
      const attempt = await limit.attempt('a');
      expect(attempt, `attempt ${failure}`).toBeDefined();
      await attempt!.failed();
    }
    expect(await limit.attempt('a')).toBeUndefined();
    expect(await limit.attempt('b')).toBeDefined();
    // Right credentials cost nothing: any number of them, and then the failures still have room.
    for (let call = 0; call < 10; call += 1) await (await limit.attempt('c'))!.succeeded();
    for (let failure = 0; failure < 3; failure += 1) await (await limit.attempt('c'))!.failed();
    expect(await limit.attempt('c')).toBeUndefined();
  });

  it('lets a new window start after the old one ends', async () => {
    const limit = new FailureLimit(sql, 1, 1_000);
    await (await limit.attempt('windows'))!.failed();
    expect(await limit.attempt('windows')).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect(await limit.attempt('windows')).toBeDefined();
  });

  it('judges no more than maxFailures guesses of one burst, and lets a burst of right credentials through, slowed', async () => {
    const limit = new FailureLimit(sql, 10, 60_000);
    let judged = 0;
    // Guesses: each is judged (and fails) once it has room.
    await Promise.all(
      Array.from({ length: 199 }, async () => {
        const attempt = await limit.attempt('guesser');
        if (!attempt) return;
        judged += 1;
        await new Promise((resolve) => setTimeout(resolve, 5));
        await attempt.failed();
      }),
    );
    expect(judged).toBe(10);
    // Right credentials, 50 at once: all judged, none refused.
    const admitted = await Promise.all(
      Array.from({ length: 50 }, async () => {
        const attempt = await limit.attempt('authorization-server');
        await new Promise((resolve) => setTimeout(resolve, 5));
        await attempt?.succeeded();
        return attempt !== undefined;
      }),
    );
    expect(admitted.every(Boolean)).toBe(true);
  });

  it('lets the room of a process killed while judging lapse, after two periods at most', async () => {
    const limit = new FailureLimit(sql, 3, 60_000, { judgingPeriodMs: 1_000, judgingWaitMs: 50 });
    // Three calls reserve room and are never settled: their process died.
    for (let call = 0; call < 3; call += 1) expect(await limit.attempt('killed')).toBeDefined();
    expect(await limit.attempt('killed')).toBeUndefined();
    const attempt = await until(
      'room again',
      () => limit.attempt('killed'),
      (room) => room !== undefined,
      10_000,
    );
    await attempt!.failed();
  });

  describe('across processes, on one database', () => {
    it('counts the failures of two processes together, and a burst split between them is judged 10 times at most', async () => {
      const [one, two] = pools.map((pool) => new FailureLimit(new Sql(pool), 10, 60_000)) as [FailureLimit, FailureLimit];
      for (let failure = 0; failure < 5; failure += 1) await (await one.attempt('shared'))!.failed();
      for (let failure = 0; failure < 5; failure += 1) await (await two.attempt('shared'))!.failed();
      expect(await one.attempt('shared')).toBeUndefined();
      expect(await two.attempt('shared')).toBeUndefined();

      let judged = 0;
      await Promise.all(
        Array.from({ length: 100 }, async (_, index) => {
          const attempt = await (index % 2 === 0 ? one : two).attempt('burst');
          if (!attempt) return;
          judged += 1;
          await attempt.failed();
        }),
      );
      // At most 10; fewer when a loaded machine keeps waiters past their 5 s (they are refused, never judged).
      expect(judged).toBeGreaterThan(0);
      expect(judged).toBeLessThanOrEqual(10);
    });
  });
});
