import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { migrateToLatest, openDatabase } from '../../src/db/database.js';
import type { Sql } from '../../src/db/sql.js';
import { callbackOrigin } from '../../src/emdr/pipeline/lifecycle/callback-rows.js';
import { createLogger } from '../../src/logging/logger.js';
import { MIGRATIONS } from '../../src/migrations.js';
import { createTestDatabase, openSql } from '../support/database.js';

/**
 * The receiver origin of a callback, by which deliveries are shared out and circuits kept, is
 * computed twice: by emdr_callbacks' generated column (the delivery claim's key) and by
 * callbackOrigin (the key under which a settle hands callbacks to the delivery stage). Both must
 * agree, for the addresses clinics really use: IP addresses, host names with digits, ports, queries.
 */

const URLS = [
  'http://127.0.0.1:46187/api/SendRegisterDocumentResponse',
  'http://10.0.0.5/api/SendRegisterDocumentResultResponse',
  'https://mis.clinic1.example.ru/emdr/api/SendDemandContentResponse',
  'https://mis.clinic17.example.ru/emdr/api/SendDemandContentResponse',
  'https://MIS.Clinic.example:8443/hook?x=1/api/SendDocumentFileResultResponse',
  'http://[::1]:8080/api/SendRegisterDocumentResponse',
  'https://clinic.example#frag',
];

describe('the receiver origin of a callback', () => {
  let sql: Sql;
  let expression: string;

  beforeAll(async () => {
    const databaseUrl = await createTestDatabase();
    const database = await openDatabase(loadConfig({ DATABASE_URL: databaseUrl, DATA_KEY: 'a'.repeat(64) }), createLogger('silent'), { adopt: false });
    await migrateToLatest(database, MIGRATIONS);
    await database.close();
    sql = openSql(databaseUrl);
    const pool = sql.pool;
    expression = (
      await pool.query<{ expression: string }>(
        `select pg_get_expr(d.adbin, d.adrelid) as expression
           from pg_attrdef d join pg_attribute a on a.attrelid = d.adrelid and a.attnum = d.adnum
          where d.adrelid = 'emdr_callbacks'::regclass and a.attname = 'origin'`,
      )
    ).rows[0]!.expression;
  });
  afterAll(async () => {
    await sql?.pool.end();
  });

  it('is the same in the table as in the hand-off, and two clinics whose hosts differ after a digit have two', async () => {
    const computed = await sql.pool.query<{ url: string; origin: string }>(`select url, ${expression} as origin from unnest($1::text[]) as u(url)`, [URLS]);
    const byUrl = new Map(computed.rows.map((row) => [row.url, row.origin]));
    for (const url of URLS) expect({ url, origin: byUrl.get(url) }).toEqual({ url, origin: callbackOrigin(url) });
    expect(byUrl.get(URLS[0]!)).toBe('http://127.0.0.1:46187');
    expect(byUrl.get(URLS[2]!)).not.toBe(byUrl.get(URLS[3]!));
  });
});
