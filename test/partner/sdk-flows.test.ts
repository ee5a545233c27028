import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestService } from '../support/service.js';
import { INTERNAL_PASSWORD, INTERNAL_USER, startEhrTestService, unique } from '../ehr/support/fixtures.js';
import { expectResultMatchesSchema, sha1hex, VERSION } from '../ehr/support/rpc.js';

/**
 * The authentication flows of the peer SDK (GitHub GbookingLTD/medme-ehr-ts-sdk, the real client of
 * interface A) over real HTTP, in its exact wire format: the flows of its tests/auth.test.ts and of
 * its getAuthenticatedPatient. Facts taken from the SDK (none of its code is used here):
 * - every call is a POST to the endpoint the app configures (here `/<info.version>/`), header
 *   `Content-Type: application/json;charset=UTF-8`, body serialized from its request class in the
 *   member order jsonrpc, id (a string counter), method, params, cred, apiKey; AuthService sends
 *   `"cred":null,"apiKey":null` (authenticate), PatientService the user's cred and `"apiKey":null`;
 * - authenticate params: {exchangeToken, searchStrategy ("PHONE" | "MEDCARD"), patientProperties,
 *   medCardId ("" with PHONE)}; patientProperties is its PatientInputProperties {id, surname, name,
 *   middleName, phone, email, gender, date}, `date` a JavaScript Date (so JSON carries toISOString)
 *   or, in its fixtures and web sample, text such as `1945-08-15 04:40:32.4570000Z` and
 *   `YYYY-MM-DD 00:00:00Z`;
 * - its transport answers `result` when truthy, else `error`; authenticate and get_patient need
 *   `userSign`;
 * - isAuthorizationError: -33000, -33001 or -33002 (getAuthenticatedPatient then starts the
 *   exchange-token flow; the hooks onAuthNotAuthorized / onAuthExpired fire on -33000 / -33001);
 *   at the authenticate step, isAuthenticationError is -34001 and patientAlreadyLinked is -34009;
 * - Gender: 1 male, 2 female, 3 other, 4 unknown; its tests compare patient.phones to [phone].
 */

interface SdkError {
  code: number;
  message: string;
  data?: { reason?: string };
}
type SdkAnswer = { result: Record<string, any>; error?: undefined } | { result?: undefined; error: SdkError };
interface Cred {
  user: string;
  token: string;
}

const AUTHORIZATION_ERRORS = [-33000, -33001, -33002];
const isAuthorizationError = (error: SdkError | undefined) => error !== undefined && AUTHORIZATION_ERRORS.includes(error.code);

/** The demo patient demo-1 as the app's form has her: Иванова Мария, born 17 May 1990, female. */
const MARIA = { id: '', surname: 'Иванова', name: 'Мария', middleName: 'Петровна', phone: '+79161234567', email: '', gender: 2 };

/** What `new Date(year, month, day).toISOString()` gives in an app whose clock runs in Moscow. */
function moscowLocalMidnight(year: number, monthIndex: number, day: number): string {
  return execFileSync(process.execPath, ['-e', `process.stdout.write(new Date(${year}, ${monthIndex}, ${day}).toISOString())`], {
    env: { ...process.env, TZ: 'Europe/Moscow' },
    encoding: 'utf8',
  });
}

let service: TestService;
let endpoint: string;
let requestId = 1;
const sentBodies: string[] = [];

beforeAll(async () => {
  service = await startEhrTestService();
  endpoint = `${service.publicUrl}/${VERSION}/`;
});

afterAll(async () => {
  await service?.stop();
});

/** One call as the SDK's xhr transport sends it. */
async function sdkCall(method: string, params: object, cred: Cred | null): Promise<SdkAnswer> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: String(requestId++), method, params, cred, apiKey: null });
  sentBodies.push(body);
  const response = await fetch(endpoint, { method: 'POST', headers: { 'Content-Type': 'application/json;charset=UTF-8' }, body });
  expect(response.status).toBeLessThan(400);
  const answer = (await response.json()) as { result?: Record<string, any>; error?: SdkError };
  if (answer.result) {
    await expectResultMatchesSchema(method, answer.result);
    return { result: answer.result };
  }
  expect(answer.error, JSON.stringify(answer)).toBeDefined();
  return { error: answer.error! };
}

const getPatient = (cred: Cred) => sdkCall('patient.get_patient', {}, cred);

function authenticate(exchangeToken: string, searchStrategy: 'PHONE' | 'MEDCARD', patientProperties: object, medCardId = '') {
  return sdkCall('embedded_storage.authenticate', { exchangeToken, searchStrategy, patientProperties, medCardId }, null);
}

