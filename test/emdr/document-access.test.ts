import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import type { Sql } from '../../src/db/sql.js';
import { AcceptanceStage } from '../../src/emdr/pipeline/stages/acceptance.js';
import { DocumentCheckPool } from '../../src/emdr/pipeline/document-check/document-check.js';
import { OutcomeRecorder } from '../../src/emdr/pipeline/stages/outcome.js';
import { SubmissionStage } from '../../src/emdr/pipeline/stages/submission.js';
import { BuiltInRegistry } from '../../src/emdr/registry/built-in.js';
import { createLogger } from '../../src/logging/logger.js';
import { startCallbackReceiver, SUCCESS, type CallbackReceiver, type ReceivedCallback } from '../support/callback-receiver.js';
import { addClinic, authHeaders, FIXTURE_XML, openKnex, ORGANIZATION, post, registerBody, VALID_SNILS } from '../support/emdr.js';
import { openSql } from '../support/database.js';
import { startTestService, type TestService } from '../support/service.js';
import { until } from '../support/until.js';

/** Who may demand, find and read a registered document (specs/openapi.yaml, DemandContent, SearchRegistryItem and GetRegistryItem). */

const OTHER_ORGANIZATION = '1.2.643.5.1.13.13.12.2.77.1111';
/** Another patient's SNILS, with a valid check number. */
const OTHER_SNILS = '087-654-321 10';

let service: TestService;
let receiver: CallbackReceiver;
let owner: CreatedClinicAccount;
let other: CreatedClinicAccount;
let everyOrganization: CreatedClinicAccount;
let emdrId: string;

const of = (queueMessageId: string) => (received: ReceivedCallback[]) => received.filter((callback) => callback.body.queueMessageId === queueMessageId);

async function callbacksOf(queueMessageId: string, count: number): Promise<ReceivedCallback[]> {
  await receiver.waitFor((received) => of(queueMessageId)(received).length >= count);
  return of(queueMessageId)(receiver.received);
}

async function demand(clinic: CreatedClinicAccount, body: Record<string, unknown>) {
  const answer = await post(service.publicUrl, '/api/DemandContent', authHeaders(clinic), body);
  expect(answer.status).toBe(200);
  return answer.body.queueMessageId as string;
}

/** The file the request ended in, or its acceptance error, once its callbacks are in. */
async function delivered(queueMessageId: string): Promise<Buffer> {
  const [acceptance, file] = await callbacksOf(queueMessageId, 2);
  expect(acceptance!.body.status).toBe('success');
  expect(file!.name).toBe('SendDocumentFileResultResponse');
  return Buffer.from((file!.body.document as { content: string }).content, 'base64');
}

async function messageState(clinic: CreatedClinicAccount, queueMessageId: string) {
  return (await fetch(`${service.publicUrl}/api/messages/${queueMessageId}`, { headers: authHeaders(clinic) })).json();
}

/** A callback body or message state without what differs between any two requests: ids and times. */
function withoutIds(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutIds);
  if (value === null || typeof value !== 'object') return value;
  const ids = ['queueMessageId', 'clientMessageId', 'emdrId', 'webhookId', 'at', 'durationMs', 'createdAt', 'updatedAt', 'deliveredAt'];
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => !ids.includes(key))
      .map(([key, item]) => [key, withoutIds(item)]),
  );
}

beforeAll(async () => {
  receiver = await startCallbackReceiver();
  // Each account has its own signing secret; signatures are checked in flows.test.ts.
  receiver.reply = () => SUCCESS;
  service = await startTestService({ CALLBACK_RETRY_SCHEDULE: '0,200ms' });
  owner = await addClinic(service, receiver.url, { organizations: [ORGANIZATION] });
  other = await addClinic(service, receiver.url, { organizations: [OTHER_ORGANIZATION] });
  everyOrganization = await addClinic(service, receiver.url, { organizations: null });
  const { body: ack } = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(owner), registerBody({ patientSnils: VALID_SNILS }));
  const [, result] = await callbacksOf(ack.queueMessageId, 2);
  expect(result!.body.status).toBe('success');
  emdrId = result!.body.emdrId as string;
});

afterAll(async () => {
  await service?.stop();
  await receiver?.close();
});

