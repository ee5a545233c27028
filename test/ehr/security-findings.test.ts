import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logging/logger.js';
import { startTestService, type TestService } from '../support/service.js';
import {
  ALEXEY,
  authenticate,
  authenticatedUser,
  databaseOf,
  getPatient,
  INTERNAL_PASSWORD,
  INTERNAL_USER,
  MARIA,
  saveExchangeToken,
  startEhrTestService,
  unique,
  PHONE_OPTIONAL,
} from './support/fixtures.js';
import { expectError, rpc, sha1hex, VERSION, type RpcAnswer } from './support/rpc.js';

/**
 * The five findings of the security review of interface A (issue 8), each reproduced as it was
 * found against a running service.
 */

/** Rejects when `promise` has not settled after `ms`: a stalled service fails the test instead of hanging it. */
function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

async function pendingExchange(service: TestService, authInfo: Record<string, unknown> = {}) {
  const exchangeToken = unique('exchange');
  const saved = await saveExchangeToken(service, exchangeToken, { user: unique('user'), token: unique('token'), ttl: 3600, ...authInfo });
  expect(saved.result).toMatchObject({ success: true });
  return exchangeToken;
}

describe('finding 1: authenticate holds no lock while it waits for the connection pool', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startEhrTestService(PHONE_OPTIONAL, ['ehr']);
  });

  afterAll(async () => {
    await service?.stop();
  });

  it('20 parallel calls with one exchange token (twice the pool) all answer, one wins, and /readyz and get_patient answer meanwhile', async () => {
    const { cred } = await authenticatedUser(service, ALEXEY);
    const exchangeToken = await pendingExchange(service);
    // Twenty apps already connected (keep-alive): their calls arrive together, as they do in production.
    await Promise.all(Array.from({ length: 20 }, async () => (await fetch(`${service.publicUrl}/healthz`)).text()));
    const calls = Array.from({ length: 20 }, () => authenticate(service, exchangeToken, MARIA));
    await new Promise((resolve) => setTimeout(resolve, 50));
    // Generous bounds: a stalled pool waits 60 s for a connection (knex's acquire timeout).
    const ready = await within(20_000, '/readyz', fetch(`${service.publicUrl}/readyz`));
    expect(ready.status).toBe(200);
    const other = await within(20_000, 'get_patient', getPatient(service, cred));
    expect(other.result).toMatchObject({ patient: { id: 'demo-2' } });
    const answers = await within(20_000, 'the parallel authenticate calls', Promise.all(calls));
    expect(answers.filter((answer) => answer.result !== undefined)).toHaveLength(1);
    // The others lost the race: the token is used (-33000), or the user linked meanwhile (-34009).
    for (const answer of answers.filter((candidate) => candidate.error)) expect([-33000, -34009]).toContain(answer.error!.code);
  });
});

describe('findings 2 and 3: matching', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startEhrTestService(PHONE_OPTIONAL);
  });

  afterAll(async () => {
    await service?.stop();
  });

  it('finding 2: MEDCARD adds the medcard number to the phone, never replaces it', async () => {
    const medcard = { searchStrategy: 'MEDCARD', medCardId: 'MC-0002' };
    const exchangeToken = await pendingExchange(service);
    expectError(await authenticate(service, exchangeToken, { ...ALEXEY, phone: '+79990000000' }, medcard), -34001, 'no single patient matches');
    const noPhone = await authenticate(service, exchangeToken, { ...ALEXEY, phone: '' }, medcard);
    expectError(noPhone, -32602);
    expect(noPhone.error!.data!.errors).toEqual([{ path: '/patientProperties/phone', message: 'is not a phone number' }]);
    expectError(await authenticate(service, exchangeToken, ALEXEY, { ...medcard, medCardId: 'MC-0001' }), -34001);
    expect((await authenticate(service, exchangeToken, ALEXEY, medcard)).result).toMatchObject({ internalUserId: 'demo-2' });
  });

  it('finding 3: a user already linked gets -34009 before any matching, whoever the properties describe', async () => {
    const { cred } = await authenticatedUser(service, MARIA);
    const answers: RpcAnswer[] = [];
    for (const properties of [ALEXEY, MARIA, { ...MARIA, surname: 'Никтова' }]) {
      const exchangeToken = await pendingExchange(service, { user: cred.user });
      answers.push(await authenticate(service, exchangeToken, properties));
    }
    for (const answer of answers) expectError(answer, -34009, 'the user is already linked to a patient');
    // One answer for an existing person, the linked one and nobody: nothing to read from it.
    expect(new Set(answers.map((answer) => JSON.stringify(answer.error))).size).toBe(1);
  });
});