/**
 * The authorization server's part: a session of `user` (phone proven by a one-time password) and an
 * exchange token it stores over the internal channel, with the verified phone.
 */
async function storeExchangeToken(user: string, { ttl = 1440, phone = MARIA.phone } = {}): Promise<{ cred: Cred; exchangeToken: string }> {
  const cred = { user, token: unique('sdk-token') };
  const exchangeToken = unique('exchange');
  const authInfo = { user: cred.user, token: cred.token, ttl, created: new Date().toISOString(), phone };
  const response = await fetch(`${service.internalUrl}/${VERSION}/`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'embedded_storage.save_exchange_token',
      params: { exchangeToken, authInfo },
      cred: { user: INTERNAL_USER, token: sha1hex(INTERNAL_PASSWORD + exchangeToken) },
    }),
  });
  expect(await response.json()).toMatchObject({ result: { success: true } });
  return { cred, exchangeToken };
}

/** A new user logs in and asks for an exchange token. */
const loginAndExchangeToken = (options: { ttl?: number; phone?: string } = {}) => storeExchangeToken(unique('sdk-user'), options);

/** The SDK test's checkPatient. */
function checkPatient(patient: Record<string, any>, input = MARIA) {
  expect(patient.id).toBe('demo-1');
  expect(patient.name).toBe(input.name);
  expect(patient.surname).toBe(input.surname);
  expect(patient.gender).toBe(input.gender);
  expect(patient.phones).toEqual([input.phone]);
}

describe('getAuthenticatedPatient', () => {
  it('get_patient of a new user is an authorization error (-33000), the exchange token flow follows, then get_patient answers', async () => {
    const { cred, exchangeToken } = await loginAndExchangeToken();

    // Step patient: the EHR server holds no session for this user.
    const refused = await getPatient(cred);
    expect(refused.error?.code).toBe(-33000);
    expect(isAuthorizationError(refused.error)).toBe(true);

    // Steps exchangeToken, input, authenticate: a JavaScript Date made at local midnight in Moscow.
    const date = new Date(moscowLocalMidnight(1990, 4, 17));
    const authenticated = await authenticate(exchangeToken, 'PHONE', { ...MARIA, date });
    expect(authenticated.result?.userSign).toEqual(expect.any(String));
    checkPatient(authenticated.result!.patient);

    const patient = await getPatient(cred);
    checkPatient(patient.result!.patient);
    expect(patient.result!.userSign).toBe(authenticated.result!.userSign);

    // The wire format the SDK sends, as sent.
    const authenticateBody = sentBodies.find((body) => body.includes('"embedded_storage.authenticate"'))!;
    expect(authenticateBody).toMatch(
      /^\{"jsonrpc":"2\.0","id":"\d+","method":"embedded_storage\.authenticate","params":\{"exchangeToken":.*\},"cred":null,"apiKey":null\}$/,
    );
    expect(authenticateBody).toContain(`"date":"${date.toISOString()}"`);
  });

  it.each([
    [
      'a JavaScript Date at local midnight in Moscow (toISOString: the previous day, 20:00Z in the summer of 1990)',
      () => new Date(moscowLocalMidnight(1990, 4, 17)).toISOString(),
      'demo-1',
    ],
    ['text with seven fractional digits and Z (the SDK fixture form)', () => '1990-05-17 04:40:32.4570000Z', 'demo-1'],
    ['text with no fraction and Z (the SDK web sample form)', () => '1990-05-17 00:00:00Z', 'demo-1'],
    ['the original form without a zone', () => '1990-05-17 00:00:00.000', 'demo-1'],
  ])('authenticates with %s', async (_form, date) => {
    const { cred, exchangeToken } = await loginAndExchangeToken();
    const authenticated = await authenticate(exchangeToken, 'PHONE', { ...MARIA, date: date() });
    checkPatient(authenticated.result!.patient);
    expect((await getPatient(cred)).result!.patient.id).toBe('demo-1');
  });

  it('authenticates the demo patient born in November, whose Moscow midnight is 21:00Z the day before', async () => {
    const alexey = { id: '', surname: 'Фёдоров', name: 'Алексей', middleName: 'Иванович', phone: '+79031112233', email: '', gender: 1 };
    const date = new Date(moscowLocalMidnight(1985, 10, 2));
    expect(date.toISOString()).toBe('1985-11-01T21:00:00.000Z');
    const { exchangeToken } = await loginAndExchangeToken({ phone: alexey.phone });
    const authenticated = await authenticate(exchangeToken, 'PHONE', { ...alexey, date });
    expect(authenticated.result!.patient).toMatchObject({ id: 'demo-2', gender: 1, phones: [alexey.phone] });
  });

  it('isAuthenticationError: data matching nobody is -34001 at the authenticate step', async () => {
    const { exchangeToken } = await loginAndExchangeToken();
    const refused = await authenticate(exchangeToken, 'PHONE', { ...MARIA, name: 'Марина', date: '1990-05-17 00:00:00Z' });
    expect(refused.error?.code).toBe(-34001);
    expect(isAuthorizationError(refused.error)).toBe(false);
  });
});

