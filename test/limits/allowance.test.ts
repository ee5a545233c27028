import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { migrateToLatest, openDatabase } from '../../src/db/database.js';
import { SharedAllowance } from '../../src/limits/allowance.js';
import { COUNTERS_TABLE } from '../../src/limits/counters.js';
import { createLogger } from '../../src/logging/logger.js';
import { MIGRATIONS } from '../../src/migrations.js';
import { createTestDatabase } from '../support/database.js';

/** How many of `count` takes of `amount` points the allowances grant, one after the other, spread over them in turn. */
async function granted(allowances: SharedAllowance[], key: string, count: number, amount = 1): Promise<number> {
  let taken = 0;
  for (let index = 0; index < count; index += 1) if ((await allowances[index % allowances.length]!.take(key, amount)) === undefined) taken += 1;
  return taken;
}

describe('SharedAllowance', () => {
  it('grants exactly the allowance in one process, whatever the sizes of the takes, then tells how long to wait', async () => {
    const allowance = new SharedAllowance('memory', { name: 'test', perWindow: 600, windowMs: 60_000 });
    expect(await granted([allowance], 'clinic', 700)).toBe(600);
    const wait = await allowance.take('clinic', 1);
    expect(wait).toBeGreaterThan(50_000);
    expect(wait).toBeLessThanOrEqual(60_000);
    // Bytes: takes of varied sizes use the allowance to the last point.
    const bytes = new SharedAllowance('memory', { name: 'bytes', perWindow: 1000, windowMs: 60_000 });
    for (const amount of [300, 17, 250, 400]) expect(await bytes.take('clinic', amount)).toBeUndefined();
    expect(await bytes.take('clinic', 34)).toBeDefined();
    expect(await bytes.take('clinic', 33)).toBeUndefined();
    expect(await bytes.take('clinic', 1)).toBeDefined();
    // Another key has its own allowance; more than a whole window never fits.
    expect(await bytes.take('other', 1000)).toBeUndefined();
    expect(await bytes.take('third', 1001)).toBe(60_000);
  });

  it('serves concurrent takes of one key from one lease at a time without granting a point twice', async () => {
    const allowance = new SharedAllowance('memory', { name: 'test', perWindow: 100, windowMs: 60_000 });
    const answers = await Promise.all(Array.from({ length: 150 }, () => allowance.take('clinic', 1)));
    expect(answers.filter((answer) => answer === undefined)).toHaveLength(100);
  });

  describe('across processes, on one database', () => {
    let databaseUrl: string;
    const pools: pg.Pool[] = [];

    beforeAll(async () => {
      databaseUrl = await createTestDatabase();
      const database = await openDatabase(loadConfig({ DATABASE_URL: databaseUrl, DATA_KEY: 'a'.repeat(64) }), createLogger('silent'), { adopt: false });
      await migrateToLatest(database, MIGRATIONS);
      await database.close();
      for (let process = 0; process < 3; process += 1) pools.push(new pg.Pool({ connectionString: databaseUrl, max: 4 }));
    });

    afterAll(async () => {
      await Promise.all(pools.map((pool) => pool.end()));
    });

    it('holds RATE_LIMIT across three processes: never more than the allowance, at most two leases short of it', async () => {
      const allowances = pools.map((pool) => new SharedAllowance({ pool }, { name: 'clinic-requests', perWindow: 600, windowMs: 60_000 }));
      const taken = await granted(allowances, '42', 3 * 600);
      // Each process alone would have granted 600 (1,800 in all), as the per-process counts did.
      expect(taken).toBeLessThanOrEqual(600);
      expect(taken).toBeGreaterThanOrEqual(600 - 2 * (600 / 20));
    });

    it('asks the database about once per lease, not once per take', async () => {
      const pool = pools[0]!;
      let queries = 0;
      const counting = new Proxy(pool, {
        get: (target, name) =>
          name === 'query'
            ? (...args: unknown[]) => {
                queries += 1;
                return (target.query as (...a: unknown[]) => unknown)(...args);
              }
            : Reflect.get(target, name),
      });
      const allowance = new SharedAllowance({ pool: counting as pg.Pool }, { name: 'rpc-calls', perWindow: 1200, windowMs: 60_000 });
      expect(await granted([allowance], '203.0.113.7', 600)).toBe(600);
      // 600 takes from leases of 60 points: 10 upserts.
      expect(queries).toBe(10);
      const { rows } = await pool.query(`select points from ${COUNTERS_TABLE} where key = 'rpc-calls:203.0.113.7'`);
      expect(rows[0].points).toBe(600);
    });
  });
});
