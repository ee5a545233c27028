import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { newUserSign, sealUserSign } from '../../src/ehr/credentials/secrets.js';
import { runCli } from '../support/cli.js';
import { startCallbackReceiver, type CallbackReceiver } from '../support/callback-receiver.js';
import { createTestDatabase } from '../support/database.js';
import { addClinic, authHeaders, openKnex, post, registerBody } from '../support/emdr.js';
import { startTestService } from '../support/service.js';

/**
 * A rotation of DATA_KEY as docs/operations.md describes it, with the service running at each step:
 * the new key beside the old one (DATA_KEY_PREVIOUS), `data-key rotate`, `data-key check`, the old
 * key dropped. Every secret stays readable and every callback verifies with the clinic's secret.
 */
const OLD_KEY = randomBytes(32).toString('hex');
const NEW_KEY = randomBytes(32).toString('hex');
let databaseUrl: string;
let receiver: CallbackReceiver;
let clinic: CreatedClinicAccount;
const USER_ID = 'rotation-user';

beforeAll(async () => {
  databaseUrl = await createTestDatabase();
  receiver = await startCallbackReceiver();
});

afterAll(async () => {
  await receiver?.close();
});

/** A service on the test database with these keys registers a document; its acceptance callback must verify with the clinic's secret. */
async function deliversWith(keys: Record<string, string>): Promise<void> {
  const service = await startTestService({ DATABASE_URL: databaseUrl, CALLBACK_RETRY_SCHEDULE: '0,200ms', ...keys }, ['emdr', 'worker']);
  try {
    clinic ??= await addClinic(service, receiver.url);
    receiver.signingSecret = clinic.signingSecret;
    const answer = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody());
    expect(answer.status).toBe(200);
    const queueMessageId = answer.body.queueMessageId as string;
    const [acceptance] = await receiver
      .waitFor((received) => received.some((callback) => callback.body.queueMessageId === queueMessageId))
      .then(() => receiver.received.filter((callback) => callback.body.queueMessageId === queueMessageId));
    expect(acceptance!.signatureValid).toBe(true);
    expect(acceptance!.headers.token).toBe(clinic.callbackCredentials.token);
  } finally {
    await service.stop();
  }
}

const dataKey = async (command: 'check' | 'rotate', keys: Record<string, string>) => {
  const result = await runCli(['data-key', command], { DATABASE_URL: databaseUrl, ...keys });
  return {
    code: result.code,
    stderr: result.stderr,
    report: result.stdout ? (JSON.parse(result.stdout) as { columns: Array<Record<string, unknown>>; total: Record<string, number> }) : undefined,
  };
};

describe('rotating DATA_KEY without downtime', () => {
  it('reads under both keys, re-seals everything under the new one, and runs on the new one alone', async () => {
    await deliversWith({ DATA_KEY: OLD_KEY });
    const knex = openKnex(databaseUrl);
    try {
      await knex('ehr_user_links').insert({
        user_id: USER_ID,
        patient_id: 'demo-1',
        user_sign_sealed: sealUserSign(Buffer.from(OLD_KEY, 'hex'), USER_ID, newUserSign()),
      });
    } finally {
      await knex.destroy();
    }
    const both = { DATA_KEY: NEW_KEY, DATA_KEY_PREVIOUS: OLD_KEY };

    // 1. The new key beside the old one: the service opens the old secrets and works on.
    await deliversWith(both);
    const before = await dataKey('check', both);
    expect(before.code).toBe(1);
    expect(before.report!.total).toEqual({ sealed: 3, current: 0, previous: 3, resealed: 0, unreadable: 0 });
    expect(before.report!.columns.map((column) => column.column)).toEqual([
      'ehr_user_links.user_sign_sealed',
      'emdr_clients.callback_token_sealed',
      'emdr_clients.signing_secret_sealed',
      'emdr_clients.signing_secret_next_sealed',
    ]);

    // 2. Re-seal; running it again changes nothing.
    const rotated = await dataKey('rotate', both);
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(rotated.report!.total).toMatchObject({ sealed: 3, previous: 3, resealed: 3, unreadable: 0 });
    expect((await dataKey('rotate', both)).report!.total).toMatchObject({ current: 3, resealed: 0 });

    // 3. Everything opens with the new key alone; the old key alone opens nothing.
    const after = await dataKey('check', { DATA_KEY: NEW_KEY });
    expect(after.code).toBe(0);
    expect(after.report!.total).toEqual({ sealed: 3, current: 3, previous: 0, resealed: 0, unreadable: 0 });
    const oldOnly = await dataKey('check', { DATA_KEY: OLD_KEY });
    expect(oldOnly.code).toBe(1);
    expect(oldOnly.report!.total.unreadable).toBe(3);

    // 4. The old key dropped: the service runs on the new key alone, and on the new key as "previous" (a process not yet restarted in step 1 of a rolling rotation).
    await deliversWith({ DATA_KEY: NEW_KEY });
    await deliversWith({ DATA_KEY: OLD_KEY, DATA_KEY_PREVIOUS: NEW_KEY });
  });

  it('refuses a DATA_KEY_PREVIOUS that is DATA_KEY itself, in one line with exit code 2', async () => {
    const result = await dataKey('check', { DATA_KEY: NEW_KEY, DATA_KEY_PREVIOUS: NEW_KEY });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('ehr-gateway: DATA_KEY_PREVIOUS: is the same key as DATA_KEY\n');
  });
});