describe('the flows of the SDK tests (tests/auth.test.ts)', () => {
  let firstUser: { cred: Cred; userSign: string };

  it('authenticateByPhone', async () => {
    const { cred, exchangeToken } = await loginAndExchangeToken();
    const authenticated = await authenticate(exchangeToken, 'PHONE', { ...MARIA, date: new Date(moscowLocalMidnight(1990, 4, 17)) }, '');
    checkPatient(authenticated.result!.patient);
    firstUser = { cred, userSign: authenticated.result!.userSign };
  });

  it('authenticateByMedCard: a second user links the same patient', async () => {
    const { cred, exchangeToken } = await loginAndExchangeToken();
    const authenticated = await authenticate(exchangeToken, 'MEDCARD', { ...MARIA, date: '1990-05-16 21:00:00.0000000Z' }, 'MC-0001');
    checkPatient(authenticated.result!.patient);
    expect(authenticated.result!.userSign).not.toBe(firstUser.userSign);
    expect((await getPatient(cred)).result!.patient.id).toBe('demo-1');
  });

  it('loginWithExistsUser: the authorization server stores the next session with the user_sign; get_patient answers', async () => {
    const next = { user: firstUser.cred.user, token: unique('sdk-token') };
    const response = await fetch(`${service.internalUrl}/${VERSION}/`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'embedded_storage.save_auth_info',
        params: { authInfo: { ...next, ttl: 1440 } },
        cred: { user: INTERNAL_USER, token: sha1hex(INTERNAL_PASSWORD + firstUser.userSign) },
      }),
    });
    expect(await response.json()).toMatchObject({ result: { success: true, internalUserId: 'demo-1' } });
    const patient = await getPatient(next);
    checkPatient(patient.result!.patient);
    expect(patient.result!.userSign).toBe(firstUser.userSign);
  });

  it('patientLinkConflict: the same user authenticating again gets -34009', async () => {
    const { cred, exchangeToken } = await loginAndExchangeToken();
    expect((await authenticate(exchangeToken, 'PHONE', { ...MARIA, date: '1990-05-17 00:00:00Z' })).result).toBeDefined();
    const again = await storeExchangeToken(cred.user);
    const conflict = await authenticate(again.exchangeToken, 'PHONE', { ...MARIA, date: '1990-05-17 00:00:00Z' });
    expect(conflict.error?.code).toBe(-34009);
  });

  it('not_authenticated and callbackHandlers: an unknown session is -33000 (onAuthNotAuthorized)', async () => {
    const refused = await getPatient({ user: unique('sdk-user'), token: unique('sdk-token') });
    expect(refused.error?.code).toBe(-33000);
    expect(isAuthorizationError(refused.error)).toBe(true);
  });

  it('expired: a session past its ttl is -33001 (onAuthExpired)', async () => {
    const { cred, exchangeToken } = await loginAndExchangeToken({ ttl: 1 });
    expect((await authenticate(exchangeToken, 'PHONE', { ...MARIA, date: '1990-05-17 00:00:00.000' })).result).toBeDefined();
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const expired = await getPatient(cred);
    expect(expired.error?.code).toBe(-33001);
    expect(isAuthorizationError(expired.error)).toBe(true);
  });

  it('cleanAuthentication: remove_authentication ends the link, and the user authenticates anew', async () => {
    const { cred, exchangeToken } = await loginAndExchangeToken();
    expect((await authenticate(exchangeToken, 'PHONE', { ...MARIA, date: '1990-05-17 00:00:00Z' })).result).toBeDefined();
    expect((await sdkCall('embedded_storage.remove_authentication', {}, cred)).result).toEqual({ success: true });
    expect((await getPatient(cred)).error?.code).toBe(-33000);
    const again = await storeExchangeToken(cred.user);
    expect((await authenticate(again.exchangeToken, 'PHONE', { ...MARIA, date: '1990-05-17 00:00:00Z' })).result).toBeDefined();
  });
});
