import { randomBytes, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRetention } from '../../src/db/retention.js';
import { ehrPurgeSteps } from '../../src/ehr/retention.js';
import { emdrPurgeSteps } from '../../src/emdr/retention.js';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { createLogger } from '../../src/logging/logger.js';
import { runCli } from '../support/cli.js';
import { startCallbackReceiver, SUCCESS, type CallbackReceiver, type ReceivedCallback } from '../support/callback-receiver.js';
import { createTestDatabase, openSql } from '../support/database.js';
import { addClinic, authHeaders, largeXml, openKnex, post, registerBody } from '../support/emdr.js';
import { startTestService, type TestService } from '../support/service.js';
import { testPersonalSignatureOf } from '../support/signing.js';
import { until } from '../support/until.js';

/** What the service keeps, and for how long (RETENTION), and the byte quota (BYTE_QUOTA). */

const of = (queueMessageId: string) => (received: ReceivedCallback[]) => received.filter((callback) => callback.body.queueMessageId === queueMessageId);

/** Bytes of the request's copy of the files (document, signature, personal signatures). */
async function requestFileBytes(knex: Knex, queueMessageId: string): Promise<number> {
  const row = await knex('emdr_requests')
    .where({ queue_message_id: queueMessageId })
    .first(
      knex.raw('coalesce(octet_length(document), 0) + coalesce(octet_length(signature), 0) + coalesce(octet_length(personal_signatures::text), 0) as bytes'),
    );
  return Number(row.bytes);
}

describe("a request's copy of the files", () => {
  let service: TestService;
  let receiver: CallbackReceiver;
  let clinic: CreatedClinicAccount;
  let knex: Knex;

  beforeAll(async () => {
    receiver = await startCallbackReceiver();
    service = await startTestService({ CALLBACK_RETRY_SCHEDULE: '0,1s,1s' });
    clinic = await addClinic(service, receiver.url);
    receiver.signingSecret = clinic.signingSecret;
    knex = openKnex(service.databaseUrl);
  });

  afterAll(async () => {
    await knex?.destroy();
    await service?.stop();
    await receiver?.close();
  });

  const callbacksOf = async (queueMessageId: string, count: number) =>
    of(queueMessageId)(await receiver.waitFor((received) => of(queueMessageId)(received).length >= count));
  const callbackStates = async (queueMessageId: string) =>
    (await knex('emdr_callbacks').where({ queue_message_id: queueMessageId }).orderBy('sequence').pluck('state')) as string[];

  it('is dropped once the result callback is delivered; the registry keeps its copy', async () => {
    const xml = largeXml(1024 * 1024);
    const body = registerBody({
      document: xml.toString('base64'),
      personalSignatures: [{ signer: { snils: '08765432110' }, signature: testPersonalSignatureOf(xml).toString('base64') }],
    });
    const { body: ack } = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), body);
    const [, result] = await callbacksOf(ack.queueMessageId, 2);
    expect(result!.body.status).toBe('success');
    await until(
      'request files',
      () => requestFileBytes(knex, ack.queueMessageId),
      (bytes) => bytes === 0,
    );
    const registered = await knex('emdr_registry_documents').where({ emdr_id: result!.body.emdrId }).first('content');
    expect(registered.content.equals(xml)).toBe(true);
  });

  it('is dropped once the acceptance callback of a rejected request is delivered', async () => {
    const { body: ack } = await post(
      service.publicUrl,
      '/api/RegisterDocument',
      authHeaders(clinic),
      registerBody({ document: Buffer.from('<a><b></a>').toString('base64') }),
    );
    const [acceptance] = await callbacksOf(ack.queueMessageId, 1);
    expect(acceptance!.body.status).toBe('error');
    await until(
      'request files',
      () => requestFileBytes(knex, ack.queueMessageId),
      (bytes) => bytes === 0,
    );
  });

  it('of a DemandContent is kept while its file callback is retried and after it failed for good, sent again by a replay, and dropped once delivered', async () => {
    const { body: registration } = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody());
    const emdrId = (await callbacksOf(registration.queueMessageId, 2))[1]!.body.emdrId as string;
    let refusing = true;
    const attempts: number[] = [];
    receiver.reply = (callback) => {
      if (callback.name !== 'SendDocumentFileResultResponse' || !refusing) return SUCCESS;
      attempts.push(Date.now());
      return { status: 503, body: {} };
    };
    const { body: demand } = await post(service.publicUrl, '/api/DemandContent', authHeaders(clinic), { emdrId });
    await receiver.waitFor(() => attempts.length >= 1);
    // Between the attempts the file stays for the next one.
    expect(await callbackStates(demand.queueMessageId)).toEqual(['delivered', 'pending']);
    expect(await requestFileBytes(knex, demand.queueMessageId)).toBeGreaterThan(0);
    await until(
      'callback states',
      () => callbackStates(demand.queueMessageId),
      (states) => states[1] === 'failed',
    );
    // Failed for good, the file callback keeps its file: the sweep of ended requests leaves it too.
    await purgeFilesNow(service.databaseUrl);
    expect(await requestFileBytes(knex, demand.queueMessageId)).toBeGreaterThan(0);

    refusing = false;
    const before = of(demand.queueMessageId)(receiver.received).length;
    const replay = await runCli(['callbacks', 'replay', demand.queueMessageId], { ...service.env, LOG_LEVEL: 'silent' });
    expect(replay.code).toBe(0);
    const file = (await callbacksOf(demand.queueMessageId, before + 1)).at(-1)!;
    expect(file.name).toBe('SendDocumentFileResultResponse');
    expect(Buffer.from((file.body.document as { content: string }).content, 'base64').equals(Buffer.from(registerBody().document as string, 'base64'))).toBe(
      true,
    );
    expect(file.signatureValid).toBe(true);
    await until(
      'request files after the replay',
      () => requestFileBytes(knex, demand.queueMessageId),
      (bytes) => bytes === 0,
    );
  });

  it('sent only callback bodies that match their schemas in specs/openapi.yaml', () => {
    expect(receiver.schemaViolations).toEqual([]);
  });
});

