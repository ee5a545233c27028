import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { startCallbackReceiver, SUCCESS, type CallbackReceiver } from '../support/callback-receiver.js';
import { responseProblems } from '../support/contract.js';
import { addClinic, authHeaders, FIXTURE_XML, openKnex, post, registerBody } from '../support/emdr.js';
import { startTestService, type TestService } from '../support/service.js';
import { until } from '../support/until.js';

/** GET /api/messages and POST /api/messages/{id}/replay: a clinic's own requests, pages, and replays, over real HTTP. */
let service: TestService;
let receiver: CallbackReceiver;
let clinic: CreatedClinicAccount;
let otherClinic: CreatedClinicAccount;

beforeAll(async () => {
  receiver = await startCallbackReceiver();
  service = await startTestService({ CALLBACK_RETRY_SCHEDULE: '0,100ms' });
  clinic = await addClinic(service, receiver.url);
  otherClinic = await addClinic(service, receiver.url);
  // Both accounts' callbacks arrive here; each verifies with its own secret.
  receiver.signingSecret = clinic.signingSecret;
});

afterAll(async () => {
  await service?.stop();
  await receiver?.close();
});

/** A GET or a body-less POST of interface B, its answer checked against the spec. */
async function call(method: 'GET' | 'POST', route: string, schemaPath: string, account: CreatedClinicAccount): Promise<{ status: number; body: any }> {
  const headers = authHeaders(account);
  const response = await fetch(`${service.publicUrl}${route}`, {
    method,
    headers: { businessId: headers.businessId!, user: headers.user!, token: headers.token! },
  });
  const answer = { status: response.status, body: await response.json() };
  expect(responseProblems(method, schemaPath, answer.status, answer.body)).toEqual([]);
  return answer;
}

const list = (query: string, account = clinic) => call('GET', `/api/messages${query}`, '/api/messages', account);
const replay = (queueMessageId: string, account = clinic) =>
  call('POST', `/api/messages/${queueMessageId}/replay`, '/api/messages/{queueMessageId}/replay', account);

async function register(account: CreatedClinicAccount): Promise<string> {
  const answer = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(account), registerBody());
  expect(answer.status).toBe(200);
  return answer.body.queueMessageId;
}

async function stateOf(queueMessageId: string) {
  return (await call('GET', `/api/messages/${queueMessageId}`, '/api/messages/{queueMessageId}', clinic)).body;
}