describe('DemandContent', () => {
  it("delivers a document of the clinic's own organization without a SNILS", async () => {
    expect((await delivered(await demand(owner, { emdrId }))).equals(FIXTURE_XML)).toBe(true);
  });

  it("delivers another organization's document when the request names its patient", async () => {
    expect((await delivered(await demand(other, { emdrId, patientSnils: '11223344595' }))).equals(FIXTURE_XML)).toBe(true);
  });

  it('delivers any document to an account that acts for every organization', async () => {
    expect((await delivered(await demand(everyOrganization, { emdrId }))).equals(FIXTURE_XML)).toBe(true);
  });

  it("answers another organization's document without the SNILS, or with another patient's, exactly as an unknown emdrId", async () => {
    const unknownEmdrId = emdrId.replace(/\d$/, (digit) => String((Number(digit) + 1) % 10));
    const cases = {
      withoutSnils: await demand(other, { emdrId }),
      wrongSnils: await demand(other, { emdrId, patientSnils: OTHER_SNILS }),
      unknownEmdrId: await demand(other, { emdrId: unknownEmdrId }),
    };
    const acceptances = await Promise.all(Object.values(cases).map(async (id) => (await callbacksOf(id, 1))[0]!));
    expect(acceptances.map((callback) => callback.name)).toEqual(Array(3).fill('SendDemandContentResponse'));
    expect(acceptances[0]!.body).toMatchObject({
      status: 'error',
      errors: [{ code: 'REGISTRY_ITEM_NOT_FOUND', message: 'no registry item with this emdrId' }],
    });
    for (const acceptance of acceptances) expect(withoutIds(acceptance.body)).toEqual(withoutIds(acceptances[0]!.body));

    // Nothing follows: a file request delivered later by the same worker overtakes them.
    await delivered(await demand(owner, { emdrId }));
    const states = await Promise.all(Object.values(cases).map((id) => messageState(other, id)));
    expect(states[0]).toMatchObject({ state: 'rejected', callbacks: [{ name: 'SendDemandContentResponse', state: 'delivered' }] });
    expect(states[0].callbacks).toHaveLength(1);
    for (const state of states) expect(withoutIds(state)).toEqual(withoutIds(states[0]));
    for (const id of Object.values(cases)) expect(of(id)(receiver.received)).toHaveLength(1);
  });

  it('records each delivery to an account that does not list the organization: who, which emdrId, when, and no personal data', async () => {
    const knex = openKnex(service.databaseUrl);
    try {
      const { rows } = await knex.raw(`select row_to_json(d)::text as text, d.* from emdr_document_disclosures d order by id`);
      const clientId = async (clinic: CreatedClinicAccount) => String((await knex('emdr_clients').where({ business_id: clinic.businessId }).first('id')).id);
      expect(rows.map((row: Record<string, unknown>) => [String(row.client_id), row.emdr_id, row.delivered_emdr_id, row.organization, row.basis])).toEqual([
        [await clientId(other), emdrId, emdrId, ORGANIZATION, 'patient'],
        [await clientId(everyOrganization), emdrId, emdrId, ORGANIZATION, 'all-organizations'],
      ]);
      for (const row of rows) {
        expect(Date.now() - (row.at as Date).getTime()).toBeLessThan(120_000);
        expect(row.text).not.toMatch(/11223344595|112-233-445/);
      }
    } finally {
      await knex.destroy();
    }
  });
});

describe('RegisterDocument replaces', () => {
  it("answers a new version of another organization's document exactly as one of an unknown emdrId", async () => {
    const unknownEmdrId = emdrId.replace(/\d$/, (digit) => String((Number(digit) + 1) % 10));
    const register = async (replaces: string) => {
      const answer = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(other), registerBody({ organization: OTHER_ORGANIZATION, replaces }));
      expect(answer.status).toBe(200);
      return (await callbacksOf(answer.body.queueMessageId as string, 2))[1]!;
    };
    const otherOrganizations = await register(emdrId);
    const unknown = await register(unknownEmdrId);
    expect(otherOrganizations.name).toBe('SendRegisterDocumentResultResponse');
    expect(otherOrganizations.body).toMatchObject({ status: 'error', errors: [{ code: 'REGISTRY_ITEM_NOT_FOUND' }] });
    const withoutLocalUid = (body: Record<string, unknown>) => withoutIds({ ...body, localUid: undefined });
    expect(withoutLocalUid(otherOrganizations.body)).toEqual(withoutLocalUid(unknown.body));
  });
});

describe('SearchRegistryItem', () => {
  const found = async (clinic: CreatedClinicAccount, criteria: Record<string, unknown>) =>
    ((await post(service.publicUrl, '/api/SearchRegistryItem', authHeaders(clinic), criteria)).body.items as Array<{ emdrId: string }>).map(
      (item) => item.emdrId,
    );

  it("finds the clinic's own organizations' documents without a SNILS, and a patient's documents of every organization with it", async () => {
    expect(await found(owner, {})).toContain(emdrId);
    expect(await found(other, {})).not.toContain(emdrId);
    expect(await found(other, { patientSnils: VALID_SNILS })).toEqual([emdrId]);
    expect(await found(other, { patientSnils: OTHER_SNILS })).toEqual([]);
    expect(await found(everyOrganization, {})).toContain(emdrId);
  });
});