/** One round of the retention's sweep of request files, as the worker runs it. */
async function purgeFilesNow(databaseUrl: string): Promise<void> {
  const sql = openSql(databaseUrl);
  try {
    await sql.transaction((trx) => emdrPurgeSteps[0]!.purge(trx, new Date(), 1000));
  } finally {
    await sql.pool.end();
  }
}

describe('RETENTION', () => {
  let service: TestService;
  let receiver: CallbackReceiver;
  let knex: Knex;

  beforeAll(async () => {
    receiver = await startCallbackReceiver();
    service = await startTestService({ RETENTION: '3s' });
    knex = openKnex(service.databaseUrl);
  });

  afterAll(async () => {
    await knex?.destroy();
    await service?.stop();
    await receiver?.close();
  });

  /** A user with a session and an exchange token that expire at the given offsets from now. */
  async function interfaceARows(sessionExpiresInMs: number, tokenExpiresInMs: number): Promise<{ user: string }> {
    const user = `u-${randomUUID()}`;
    const at = (ms: number) => knex.raw(`now() + ? * interval '1 millisecond'`, [ms]);
    await knex('ehr_user_links').insert({ user_id: user, patient_id: 'demo-1', user_sign_sealed: randomBytes(60) });
    await knex('ehr_sessions').insert({ token_hash: randomBytes(32), user_id: user, expires_at: at(sessionExpiresInMs) });
    await knex('ehr_exchange_tokens').insert({
      token_hash: randomBytes(32),
      user_id: user,
      session_token_hash: randomBytes(32),
      session_expires_at: at(sessionExpiresInMs),
      expires_at: at(tokenExpiresInMs),
      state: 'used',
    });
    return { user };
  }

  const kept = async (queueMessageIds: string[], users: string[]) => {
    const count = async (query: Knex.QueryBuilder) => Number(((await query.count({ n: '*' }).first()) as { n: string }).n);
    return {
      requests: await count(knex('emdr_requests').whereIn('queue_message_id', queueMessageIds)),
      callbacks: await count(knex('emdr_callbacks').whereIn('queue_message_id', queueMessageIds)),
      attempts: await count(
        knex('emdr_callback_attempts as a').join('emdr_callbacks as c', 'c.id', 'a.callback_id').whereIn('c.queue_message_id', queueMessageIds),
      ),
      sessions: await count(knex('ehr_sessions').whereIn('user_id', users)),
      exchangeTokens: await count(knex('ehr_exchange_tokens').whereIn('user_id', users)),
    };
  };

  it('purges ended requests with their callbacks, expired sessions and exchange tokens after the period, and keeps them before it', async () => {
    const clinic = await addClinic(service, receiver.url);
    receiver.signingSecret = clinic.signingSecret;
    const { body: registration } = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody());
    const emdrId = of(registration.queueMessageId)(await receiver.waitFor((received) => of(registration.queueMessageId)(received).length >= 2))[1]!.body
      .emdrId as string;
    const { body: demand } = await post(service.publicUrl, '/api/DemandContent', authHeaders(clinic), { emdrId });
    await receiver.waitFor((received) => of(demand.queueMessageId)(received).length >= 2);
    const expired = await interfaceARows(-1_000, -1_000);
    const live = await interfaceARows(3_600_000, -1_000);
    const requests = [registration.queueMessageId, demand.queueMessageId];

    // Well inside the period: everything is there.
    expect(await kept(requests, [expired.user, live.user])).toEqual({ requests: 2, callbacks: 4, attempts: 4, sessions: 2, exchangeTokens: 2 });
    const state = await fetch(`${service.publicUrl}/api/messages/${demand.queueMessageId}`, { headers: authHeaders(clinic) });
    expect(state.status).toBe(200);

    await until(
      'purge',
      () => kept(requests, [expired.user, live.user]),
      (counts) => counts.requests === 0 && counts.exchangeTokens === 0,
    );
    // The live session stays; the registry keeps the document.
    expect(await kept(requests, [expired.user, live.user])).toEqual({ requests: 0, callbacks: 0, attempts: 0, sessions: 1, exchangeTokens: 0 });
    expect(await knex('ehr_sessions').where({ user_id: live.user }).count({ n: '*' })).toEqual([{ n: '1' }]);
    expect(await knex('emdr_registry_documents').where({ emdr_id: emdrId }).count({ n: '*' })).toEqual([{ n: '1' }]);
    const gone = await fetch(`${service.publicUrl}/api/messages/${demand.queueMessageId}`, { headers: authHeaders(clinic) });
    expect(gone.status).toBe(404);
  });

  it('is safe with several workers at once: concurrent rounds delete each row once, without errors', async () => {
    const databaseUrl = await createTestDatabase();
    const other = await startTestService({ DATABASE_URL: databaseUrl }, ['emdr']);
    await other.stop();
    const db = openKnex(databaseUrl);
    try {
      await db('ehr_user_links').insert({ user_id: 'u', patient_id: 'p', user_sign_sealed: randomBytes(60) });
      const rows = Array.from({ length: 1200 }, () => ({ token_hash: randomBytes(32), user_id: 'u', expires_at: new Date(Date.now() - 60_000) }));
      for (let i = 0; i < rows.length; i += 400) await db('ehr_sessions').insert(rows.slice(i, i + 400));
      const sql = openSql(databaseUrl);
      const workers = [0, 1].map(() => startRetention(sql, { retentionMs: 1_000, steps: ehrPurgeSteps, logger: createLogger('silent') }));
      try {
        // A worker that misses the lock leaves the rest of that step to the next round: the holder may be
        // in another step by then (ehr has four). So rounds run until the table is empty, as the timer's would.
        const left = async () => Number((await db('ehr_sessions').count({ n: '*' }))[0]!.n);
        let deleted = 0;
        for (let pass = 0; pass < 20 && (await left()) > 0; pass += 1) {
          const rounds = await Promise.all(workers.map((worker) => worker.runOnce()));
          deleted += rounds.reduce((sum, round) => sum + round.ehr_sessions!, 0);
        }
        expect(deleted).toBe(1200);
        expect(await left()).toBe(0);
      } finally {
        await Promise.all(workers.map((worker) => worker.stop()));
        await sql.pool.end();
      }
    } finally {
      await db.destroy();
    }
  });
});