describe('finding 4: the internal channel', () => {
  it('listens on INTERNAL_HOST, apart from HOST', async () => {
    const service = await startTestService({ HOST: '127.0.0.1', INTERNAL_HOST: '127.0.0.2' }, ['ehr']);
    try {
      const answers = async (url: string) =>
        fetch(url).then(
          (response) => response.status,
          (error: Error & { cause?: { code?: string } }) => error.cause?.code ?? error.message,
        );
      expect(await answers(`http://127.0.0.2:${service.internalPort}/healthz`)).toBe(200);
      expect(await answers(`http://127.0.0.1:${service.internalPort}/healthz`)).toBe('ECONNREFUSED');
      expect(await answers(`http://127.0.0.1:${service.publicPort}/healthz`)).toBe(200);
      expect(await answers(`http://127.0.0.2:${service.publicPort}/healthz`)).toBe('ECONNREFUSED');
    } finally {
      await service.stop();
    }
  });

  describe('failure limit per internal account and client address (INTERNAL_AUTH_MAX_FAILURES=5)', () => {
    let service: TestService;
    const right = { user: INTERNAL_USER, password: INTERNAL_PASSWORD };
    const guess = { user: INTERNAL_USER, password: 'guess' };
    const backup = { user: 'backup', password: 'b4ckup-pa55' };

    beforeAll(async () => {
      service = await startEhrTestService(
        { INTERNAL_USERS: `${right.user}:${right.password},${backup.user}:${backup.password}`, INTERNAL_AUTH_MAX_FAILURES: '5', ...PHONE_OPTIONAL },
        ['ehr'],
      );
    });

    afterAll(async () => {
      await service?.stop();
    });

    function saveExchangeTokenCall(id: number, account: { user: string; password: string }) {
      const exchangeToken = unique('exchange');
      const params = { exchangeToken, authInfo: { user: unique('user'), token: unique('token'), ttl: 60 } };
      return {
        jsonrpc: '2.0',
        id,
        method: 'embedded_storage.save_exchange_token',
        params,
        cred: { user: account.user, token: sha1hex(account.password + exchangeToken) },
      };
    }

    it('counts every call of a batch, save_exchange_token and save_auth_info alike, then refuses even the right credentials', async () => {
      const { cred } = await authenticatedUser(service);
      const saveAuthInfoCall = (id: number) => ({
        jsonrpc: '2.0',
        id,
        method: 'embedded_storage.save_auth_info',
        params: { authInfo: { user: cred.user, token: unique('token'), ttl: 60 } },
        cred: { user: guess.user, token: sha1hex(`${guess.password}not-the-user-sign`) },
      });
      const batch = [
        saveExchangeTokenCall(1, guess),
        saveExchangeTokenCall(2, guess),
        saveAuthInfoCall(3),
        saveAuthInfoCall(4),
        saveExchangeTokenCall(5, guess),
        saveExchangeTokenCall(6, guess),
        saveExchangeTokenCall(7, right),
      ];
      const response = await fetch(`${service.internalUrl}/${VERSION}/`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(batch),
      });
      const answers = (await response.json()) as Array<RpcAnswer & { id: number }>;
      expect(answers.map((answer) => [answer.id, answer.error?.code, answer.error?.data?.reason])).toEqual([
        [1, -33000, 'credentials rejected'],
        [2, -33000, 'credentials rejected'],
        [3, -33000, 'credentials rejected'],
        [4, -33000, 'credentials rejected'],
        [5, -33000, 'credentials rejected'],
        [6, -33000, 'too many failures, retry later'],
        [7, -33000, 'too many failures, retry later'],
      ]);
      const call = saveExchangeTokenCall(8, right);
      expectError(await rpc(service.internalUrl, call.method, call.params, call.cred), -33000, 'too many failures, retry later');
    });

    it('leaves other internal accounts alone', async () => {
      const call = saveExchangeTokenCall(1, backup);
      expect((await rpc(service.internalUrl, call.method, call.params, call.cred)).result).toMatchObject({ success: true });
    });
  });
});

