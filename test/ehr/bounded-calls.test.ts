import type http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RpcEnvelope } from '../../src/ehr/rpc/envelope.js';
import { statement } from '../../src/db/sql.js';
import { createLogger } from '../../src/logging/logger.js';
import { runCli } from '../support/cli.js';
import { openSql } from '../support/database.js';
import { postHead, postWithNodeHttp, rawExchange } from '../support/raw-http.js';
import type { TestService } from '../support/service.js';
import {
  INTERNAL_PASSWORD,
  INTERNAL_USER,
  MARIA,
  PHONE_OPTIONAL,
  authenticatedUser,
  saveAuthInfo,
  saveExchangeToken,
  startEhrTestService,
  unique,
} from './support/fixtures.js';
import { sha1hex, VERSION } from './support/rpc.js';

/**
 * Issue 21 on interface A: bodies bounded in shape while they arrive (H1), calls limited per client
 * address (M5) and their refusals counted rather than written one row each, the internal methods in
 * the audit trail (L3), the internal failure limit race-free (L2), and the client's request id kept
 * in a column of its own (L7).
 */

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/** A POST of `body` to interface A from `localAddress` (another client on loopback: 127.0.0.2, 127.0.0.3, …). */
function postFrom(service: TestService, localAddress: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  return postWithNodeHttp(
    `${service.publicUrl}/${VERSION}/`,
    { localAddress, agent: false, headers: { 'content-type': 'application/json', ...headers } },
    JSON.stringify(body),
  ).then(({ status, headers: answered, text }) => ({ status, headers: answered, body: text === '' ? undefined : JSON.parse(text) }));
}

const getPatientCall = (id: number, cred = { user: 'nobody', token: 'no-such-session' }) => ({
  jsonrpc: '2.0',
  id,
  method: 'patient.get_patient',
  params: {},
  cred,
});

const AUDIT = statement(
  'test_bounded_calls_audit',
  'select request_id, client_request_id, client_address, internal_account, internal_user_id, action, outcome, occurrences from audit_events order by id',
);
type AuditRow = {
  request_id: string | null;
  client_request_id: string | null;
  client_address: string | null;
  internal_account: string | null;
  internal_user_id: string | null;
  action: string;
  outcome: string;
  occurrences: number;
};

describe('H1 on interface A: the body is bounded in shape while it arrives, errors are capped', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startEhrTestService({}, ['ehr']);
  });

  afterAll(async () => {
    await service?.stop();
  });

  it('answers params of 90,000 members (1 MB), and nesting 40 deep, with -32600 naming the limit', async () => {
    const members = Object.fromEntries(Array.from({ length: 90_000 }, (_, index) => [`m${index}`, 0]));
    const wide = await postFrom(service, '127.0.0.1', { jsonrpc: '2.0', id: 1, method: 'patient.get_patient', params: members });
    expect(wide.status).toBe(200);
    expect(wide.body).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: 'Invalid Request', data: { reason: 'the body holds more than 10000 members and items, the limit' } },
    });
    let deep: unknown = 0;
    for (let level = 0; level < 40; level += 1) deep = [deep];
    const nested = await postFrom(service, '127.0.0.1', { jsonrpc: '2.0', id: 2, method: 'patient.get_patient', params: { deep } });
    expect(nested.body.error).toEqual({
      code: -32600,
      message: 'Invalid Request',
      data: { reason: 'the body nests arrays and objects deeper than 32 levels, the limit' },
    });
  });

  it('reports at most 20 errors of invalid params', async () => {
    const document = {
      openrpc: '1.3.2',
      info: { title: 'list', version: '1.0.0' },
      methods: [
        {
          name: 'sum',
          params: [{ name: 'numbers', required: true, schema: { type: 'array', items: { type: 'integer' } } }],
          result: { name: 'sum', schema: { type: 'integer' } },
        },
      ],
    };
    const envelope = new RpcEnvelope(document as never, { sum: async () => 0 }, createLogger('silent'));
    const outcome = await envelope.handle(
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'sum', params: { numbers: Array.from({ length: 5_000 }, () => 'x') } }),
      'public',
      '127.0.0.1',
    );
    const errors = (outcome as { body: { error: { code: number; data: { errors: unknown[] } } } }).body.error;
    expect(errors.code).toBe(-32602);
    expect(errors.data.errors).toHaveLength(20);
  });
});

