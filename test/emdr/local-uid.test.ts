import { randomUUID } from 'node:crypto';
import knexFactory from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { migrationSource } from '../../src/db/migrations/index.js';
import { MIGRATIONS } from '../../src/migrations.js';
import { startCallbackReceiver, SUCCESS, type CallbackReceiver, type ReceivedCallback } from '../support/callback-receiver.js';
import { createTestDatabase } from '../support/database.js';
import { addClinic, authHeaders, openKnex, ORGANIZATION, post, registerBody } from '../support/emdr.js';
import { startTestService, type TestService } from '../support/service.js';

/** localUid is unique across the whole gateway, as the registry keeps it unique across its senders (specs/openapi.yaml, RegisterDocument). */

const OTHER_ORGANIZATION = '1.2.643.5.1.13.13.12.2.77.1111';
const THIRD_ORGANIZATION = '1.2.643.5.1.13.13.12.2.77.2222';

const registryRow = (localUid: string, organization: string, registeredAt: string) => {
  const emdrId = `26.01.${randomUUID().slice(0, 9)}`;
  return {
    emdr_id: emdrId,
    request_key: emdrId,
    local_uid: localUid,
    kind: '119',
    organization,
    patient_snils: '11223344595',
    creation_date_time: '2026-01-01T00:00:00Z',
    registration_date_time: registeredAt,
    version: 1,
    file_name: `${emdrId}.xml`,
    content: Buffer.from('<a/>'),
    signature: Buffer.from('sig'),
  };
};

describe('emdr_0010_local_uid_gateway_wide', () => {
  it('keeps the documents several organizations registered under one localUid, the earliest owning it, and refuses the localUid to anyone after', async () => {
    const knex = knexFactory({
      client: 'pg',
      connection: await createTestDatabase(),
      migrations: { migrationSource: migrationSource(MIGRATIONS), tableName: 'knex_migrations' },
    });
    try {
      // The database as interface B 1.x left it: up to emdr_0009.
      while (!((await knex.schema.hasTable('knex_migrations')) && (await knex('knex_migrations').pluck('name')).includes('emdr_0009_trace_context')))
        await knex.migrate.up();
      const shared = randomUUID();
      const earliest = registryRow(shared, ORGANIZATION, '2026-01-01T10:00:00Z');
      const later = registryRow(shared, OTHER_ORGANIZATION, '2026-01-02T10:00:00Z');
      const alone = registryRow(randomUUID(), ORGANIZATION, '2026-01-03T10:00:00Z');
      await knex('emdr_registry_documents').insert([later, earliest, alone]);

      await knex.migrate.latest();
      const rows = await knex('emdr_registry_documents').select('emdr_id', 'legacy_shared_local_uid').orderBy('registration_date_time');
      expect(rows).toEqual([
        { emdr_id: earliest.emdr_id, legacy_shared_local_uid: false },
        { emdr_id: later.emdr_id, legacy_shared_local_uid: true },
        { emdr_id: alone.emdr_id, legacy_shared_local_uid: false },
      ]);
      const insert = (row: ReturnType<typeof registryRow>) =>
        knex('emdr_registry_documents')
          .insert(row)
          .then(
            () => 'inserted',
            (error: { code?: string }) => error.code,
          );
      expect(await insert(registryRow(shared, THIRD_ORGANIZATION, '2026-02-01T10:00:00Z'))).toBe('23505');
      expect(await insert(registryRow(alone.local_uid, OTHER_ORGANIZATION, '2026-02-01T10:00:00Z'))).toBe('23505');
      expect(await insert(registryRow(randomUUID(), OTHER_ORGANIZATION, '2026-02-01T10:00:00Z'))).toBe('inserted');
    } finally {
      await knex.destroy();
    }
  });
});

describe('a localUid another clinic used', () => {
  let service: TestService;
  let receiver: CallbackReceiver;
  let first: CreatedClinicAccount;
  let second: CreatedClinicAccount;

  beforeAll(async () => {
    receiver = await startCallbackReceiver();
    receiver.reply = () => SUCCESS;
    service = await startTestService({ CALLBACK_RETRY_SCHEDULE: '0,200ms' });
    first = await addClinic(service, receiver.url, { organizations: [ORGANIZATION] });
    second = await addClinic(service, receiver.url, { organizations: [OTHER_ORGANIZATION] });
  });

  afterAll(async () => {
    await service?.stop();
    await receiver?.close();
  });

  const callbacksOf = async (queueMessageId: string, count: number): Promise<ReceivedCallback[]> => {
    const of = (received: ReceivedCallback[]) => received.filter((callback) => callback.body.queueMessageId === queueMessageId);
    await receiver.waitFor((received) => of(received).length >= count);
    return of(receiver.received);
  };
  const register = async (clinic: CreatedClinicAccount, body: Record<string, unknown>) => {
    const answer = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), body);
    expect(answer.status).toBe(200);
    return answer.body.queueMessageId as string;
  };
  const withoutQueueMessageId = (body: Record<string, unknown>) => ({ ...body, queueMessageId: undefined });

  it("is refused at acceptance with the registry's answer, word for word the one its own clinic gets for a reused localUid", async () => {
    const taken = registerBody();
    const [, registered] = await callbacksOf(await register(first, taken), 2);
    expect(registered!.body.status).toBe('success');

    const byAnother = (await callbacksOf(await register(second, registerBody({ localUid: taken.localUid, organization: OTHER_ORGANIZATION })), 1))[0]!;
    const byItself = (await callbacksOf(await register(first, registerBody({ localUid: taken.localUid, documentNumber: 'another' })), 1))[0]!;
    expect(byAnother.body).toMatchObject({
      status: 'error',
      errors: [{ code: 'NOT_UNIQUE_PROVIDED_ID', message: 'a document with this localUid is already registered' }],
    });
    expect(withoutQueueMessageId(byAnother.body)).toEqual(withoutQueueMessageId(byItself.body));
  });

  it('is refused by the built-in registry when no request of it is left (purged after RETENTION): NOT_UNIQUE_PROVIDED_ID in the result', async () => {
    const localUid = randomUUID();
    const knex = openKnex(service.databaseUrl);
    try {
      await knex('emdr_registry_documents').insert(registryRow(localUid, ORGANIZATION, '2026-01-01T10:00:00Z'));
    } finally {
      await knex.destroy();
    }
    const [acceptance, result] = await callbacksOf(await register(second, registerBody({ localUid, organization: OTHER_ORGANIZATION })), 2);
    expect(acceptance!.body.status).toBe('success');
    expect(result!.body).toMatchObject({
      status: 'error',
      errors: [{ code: 'NOT_UNIQUE_PROVIDED_ID', message: 'a document with this localUid is already registered' }],
    });
  });
});
