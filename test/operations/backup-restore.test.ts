import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { seedDemoPatients } from '../../src/ehr/patients/patients.js';
import { runCli, repoRoot } from '../support/cli.js';
import { startCallbackReceiver, type ReceivedCallback, type Reply } from '../support/callback-receiver.js';
import { createTestDatabase } from '../support/database.js';
import { addClinic, authHeaders, openKnex, post, registerBody } from '../support/emdr.js';
import { startTestService, type TestService } from '../support/service.js';
import { until } from '../support/until.js';
import { authenticatedUser, databaseOf, getPatient, INTERNAL_USERS } from '../ehr/support/fixtures.js';

const run = promisify(execFile);

/**
 * The restore drill of docs/operations.md, performed: pg_dump of a live database (the service
 * running, a callback pending), pg_restore into a fresh database, the service on it with the same
 * DATA_KEY reads every sealed secret (data-key check) and delivers the pending callback; without
 * the key, nothing sealed opens.
 */
const PG_BIN = path.join(repoRoot, '.tools/pg-client/embedded_postgres/pginstall/bin');
const DATA_KEY = randomBytes(32).toString('hex');
/** The clinic's system down behind its proxy: every attempt fails, and the callback waits. */
const UNAVAILABLE: Reply = { status: 503, body: { status: 'Error', message: 'unavailable' } };

let folder: string;

beforeAll(() => {
  expect(fs.existsSync(path.join(PG_BIN, 'pg_dump')), `${PG_BIN}/pg_dump is missing: run make deploy-tools`).toBe(true);
  folder = fs.mkdtempSync(path.join(os.tmpdir(), 'ehr-gateway-drill-'));
});

afterAll(() => {
  fs.rmSync(folder, { recursive: true, force: true });
});

// A dump taken while a worker holds the callback (an attempt under way) keeps its lease: the service
// on the restored database takes it once the lease ends, JOB_EXPIRY after the claim.
const startService = (databaseUrl: string) =>
  startTestService({ DATABASE_URL: databaseUrl, DATA_KEY, INTERNAL_USERS, JOB_EXPIRY: '6s', CALLBACK_RETRY_SCHEDULE: `0,${Array(120).fill('1s').join(',')}` });

describe('backup and restore', () => {
  it('restores a live dump into a fresh database: every sealed secret opens with the key, the pending callback is delivered', async () => {
    const original = await createTestDatabase();
    // The clinic's receiver, held by this test throughout on a port of its own (0), so that no other process
    // can take its port before the restore; it refuses every callback until the service runs on the restored database.
    const receiver = await startCallbackReceiver();
    onTestFinished(() => receiver.close());
    const clinicPolicy = receiver.reply;
    receiver.reply = () => UNAVAILABLE;
    let service: TestService | undefined = await startService(original);
    let before;
    try {
      const database = await databaseOf(service);
      await seedDemoPatients(database.knex);
      await database.close();
      const user = await authenticatedUser(service);
      const clinic = await addClinic(service, receiver.url);
      receiver.signingSecret = clinic.signingSecret;
      // The clinic's system is down: the acceptance callback waits, pending.
      const answer = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody());
      expect(answer.status).toBe(200);
      const queueMessageId = answer.body.queueMessageId as string;
      before = { user, clinic, queueMessageId };
      // The drill's state: the request accepted and its callback pending after a failed attempt (a dump
      // taken while the acceptance held the request would restore it leased, to be checked again later).
      const knex = openKnex(original);
      try {
        await until(
          'the acceptance callback pending after an attempt',
          () =>
            knex('emdr_callbacks as c')
              .join('emdr_callback_attempts as a', 'a.callback_id', 'c.id')
              .where({ 'c.queue_message_id': queueMessageId, 'c.state': 'pending' })
              .count({ n: '*' }),
          (rows) => Number(rows[0]!.n) > 0,
          60_000,
        );
      } finally {
        await knex.destroy();
      }

      // 1. The backup, while the service runs: pg_dump's snapshot is consistent without stopping anything.
      await run(path.join(PG_BIN, 'pg_dump'), ['--format=custom', '--no-owner', `--file=${path.join(folder, 'ehr-gateway.dump')}`, original]);
    } finally {
      await service.stop();
      service = undefined;
    }

    // 2. The restore, into a database that has never seen the service.
    const restored = await createTestDatabase();
    await run(path.join(PG_BIN, 'pg_restore'), ['--no-owner', '--exit-on-error', `--dbname=${restored}`, path.join(folder, 'ehr-gateway.dump')]);

    // 3. Every sealed secret opens with the backup's key, and with no other.
    const check = await runCli(['data-key', 'check'], { DATABASE_URL: restored, DATA_KEY });
    expect(check.code, check.stderr).toBe(0);
    const { total } = JSON.parse(check.stdout) as { total: Record<string, number> };
    // The user's user_sign, the clinic's callback token and signing secret.
    expect(total).toEqual({ sealed: 3, current: 3, previous: 0, resealed: 0, unreadable: 0 });
    const otherKey = await runCli(['data-key', 'check'], { DATABASE_URL: restored, DATA_KEY: randomBytes(32).toString('hex') });
    expect(otherKey.code).toBe(1);
    expect((JSON.parse(otherKey.stdout) as { total: Record<string, number> }).total.unreadable).toBe(3);

    // 4. The service on the restored database: the session and its user_sign, and the pending callback delivered, signed with the clinic's secret.
    // Only what arrives from now on counts: the attempts refused came from the service before the dump.
    const refused = receiver.received.length;
    const delivered = (received: ReceivedCallback[]) => received.slice(refused).filter((callback) => callback.body.queueMessageId === before.queueMessageId);
    receiver.reply = clinicPolicy;
    service = await startService(restored);
    try {
      const patient = await getPatient(service, before.user.cred);
      expect((patient.result as { user_sign: string }).user_sign).toBe(before.user.userSign);
      const [acceptance] = delivered(await receiver.waitFor((received) => delivered(received).length > 0, 60_000));
      expect(acceptance!.name).toBe('SendRegisterDocumentResponse');
      expect(acceptance!.signatureValid).toBe(true);
      expect(acceptance!.headers.token).toBe(before.clinic.callbackCredentials.token);
    } finally {
      await service.stop();
    }
  }, 180_000);
});