describe('M5: calls limited per client address, refusals counted per address and minute', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startEhrTestService({ RPC_RATE_LIMIT: '60' }, ['ehr']);
  });

  afterAll(async () => {
    await service?.stop();
  });

  it('answers the 61st call of an address within the minute HTTP 429 with Retry-After and -32002, before its body is read, and serves another address', async () => {
    for (let call = 0; call < 60; call += 1) expect((await postFrom(service, '127.0.0.2', getPatientCall(call))).body.error.code).toBe(-33000);
    const refused = await postFrom(service, '127.0.0.2', getPatientCall(61));
    expect(refused.status).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(refused.body).toMatchObject({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32002, message: 'RateLimited', data: { reason: 'too many calls from this address; retry later' } },
    });
    // Only the head: the refusal does not wait for the body.
    const head = await rawExchange(Number(new URL(service.publicUrl).port), postHead(`/${VERSION}/`, {}, 1000), undefined, {
      localAddress: '127.0.0.2',
      waitMs: 5_000,
    });
    expect(head.status).toBe(429);
    expect((await postFrom(service, '127.0.0.3', getPatientCall(62))).status).toBe(200);
  });

  it('holds the refusals of an address that keeps calling regardless (beyond 20 a second) for a second each, and serves others meanwhile', async () => {
    for (let call = 0; call < 60; call += 1) expect((await postFrom(service, '127.0.0.7', getPatientCall(call))).status).toBe(200);
    // 100 calls more on 25 connections at once, each asking again as soon as it was refused.
    const refusals: Array<{ status: number; retryAfter: number; ms: number }> = [];
    await Promise.all(
      Array.from({ length: 25 }, async (_, connection) => {
        for (let call = 0; call < 4; call += 1) {
          const started = performance.now();
          const answer = await postFrom(service, '127.0.0.7', getPatientCall(1000 + connection * 10 + call));
          refusals.push({ status: answer.status, retryAfter: Number(answer.headers['retry-after']), ms: performance.now() - started });
        }
      }),
    );
    expect(refusals.every((refusal) => refusal.status === 429 && refusal.retryAfter >= 1)).toBe(true);
    // At most 20 a second go out at once; before, all 100 did (each a few milliseconds).
    const held = refusals.filter((refusal) => refusal.ms >= 900);
    expect(held.length, JSON.stringify(refusals.map((refusal) => Math.round(refusal.ms)))).toBeGreaterThanOrEqual(20);
    // Held on a timer, not on the event loop: another address is answered meanwhile.
    const pending = Promise.all(Array.from({ length: 10 }, (_, call) => postFrom(service, '127.0.0.7', getPatientCall(2000 + call))));
    expect((await postFrom(service, '127.0.0.8', getPatientCall(1))).status).toBe(200);
    expect((await pending).every((answer) => answer.status === 429)).toBe(true);
  });

  it('counts every call of a batch: a batch beyond what is left is refused whole, before any call is judged', async () => {
    for (let call = 0; call < 50; call += 1) expect((await postFrom(service, '127.0.0.4', getPatientCall(call))).status).toBe(200);
    const batch = await postFrom(
      service,
      '127.0.0.4',
      Array.from({ length: 20 }, (_, index) => getPatientCall(100 + index)),
    );
    expect(batch.status).toBe(429);
    // The refused batch's first call was counted (taken before its body was read): 51 of 60 are used, a batch of 9 fits.
    expect(
      (
        await postFrom(
          service,
          '127.0.0.4',
          Array.from({ length: 9 }, (_, index) => getPatientCall(200 + index)),
        )
      ).status,
    ).toBe(200);
    expect((await postFrom(service, '127.0.0.4', getPatientCall(300))).status).toBe(429);
  });
});

