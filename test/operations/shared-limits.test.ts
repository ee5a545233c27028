import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { openDatabase } from '../../src/db/database.js';
import { seedDemoPatients } from '../../src/ehr/patients/patients.js';
import { loadConfig } from '../../src/config/config.js';
import { createLogger } from '../../src/logging/logger.js';
import { INTERNAL_PASSWORD, INTERNAL_USER, INTERNAL_USERS, unique } from '../ehr/support/fixtures.js';
import { rpc, sha1hex, VERSION } from '../ehr/support/rpc.js';
import { createTestDatabase } from '../support/database.js';
import { addClinic, authHeaders, largeXml, registerBody } from '../support/emdr.js';
import { startServeProcess, type ServeProcess } from '../support/processes.js';

/**
 * Issue 21: RATE_LIMIT, BYTE_QUOTA, RPC_RATE_LIMIT and the internal failure limit hold across the
 * API processes of one database (before, each process counted alone: N processes allowed N times).
 * Two `serve --only emdr` and two `serve --only ehr` processes on one database.
 */

const status = async (url: string, init: RequestInit) => (await fetch(url, init)).status;

describe('limits shared by the processes of one database', () => {
  const processes: ServeProcess[] = [];
  let emdr: [ServeProcess, ServeProcess];
  let ehr: [ServeProcess, ServeProcess];
  let clinics: CreatedClinicAccount[];

  beforeAll(async () => {
    const shared = {
      DATABASE_URL: await createTestDatabase(),
      DATA_KEY: randomBytes(32).toString('hex'),
      INTERNAL_USERS,
      RATE_LIMIT: '20',
      BODY_LIMIT: '1mb',
      BYTE_QUOTA: '1mb',
      RPC_RATE_LIMIT: '20',
      INTERNAL_AUTH_MAX_FAILURES: '4',
    };
    // One after the other: the first applies the migrations.
    for (const role of ['emdr', 'emdr', 'ehr', 'ehr']) processes.push(await startServeProcess(shared, ['serve', '--only', role]));
    emdr = [processes[0]!, processes[1]!];
    ehr = [processes[2]!, processes[3]!];
    const service = { databaseUrl: shared.DATABASE_URL, dataKey: Buffer.from(shared.DATA_KEY, 'hex') };
    clinics = [await addClinic(service, 'http://127.0.0.1:9'), await addClinic(service, 'http://127.0.0.1:9')];
    const database = await openDatabase(loadConfig(shared), createLogger('silent'), { adopt: false });
    await seedDemoPatients(database.knex);
    await database.close();
  });

  afterAll(async () => {
    await Promise.all(processes.map((process) => process.stop()));
  });

  it('holds RATE_LIMIT across two emdr processes: 20 requests of a clinic a minute in all, not 20 each', async () => {
    const statuses: number[] = [];
    for (let request = 0; request < 30; request += 1) {
      const via = emdr[request % 2]!;
      statuses.push(await status(`${via.publicUrl}/api/SearchRegistryItem`, { method: 'POST', headers: authHeaders(clinics[0]!), body: '{}' }));
    }
    // Before: 30 answered 200, 15 by each process.
    expect(statuses.filter((code) => code === 200)).toHaveLength(20);
    expect(statuses.filter((code) => code === 429)).toHaveLength(10);
  });

  it('holds BYTE_QUOTA across two emdr processes', async () => {
    const body = JSON.stringify(registerBody({ document: largeXml(440 * 1024).toString('base64') }));
    expect(body.length).toBeGreaterThan(512 * 1024);
    const first = await status(`${emdr[0].publicUrl}/api/RegisterDocument`, { method: 'POST', headers: authHeaders(clinics[1]!), body });
    const second = await status(`${emdr[1].publicUrl}/api/RegisterDocument`, { method: 'POST', headers: authHeaders(clinics[1]!), body });
    // Before: both 200, each process counting its own megabyte.
    expect([first, second]).toEqual([200, 429]);
  });

  it('holds RPC_RATE_LIMIT across two ehr processes', async () => {
    const statuses: number[] = [];
    for (let call = 0; call < 30; call += 1) {
      statuses.push(
        await status(`${ehr[call % 2]!.publicUrl}/${VERSION}/`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id: call, method: 'patient.get_patient', params: {}, cred: { user: 'u', token: 't' } }),
        }),
      );
    }
    expect(statuses.filter((code) => code === 200)).toHaveLength(20);
    expect(statuses.filter((code) => code === 429)).toHaveLength(10);
  });

  it('holds the internal failure limit across two ehr processes: 2 failures on each refuse the right credential on either', async () => {
    const exchangeToken = unique('exchange');
    const params = { exchangeToken, authInfo: { user: unique('user'), token: unique('token'), ttl: 60, phone: '+79161234567' } };
    for (const via of [ehr[0], ehr[1], ehr[0], ehr[1]]) {
      expect(
        (await rpc(via.internalUrl, 'embedded_storage.save_exchange_token', params, { user: INTERNAL_USER, token: sha1hex(`wrong${exchangeToken}`) })).error
          ?.data?.reason,
      ).toBe('credentials rejected');
    }
    // Before: each process had seen 2 failures of its limit of 4, and stored the token.
    const right = await rpc(ehr[0].internalUrl, 'embedded_storage.save_exchange_token', params, {
      user: INTERNAL_USER,
      token: sha1hex(INTERNAL_PASSWORD + exchangeToken),
    });
    expect(right.error?.data?.reason).toBe('too many failures, retry later');
  });
});