/**
 * Runs `attempt` (each time with a fresh clinic) until one run starts and ends in the same wall-clock
 * minute, the quota's window (src/emdr/intake/admission/limits.ts): on a loaded machine a run may straddle two.
 */
async function inOneQuotaWindow<T>(attempt: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries += 1) {
    const window = Math.floor(Date.now() / 60_000);
    const result = await attempt();
    if (Math.floor(Date.now() / 60_000) === window || tries === 3) return result;
  }
}

describe('BYTE_QUOTA', () => {
  let service: TestService;
  let receiver: CallbackReceiver;

  beforeAll(async () => {
    receiver = await startCallbackReceiver();
    service = await startTestService({ BYTE_QUOTA: '2mb', BODY_LIMIT: '2mb' });
  });

  afterAll(async () => {
    await service?.stop();
    await receiver?.close();
  });

  it("answers 429 RATE_LIMIT with Retry-After once a clinic's bodies pass the quota this minute; other clinics go on", async () => {
    const document = largeXml(700 * 1024).toString('base64');
    const { clinic, statuses, refused, retryAfter } = await inOneQuotaWindow(async () => {
      const clinic = await addClinic(service, receiver.url);
      const statuses: number[] = [];
      let refused: { status: number; body: { errors: Array<{ code: string }> } } | undefined;
      let retryAfter: string | null = null;
      for (let i = 0; i < 3; i += 1) {
        const response = await fetch(`${service.publicUrl}/api/RegisterDocument`, {
          method: 'POST',
          headers: authHeaders(clinic),
          body: JSON.stringify(registerBody({ document })),
        });
        statuses.push(response.status);
        if (response.status === 429) {
          refused = { status: 429, body: await response.json() };
          retryAfter = response.headers.get('retry-after');
        } else await response.arrayBuffer();
      }
      return { clinic, statuses, refused, retryAfter };
    });
    // Two bodies of ~0.93 MiB fit in 2 MiB, the third does not.
    expect(statuses).toEqual([200, 200, 429]);
    expect(refused!.body.errors[0]!.code).toBe('RATE_LIMIT');
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(retryAfter)).toBeLessThanOrEqual(60);
    // A small request of the same clinic still fits; another clinic has its own quota.
    expect((await post(service.publicUrl, '/api/SearchRegistryItem', authHeaders(clinic), {})).status).toBe(200);
    const another = await addClinic(service, receiver.url);
    expect((await post(service.publicUrl, '/api/RegisterDocument', authHeaders(another), registerBody({ document }))).status).toBe(200);
  });

  it('counts bodies that fail validation or are not JSON: they cost the quota as much as accepted ones', async () => {
    const document = largeXml(700 * 1024).toString('base64');
    const statuses = await inOneQuotaWindow(async () => {
      const clinic = await addClinic(service, receiver.url);
      const invalid = await fetch(`${service.publicUrl}/api/RegisterDocument`, {
        method: 'POST',
        headers: authHeaders(clinic),
        body: JSON.stringify(registerBody({ document, organization: 'not an OID' })),
      });
      const notJson = await fetch(`${service.publicUrl}/api/RegisterDocument`, {
        method: 'POST',
        headers: authHeaders(clinic),
        body: `{"document":"${document}"`,
      });
      await Promise.all([invalid.arrayBuffer(), notJson.arrayBuffer()]);
      // ~1.86 MiB of refused bodies leave no room in 2 MiB for a valid one this minute.
      const valid = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody({ document }));
      return [invalid.status, notJson.status, valid.status];
    });
    expect(statuses).toEqual([400, 400, 429]);
  });
});