describe('the audit trail of interface A: refusals counted, internal calls recorded, request ids apart', () => {
  let service: TestService;
  let rows: AuditRow[];
  let signed: { cred: { user: string; token: string }; userSign: string };

  beforeAll(async () => {
    service = await startEhrTestService({ RPC_RATE_LIMIT: '0', ...PHONE_OPTIONAL }, ['ehr']);
    // 300 refused calls of one unauthenticated client.
    await Promise.all(
      Array.from({ length: 10 }, async (_, worker) => {
        for (let call = 0; call < 30; call += 1) await postFrom(service, '127.0.0.5', getPatientCall(worker * 100 + call));
      }),
    );
    // The internal channel: a stored exchange token, a stored session, and wrong credentials.
    signed = await authenticatedUser(service, MARIA);
    expect((await saveAuthInfo(service, { user: signed.cred.user, token: unique('token'), ttl: 60 }, signed.userSign)).result).toMatchObject({ success: true });
    for (let call = 0; call < 3; call += 1)
      expect(
        (await saveExchangeToken(service, unique('exchange'), { user: unique('user'), token: unique('token'), ttl: 60 }, 'wrong-password')).error?.code,
      ).toBe(-33000);
    // A client that names its own request id.
    await postFrom(service, '127.0.0.6', getPatientCall(1, signed.cred), { 'x-request-id': 'clinic-trace.42' });
    // Stopping writes the refusals still counted.
    await service.stop();
    const sql = openSql(service.databaseUrl);
    try {
      rows = await sql.rows<AuditRow>(AUDIT);
    } finally {
      await sql.pool.end();
    }
  });

  it('records 300 refused calls of one address in two rows with its address (the first at once, the rest counted), not 300 rows', () => {
    const refused = rows.filter((row) => row.action === 'patient.get_patient' && row.outcome === '-33000');
    expect(refused).toEqual([
      expect.objectContaining({ client_address: '127.0.0.5', occurrences: 1 }),
      expect.objectContaining({ client_address: '127.0.0.5', occurrences: 299, request_id: null }),
    ]);
  });

  it('records save_exchange_token and save_auth_info with the internal account, and their credential failures counted', () => {
    expect(rows).toContainEqual(
      expect.objectContaining({
        action: 'embedded_storage.save_exchange_token',
        outcome: 'ok',
        internal_account: INTERNAL_USER,
        client_address: '127.0.0.1',
        occurrences: 1,
      }),
    );
    expect(rows).toContainEqual(
      expect.objectContaining({
        action: 'embedded_storage.save_auth_info',
        outcome: 'ok',
        internal_account: INTERNAL_USER,
        internal_user_id: 'demo-1',
        occurrences: 1,
      }),
    );
    const failures = rows.filter((row) => row.action === 'embedded_storage.save_exchange_token' && row.outcome === '-33000');
    expect(failures.map((row) => [row.internal_account, row.client_address, row.occurrences])).toEqual([
      [INTERNAL_USER, '127.0.0.1', 1],
      [INTERNAL_USER, '127.0.0.1', 2],
    ]);
  });

  it('prints the counted refusals with ehr-gateway audit', async () => {
    const printed = await runCli(['audit', '--since', '1h', '--json'], {
      DATABASE_URL: service.databaseUrl,
      DATA_KEY: service.env.DATA_KEY,
      LOG_LEVEL: 'warn',
    });
    expect(printed.code, printed.stderr).toBe(0);
    const lines = printed.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toContainEqual(expect.objectContaining({ action: 'patient.get_patient', outcome: '-33000', clientAddress: '127.0.0.5', occurrences: 299 }));
    const text = await runCli(['audit', '--since', '1h'], { DATABASE_URL: service.databaseUrl, DATA_KEY: service.env.DATA_KEY, LOG_LEVEL: 'warn' });
    expect(text.stdout).toMatch(/\taddress:127\.0\.0\.5\tpatient\.get_patient\t-\t-33000 ×299$/m);
  });

  it("keeps the gateway's own request id in request_id and the client's in client_request_id", () => {
    const read = rows.find((row) => row.action === 'patient.get_patient' && row.outcome === 'ok' && row.client_address === '127.0.0.6');
    expect(read).toMatchObject({ client_request_id: 'clinic-trace.42', internal_user_id: 'demo-1' });
    expect(read!.request_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  });
});

describe('L2: the internal failure limit is race-free', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startEhrTestService({ INTERNAL_AUTH_MAX_FAILURES: '10', ...PHONE_OPTIONAL }, ['ehr']);
  });

  afterAll(async () => {
    await service?.stop();
  });

  it('judges at most 10 of 199 save_auth_info calls sent in one burst (the right credential among them), refusing the rest', async () => {
    // save_auth_info reads the user's link before it judges the token: the await where the old count raced.
    const { cred, userSign } = await authenticatedUser(service, MARIA);
    const call = (index: number) => ({
      jsonrpc: '2.0',
      id: index,
      method: 'embedded_storage.save_auth_info',
      params: { authInfo: { user: cred.user, token: unique('token'), ttl: 60 } },
      // The right one late, #150: calls arrive in about this order, so a serial server refuses it. (At #15 it may
      // arrive among the first ten on a loaded machine and be rightly stored; the race of a limit that does not
      // reserve room is caught by test/ehr/failure-limit.test.ts, where every call of the burst is a failure.)
      cred: { user: INTERNAL_USER, token: sha1hex(INTERNAL_PASSWORD + (index === 150 ? userSign : `guess-${index}`)) },
    });
    const answers = await Promise.all(
      Array.from({ length: 199 }, (_, index) =>
        fetch(`${service.internalUrl}/${VERSION}/`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(call(index)),
        }).then((response) => response.json() as Promise<any>),
      ),
    );
    const reasons = answers.map((answer) => answer.error?.data?.reason ?? 'stored');
    // Before: every guess was judged (the limit was checked before the first await and counted after it), and #150 of them stored the token.
    const judged = reasons.filter((reason) => reason === 'credentials rejected' || reason === 'stored');
    expect(judged.length).toBeLessThanOrEqual(10);
    expect(reasons.filter((reason) => reason === 'too many failures, retry later').length).toBe(199 - judged.length);
  });
});
