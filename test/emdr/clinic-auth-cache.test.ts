import type { IncomingMessage } from 'node:http';
import { randomBytes, randomUUID } from 'node:crypto';
import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationSource } from '../../src/db/migrations/index.js';
import { Sql, type Statement } from '../../src/db/sql.js';
import { ClinicAuthCache } from '../../src/emdr/accounts/auth-cache.js';
import { createClinicAccount, type CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { setAccountDisabled } from '../../src/emdr/accounts/store.js';
import { clinicSecurityHandlers } from '../../src/emdr/intake/handlers.js';
import { MIGRATIONS } from '../../src/migrations.js';
import { createTestDatabase } from '../support/database.js';
import { ORGANIZATION } from '../support/emdr.js';

/** The runtime's Sql on the test database, counting the account lookups it is asked for. */
class CountingSql extends Sql {
  lookups = 0;
  override row<R>(statement: Statement, values?: readonly unknown[]): Promise<R | undefined> {
    if (statement.name === 'emdr_clinic_account') this.lookups += 1;
    return super.row<R>(statement, values);
  }
}

const headersOf = (clinic: CreatedClinicAccount, token = clinic.token) =>
  ({ headers: { businessid: clinic.businessId, user: clinic.user, token } }) as unknown as IncomingMessage;

/**
 * Issue 21, M4: a clinic refused 429 a thousand times a second cost a PostgreSQL lookup per refusal
 * (a third of the event loop's time, and the pool's connections). A successful authentication is
 * kept for CLINIC_AUTH_CACHE; failures never are.
 */
describe('clinic authentication (the Token security handler)', () => {
  let knex: Knex;
  let sql: CountingSql;
  let clinic: CreatedClinicAccount;

  beforeAll(async () => {
    const databaseUrl = await createTestDatabase();
    knex = knexFactory({ client: 'pg', connection: databaseUrl, migrations: { migrationSource: migrationSource(MIGRATIONS) } });
    await knex.migrate.latest();
    sql = new CountingSql(new pg.Pool({ connectionString: databaseUrl, max: 2 }));
    clinic = await createClinicAccount(knex, randomBytes(32), {
      businessId: `b-${randomUUID().slice(0, 8)}`,
      user: 'mis',
      callbackUrls: ['http://127.0.0.1:9'],
      organizations: [ORGANIZATION],
    });
  });

  afterAll(async () => {
    await sql?.pool.end();
    await knex?.destroy();
  });

  it("looks a clinic's headers up once within CLINIC_AUTH_CACHE, not once per request", async () => {
    const token = clinicSecurityHandlers(sql, new ClinicAuthCache(5000)).Token!;
    sql.lookups = 0;
    const accounts = [];
    for (let request = 0; request < 20; request += 1) accounts.push(await token(headersOf(clinic)));
    expect(accounts.map((account) => (account as { businessId?: string }).businessId)).toEqual(Array(20).fill(clinic.businessId));
    expect(sql.lookups).toBe(1);
  });

  it('never keeps a failure: a wrong token is looked up and refused every time, also after the right one succeeded', async () => {
    const token = clinicSecurityHandlers(sql, new ClinicAuthCache(5000)).Token!;
    expect(await token(headersOf(clinic))).toMatchObject({ businessId: clinic.businessId });
    sql.lookups = 0;
    for (let request = 0; request < 3; request += 1) expect(await token(headersOf(clinic, `${clinic.token}x`))).toBe(false);
    expect(sql.lookups).toBe(3);
  });

  it('refuses a disabled account once its kept authentication is CLINIC_AUTH_CACHE old (accepted until then, as docs/security.md says)', async () => {
    let now = 1_000_000;
    const token = clinicSecurityHandlers(sql, new ClinicAuthCache(5000, () => now)).Token!;
    const other = await createClinicAccount(knex, randomBytes(32), {
      businessId: `b-${randomUUID().slice(0, 8)}`,
      user: 'mis',
      callbackUrls: ['http://127.0.0.1:9'],
      organizations: [ORGANIZATION],
    });
    try {
      expect(await token(headersOf(other))).toMatchObject({ businessId: other.businessId });
      expect(await setAccountDisabled(knex, other.businessId, other.user, true)).toBe(true);
      now += 4999;
      expect(await token(headersOf(other))).toMatchObject({ businessId: other.businessId });
      now += 1;
      expect(await token(headersOf(other))).toBe(false);
    } finally {
      await setAccountDisabled(knex, other.businessId, other.user, false);
    }
  });

  it('looks every request up with CLINIC_AUTH_CACHE=0', async () => {
    const token = clinicSecurityHandlers(sql, new ClinicAuthCache(0)).Token!;
    sql.lookups = 0;
    for (let request = 0; request < 3; request += 1) expect(await token(headersOf(clinic))).toMatchObject({ businessId: clinic.businessId });
    expect(sql.lookups).toBe(3);
  });
});