describe('GET /api/messages', () => {
  it("pages through exactly the clinic's own requests, newest first, by cursor, with no request twice while new ones arrive", async () => {
    const mine: string[] = [];
    for (let i = 0; i < 7; i += 1) mine.push(await register(clinic));
    const theirs = await register(otherClinic);

    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await list(`?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      expect(page.body.items.length).toBeLessThanOrEqual(3);
      seen.push(...page.body.items.map((item: { queueMessageId: string }) => item.queueMessageId));
      cursor = page.body.nextCursor;
      pages += 1;
      // A request arriving between pages goes to the top: it must not shift what the cursor lists next.
      if (pages === 1) mine.push(await register(clinic));
    } while (cursor);
    const older = mine.slice(0, 7).reverse();
    expect(seen).toEqual(older);
    expect(pages).toBe(3);
    expect(seen).not.toContain(theirs);

    const first = await list('?limit=1');
    expect(first.body.items[0].queueMessageId).toBe(mine[7]);
    expect(first.body.items[0]).toMatchObject({ operation: 'RegisterDocument', callbacks: expect.any(Array) });
    const other = await list('', otherClinic);
    expect(other.body.items.map((item: { queueMessageId: string }) => item.queueMessageId)).toEqual([theirs]);
    expect(other.body.nextCursor).toBeUndefined();
  });

  it('filters by request state and by callback state, and refuses what the spec does not allow', async () => {
    const queueMessageId = await register(clinic);
    await until(
      'the request completed',
      () => stateOf(queueMessageId),
      (state) => state.state === 'completed',
    );
    const completed = await list('?state=completed&limit=100');
    expect(completed.body.items.length).toBeGreaterThan(0);
    expect(completed.body.items.every((item: { state: string }) => item.state === 'completed')).toBe(true);
    expect((await list('?state=rejected')).body.items).toEqual([]);
    const delivered = await list('?callbackState=delivered&limit=100');
    expect(delivered.body.items.map((item: { queueMessageId: string }) => item.queueMessageId)).toContain(queueMessageId);

    for (const query of ['?limit=0', '?limit=101', '?state=lost', '?cursor=not-a-cursor']) {
      const refused = await list(query);
      expect(refused.status, query).toBe(400);
      expect(refused.body.errors[0].code).toBe('VALIDATION_ERROR');
    }
    const beyondEverything = await list(`?cursor=1_${randomUUID()}`);
    expect(beyondEverything).toMatchObject({ status: 200, body: { items: [] } });
  });

  it("answers 401 without the clinic's headers", async () => {
    const response = await fetch(`${service.publicUrl}/api/messages`);
    expect(response.status).toBe(401);
  });
});

describe('POST /api/messages/{queueMessageId}/replay', () => {
  it("replays a failed callback, which is then delivered, records each attempt's duration, and answers 409 when nothing failed", async () => {
    const body = registerBody();
    let failing = true;
    receiver.reply = (callback) => (failing && callback.body.localUid === body.localUid ? { status: 503, body: { status: 'Error' } } : SUCCESS);
    const answer = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), body);
    const queueMessageId = answer.body.queueMessageId as string;
    await until(
      'the acceptance callback failed',
      () => stateOf(queueMessageId),
      (state) => state.callbacks[0]?.state === 'failed',
    );

    const failed = await list('?callbackState=failed&limit=100');
    expect(failed.body.items.map((item: { queueMessageId: string }) => item.queueMessageId)).toEqual([queueMessageId]);
    const attempts = failed.body.items[0].callbacks[0].attempts;
    expect(attempts).toHaveLength(2);
    for (const attempt of attempts) {
      expect(attempt).toMatchObject({ httpStatus: 503, error: 'HTTP 503' });
      expect(attempt.durationMs).toBeGreaterThanOrEqual(0);
      expect(attempt.durationMs).toBeLessThan(15_000);
    }

    // Another clinic cannot replay it, nor see it: 404 as for an unknown id.
    expect((await replay(queueMessageId, otherClinic)).status).toBe(404);
    expect((await replay(randomUUID())).status).toBe(404);
    expect((await replay('not-a-uuid')).status).toBe(400);

    failing = false;
    const replayed = await replay(queueMessageId);
    expect(replayed.status).toBe(202);
    const webhookId = failed.body.items[0].callbacks[0].webhookId;
    expect(replayed.body).toEqual({ queueMessageId, replayed: [webhookId] });
    const state = await until(
      'both callbacks delivered',
      () => stateOf(queueMessageId),
      (current) => current.callbacks.length === 2 && current.callbacks.every((callback: { state: string }) => callback.state === 'delivered'),
    );
    expect(state.callbacks[0].attempts).toHaveLength(3);
    expect(state.callbacks[0].attempts[2]).toMatchObject({ attempt: 3, httpStatus: 200 });
    expect(state.callbacks[1].name).toBe('SendRegisterDocumentResultResponse');

    const again = await replay(queueMessageId);
    expect(again.status).toBe(409);
    expect(again.body.errors[0].code).toBe('NOTHING_TO_REPLAY');
  });

  it("replays a failed file callback with the file it kept, even once the document became another organization's: the version the clinic was allowed", async () => {
    const registered = await register(clinic);
    const done = await until(
      'the document registered',
      () => stateOf(registered),
      (state) => state.state === 'completed',
    );
    const emdrId = done.emdrId as string;
    receiver.reply = (callback) =>
      callback.name === 'SendDocumentFileResultResponse' && callback.body.emdrId === emdrId ? { status: 503, body: { status: 'Error' } } : SUCCESS;
    const demand = await post(service.publicUrl, '/api/DemandContent', authHeaders(clinic), { emdrId });
    const queueMessageId = demand.body.queueMessageId as string;
    await until(
      'the file callback failed',
      () => stateOf(queueMessageId),
      (state) => state.callbacks[1]?.state === 'failed',
    );
    const knex = openKnex(service.databaseUrl);
    try {
      // The registry's record changes meanwhile; the kept copy is what was delivered under the access rule then.
      await knex('emdr_registry_documents').where({ emdr_id: emdrId }).update({ organization: '1.2.643.5.1.13.13.12.2.77.1', patient_snils: '08765432110' });
      receiver.reply = () => SUCCESS;
      const replayed = await replay(queueMessageId);
      expect(replayed.status).toBe(202);
      await until(
        'the file callback delivered',
        () => stateOf(queueMessageId),
        (state) => state.callbacks[1]?.state === 'delivered',
      );
      const files = receiver.received.filter(
        (callback) => callback.name === 'SendDocumentFileResultResponse' && callback.body.queueMessageId === queueMessageId,
      );
      expect(Buffer.from((files.at(-1)!.body.document as { content: string }).content, 'base64').equals(FIXTURE_XML)).toBe(true);
      // Delivered, the copy goes.
      await until(
        'the copy dropped',
        () => knex('emdr_requests').where({ queue_message_id: queueMessageId }).first('document'),
        (row) => row.document === null,
      );
    } finally {
      await knex.destroy();
    }
  });
});