describe('GetRegistryItem', () => {
  const read = (clinic: CreatedClinicAccount, id: string) => post(service.publicUrl, '/api/GetRegistryItem', authHeaders(clinic), { emdrId: id });

  it("reads a record of the clinic's own organizations, with its patient", async () => {
    const answer = await read(owner, emdrId);
    expect(answer.status).toBe(200);
    expect(answer.body.item).toMatchObject({ emdrId, organization: ORGANIZATION, patientSnils: '11223344595', version: 1, kind: registerBody().kind });
    expect((await read(everyOrganization, emdrId)).body.item.emdrId).toBe(emdrId);
  });

  it("answers another organization's record exactly as an unknown emdrId: 404 REGISTRY_ITEM_NOT_FOUND", async () => {
    const unknownEmdrId = emdrId.replace(/\d$/, (digit) => String((Number(digit) + 1) % 10));
    const otherOrganizations = await read(other, emdrId);
    const unknown = await read(owner, unknownEmdrId);
    expect(otherOrganizations.status).toBe(404);
    expect(otherOrganizations.body).toEqual({
      status: 'Error',
      errors: [{ code: 'REGISTRY_ITEM_NOT_FOUND', message: 'no registry item with this emdrId', path: '/requestBody/emdrId' }],
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual(otherOrganizations.body);
    // The patient's SNILS opens the search and the file, never the record.
    expect((await post(service.publicUrl, '/api/GetRegistryItem', authHeaders(other), { emdrId, patientSnils: VALID_SNILS })).status).toBe(400);
  });
});

describe('a newer version of another patient, registered between acceptance and delivery', () => {
  let api: TestService;
  let knex: Knex;
  let sql: Sql;
  const documents = new DocumentCheckPool(1);

  beforeAll(async () => {
    // Interface B without workers: the test runs the acceptance and registry stages itself.
    api = await startTestService({}, ['emdr']);
    knex = openKnex(api.databaseUrl);
    sql = openSql(api.databaseUrl);
  });

  afterAll(async () => {
    await documents.close();
    await sql?.pool.end();
    await knex?.destroy();
    await api?.stop();
  });

  const registryRow = (id: string, patientSnils: string, version: number) => ({
    emdr_id: id,
    request_key: id,
    local_uid: randomUUID(),
    kind: '6',
    organization: ORGANIZATION,
    patient_snils: patientSnils,
    creation_date_time: new Date(),
    registration_date_time: new Date(),
    version,
    file_name: `${id}.xml`,
    content: FIXTURE_XML,
    signature: Buffer.from('signature'),
  });

  it('withholds the file: the request fails as for an unknown emdrId, keeps no copy and records no delivery', async () => {
    await knex('emdr_registry_documents').insert(registryRow('26.01.000000001', '11223344595', 1));
    const clinic = await addClinic(api, receiver.url, { organizations: [OTHER_ORGANIZATION] });
    const { body: ack } = await post(api.publicUrl, '/api/DemandContent', authHeaders(clinic), { emdrId: '26.01.000000001', patientSnils: VALID_SNILS });
    const logger = createLogger('silent');
    const registry = new BuiltInRegistry(sql, { latencyMs: 0, fail: false, logger });
    const context = { sql, registry, retryScheduleMs: [0], logger, dataKey: api.dataKey, xmlCheckTimeoutMs: 10_000, leaseMs: 30_000, deadlineMs: 60_000 };
    const acceptance = new AcceptanceStage(context, documents);
    const checked = await Promise.all((await acceptance.claim(10, new Map(), 10, [])).map(acceptance.check));
    expect((await acceptance.settle(checked)).moved).toEqual(new Set([ack.queueMessageId]));
    expect(await knex('emdr_requests').where({ queue_message_id: ack.queueMessageId }).first('state')).toEqual({ state: 'accepted' });

    await knex('emdr_registry_documents').insert({ ...registryRow('26.01.000000002', '08765432110', 2), replaces: '26.01.000000001' });
    await knex('emdr_registry_documents').where({ emdr_id: '26.01.000000001' }).update({ superseded_by: '26.01.000000002' });
    const submission = new SubmissionStage(context);
    await submission.process(await submission.claim(10));
    // The registry answers: the current version, now the other patient's.
    const answering = await registry.receive(new OutcomeRecorder(context, () => undefined));
    try {
      await until(
        'the request ends',
        () => knex('emdr_requests').where({ queue_message_id: ack.queueMessageId }).first('state'),
        (row) => row.state !== 'submitted',
      );
    } finally {
      await answering.stop();
    }

    const request = await knex('emdr_requests').where({ queue_message_id: ack.queueMessageId }).first('state', 'errors', 'document', 'signature');
    expect(request).toEqual({
      state: 'failed',
      errors: [{ code: 'REGISTRY_ITEM_NOT_FOUND', message: 'no registry item with this emdrId' }],
      document: null,
      signature: null,
    });
    const result = await knex('emdr_callbacks').where({ queue_message_id: ack.queueMessageId, sequence: 2 }).first('name', 'payload');
    expect(result).toMatchObject({ name: 'SendDocumentFileResultResponse', payload: { status: 'error', errors: [{ code: 'REGISTRY_ITEM_NOT_FOUND' }] } });
    expect(result.payload.document).toBeUndefined();
    expect(await knex('emdr_document_disclosures').count({ n: '*' })).toEqual([{ n: '0' }]);
  });
});