describe('finding 5: values the database cannot hold', () => {
  let service: TestService;
  const logLines: string[] = [];
  const capture = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(chunk.toString());
      done();
    },
  });

  beforeAll(async () => {
    service = await startTestService({ INTERNAL_USERS: `${INTERNAL_USER}:${INTERNAL_PASSWORD}`, LOG_LEVEL: 'info', ...PHONE_OPTIONAL }, ['ehr'], capture);
  });

  afterAll(async () => {
    await service?.stop();
  });

  /** A submitted value that must appear neither on the wire nor in a log line. */
  const YEAR_ZERO = '0000-05-17';

  it('answers -32602 with the path of a NUL, a lone surrogate or year 0000, never -32603, and logs no database error', async () => {
    const exchangeToken = unique('exchange');
    const internalCred = { user: INTERNAL_USER, token: sha1hex(INTERNAL_PASSWORD + exchangeToken) };
    const cases: Array<[RpcAnswer, string]> = [
      [await authenticate(service, await pendingExchange(service), { ...MARIA, date: `${YEAR_ZERO} 00:00:00.000` }), '/patientProperties/date'],
      // An instant whose calendar date in Moscow lies in year 0.
      [await authenticate(service, await pendingExchange(service), { ...MARIA, date: '0001-01-01T00:00:00+14:00' }), '/patientProperties/date'],
      [await authenticate(service, await pendingExchange(service), { ...MARIA, surname: 'Ива\u0000нова' }), '/patientProperties/surname'],
      [await authenticate(service, await pendingExchange(service), { ...ALEXEY, name: 'Алекс\ud800ей' }), '/patientProperties/name'],
      [await authenticate(service, await pendingExchange(service), ALEXEY, { searchStrategy: 'MEDCARD', medCardId: 'MC-\u00000002' }), '/medCardId'],
      [
        await rpc(
          service.internalUrl,
          'embedded_storage.save_exchange_token',
          { exchangeToken, authInfo: { user: 'user\u0000', token: unique('token'), ttl: 60 } },
          internalCred,
        ),
        '/authInfo/user',
      ],
      // A lone surrogate would be stored as U+FFFD: two different users would become one.
      [
        await rpc(
          service.internalUrl,
          'embedded_storage.save_exchange_token',
          { exchangeToken, authInfo: { user: 'user\udc00', token: unique('token'), ttl: 60 } },
          internalCred,
        ),
        '/authInfo/user',
      ],
      [
        await rpc(
          service.internalUrl,
          'embedded_storage.save_exchange_token',
          { exchangeToken, authInfo: { user: unique('user'), token: 'token\ud800', ttl: 60 } },
          internalCred,
        ),
        '/authInfo/token',
      ],
    ];
    for (const [answer, path] of cases) {
      expectError(answer, -32602);
      expect(answer.error!.data!.errors!.map((error) => error.path)).toContain(path);
    }
    const badCred = await getPatient(service, { user: 'user\u0000', token: 'token' });
    expect(badCred.error?.code).toBe(-32600);
    const log = logLines.join('');
    expect(log).not.toContain('JSON-RPC method failed');
    expect(log).not.toContain(YEAR_ZERO);
  });

  it('logs a database driver error by its code and routine, never by its text, which quotes the value', async () => {
    const database = await databaseOf(service);
    const failure = await database.knex.raw('select ?::date as birth_date', [YEAR_ZERO]).catch((error: unknown) => error);
    await database.close();
    expect(String((failure as Error).message)).toContain(YEAR_ZERO);
    const lines: string[] = [];
    const logger = createLogger(
      'info',
      new Writable({
        write: (chunk: Buffer, _encoding, done) => {
          lines.push(chunk.toString());
          done();
        },
      }),
    );
    logger.error({ err: failure }, 'query failed');
    const logged = JSON.parse(lines[0]!) as { err: Record<string, unknown> };
    expect(logged.err).toMatchObject({ code: '22008', routine: expect.any(String) });
    expect(lines[0]).not.toContain(YEAR_ZERO);
  });
});
