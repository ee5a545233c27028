import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedDemoPatients, upsertPatients } from '../../src/ehr/patients/patients.js';
import { startTestService, type TestService } from '../support/service.js';
import {
  ALEXEY,
  authenticate,
  authenticatedUser,
  databaseOf,
  getPatient,
  INTERNAL_USER,
  INTERNAL_USERS,
  MARIA,
  saveAuthInfo,
  saveExchangeToken,
  unique,
  PHONE_OPTIONAL,
} from './support/fixtures.js';
import { expectError, resultValidators, rpc, sha1hex } from './support/rpc.js';

let service: TestService;
let database: { knex: Knex; close(): Promise<void> };

beforeAll(async () => {
  service = await startTestService({ INTERNAL_USERS, ...PHONE_OPTIONAL });
  database = await databaseOf(service);
  await seedDemoPatients(database.knex);
});

afterAll(async () => {
  await database?.close();
  await service?.stop();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A fresh user and session token with a stored exchange token. */
async function pendingExchange(ttl = 3600, extra: Record<string, unknown> = {}) {
  const authInfo = { user: unique('user'), token: unique('token'), ttl, ...extra };
  const exchangeToken = unique('exchange');
  expect((await saveExchangeToken(service, exchangeToken, authInfo)).result).toMatchObject({ success: true });
  return { authInfo, exchangeToken };
}

describe('-33000 NotAuthorized', () => {
  it('refuses save_exchange_token with a wrong token, an unknown internal user or no cred, alike', async () => {
    const authInfo = { user: unique('user'), token: unique('token'), ttl: 60 };
    const exchangeToken = unique('exchange');
    const answers = [
      await saveExchangeToken(service, exchangeToken, authInfo, 'wrong-password'),
      await rpc(
        service.internalUrl,
        'embedded_storage.save_exchange_token',
        { exchangeToken, authInfo },
        { user: 'intruder', token: sha1hex(`pa55word${exchangeToken}`) },
      ),
      await rpc(service.internalUrl, 'embedded_storage.save_exchange_token', { exchangeToken, authInfo }),
      // Uppercase hex is not the documented form.
      await rpc(
        service.internalUrl,
        'embedded_storage.save_exchange_token',
        { exchangeToken, authInfo },
        { user: INTERNAL_USER, token: sha1hex(`pa55word${exchangeToken}`).toUpperCase() },
      ),
    ];
    for (const answer of answers) expectError(answer, -33000, 'credentials rejected');
    // A wrong token and an unknown account answer alike; the hint differs only with the shape of what was sent.
    expect(answers[1]!.error).toEqual(answers[0]!.error);
    expect(new Set(answers.map((answer) => answer.error!.data!.reason)).size).toBe(1);
  });

  it('refuses save_auth_info signed with anything but the user_sign', async () => {
    const { cred } = await authenticatedUser(service);
    expectError(await saveAuthInfo(service, { user: cred.user, token: unique('token'), ttl: 60 }, 'not-the-user-sign'), -33000, 'credentials rejected');
  });

  it("answers get_patient without cred, with an unknown token, and with another user's token: the SDK then starts the exchange-token flow", async () => {
    const { cred } = await authenticatedUser(service);
    expectError(await getPatient(service), -33000, 'no stored session for these credentials');
    expectError(await getPatient(service, { user: cred.user, token: unique('token') }), -33000, 'no stored session for these credentials');
    expectError(await getPatient(service, { user: unique('user'), token: cred.token }), -33000, 'no stored session for these credentials');
  });

  it('refuses an unknown exchange token and a used one', async () => {
    expectError(await authenticate(service, unique('never-stored'), MARIA), -33000, 'exchange token unknown, used or burned');
    const { exchangeToken } = await pendingExchange();
    expect((await authenticate(service, exchangeToken, MARIA)).result).toBeDefined();
    expectError(await authenticate(service, exchangeToken, MARIA), -33000, 'exchange token unknown, used or burned');
  });

  it('burns the exchange token after 5 failed attempts', async () => {
    const { exchangeToken } = await pendingExchange();
    for (let attempt = 1; attempt <= 5; attempt += 1) {
      expectError(await authenticate(service, exchangeToken, { ...MARIA, phone: '+79990000000' }), -34001);
    }
    expectError(await authenticate(service, exchangeToken, MARIA), -33000, 'exchange token unknown, used or burned');
  });

  it('still accepts the right properties after 4 failed attempts', async () => {
    const { exchangeToken } = await pendingExchange();
    for (let attempt = 1; attempt <= 4; attempt += 1)
      expectError(await authenticate(service, exchangeToken, { ...MARIA, date: '1990-05-18 00:00:00.000' }), -34001);
    expect((await authenticate(service, exchangeToken, MARIA)).result).toMatchObject({ internalUserId: 'demo-1' });
  });
});

describe('-33001 AuthExpired', () => {
  it('answers get_patient after the session ttl has passed', async () => {
    const { cred } = await authenticatedUser(service, MARIA, 1);
    expect((await getPatient(service, cred)).result).toBeDefined();
    await sleep(1100);
    expectError(await getPatient(service, cred), -33001, 'session expired');
    expectError(await rpc(service.publicUrl, 'embedded_storage.remove_authentication', {}, cred), -33001);
  });

  it('refuses authInfo that expired before it arrived (ttl counted from created)', async () => {
    const authInfo = { user: unique('user'), token: unique('token'), ttl: 60, created: '2020-01-01 10:00:00.000' };
    expectError(await saveExchangeToken(service, unique('exchange'), authInfo), -33001, 'authInfo already expired');
  });

  it('counts the ttl from created, in seconds', async () => {
    const created = new Date(Date.now() - 30_000);
    const { cred, userSign } = await authenticatedUser(service);
    const stored = await saveAuthInfo(service, { user: cred.user, token: unique('token'), ttl: 3600, created: created.toISOString() }, userSign);
    expect(Date.parse((stored.result as { expiresAt: string }).expiresAt)).toBe(created.getTime() + 3_600_000);
  });
});

describe('-34001 PatientNotAuthenticated', () => {
  it('answers when nobody matches and when two patients match, without echoing the properties', async () => {
    await upsertPatients(database.knex, [
      { id: 'twin-1', surname: 'Петров', name: 'Иван', birthDate: '2000-01-01', gender: 1, phone: '+79005554433', active: true },
      { id: 'twin-2', surname: 'ПЕТРОВ', name: 'иван', birthDate: '2000-01-01', gender: 1, phone: '+79005554433', active: true },
    ]);
    const twins = { surname: 'Петров', name: 'Иван', date: '2000-01-01 00:00:00.000', gender: 1, phone: '+79005554433' };
    const { exchangeToken } = await pendingExchange();
    const ambiguous = await authenticate(service, exchangeToken, twins);
    expectError(ambiguous, -34001, 'no single patient matches');
    const nobody = await authenticate(service, exchangeToken, { ...MARIA, surname: 'Сидорова' });
    expectError(nobody, -34001);
    for (const text of ['Петров', 'Сидорова', '79005554433', '2000-01-01']) expect(JSON.stringify([ambiguous, nobody])).not.toContain(text);
  });

  it('does not match on a different birth date; gender decides nothing (the browser app sends 1 for a woman, the SDK enum 2)', async () => {
    const { exchangeToken } = await pendingExchange();
    expectError(await authenticate(service, exchangeToken, { ...MARIA, date: '1990-05-18 00:00:00.000' }), -34001);
    expect((await authenticate(service, exchangeToken, { ...MARIA, gender: 1 })).result).toMatchObject({ internalUserId: 'demo-1', patient: { gender: 2 } });
    for (const gender of [0, 3, 4]) {
      const other = await pendingExchange();
      expect((await authenticate(service, other.exchangeToken, { ...MARIA, gender })).result, `gender ${gender}`).toMatchObject({ internalUserId: 'demo-1' });
    }
  });

  it('matches only the phone the authorization server verified, when it sent one', async () => {
    const { exchangeToken } = await pendingExchange(3600, { phone: '+79031112233' });
    expectError(await authenticate(service, exchangeToken, MARIA), -34001, 'no single patient matches');
    expect((await authenticate(service, exchangeToken, ALEXEY)).result).toMatchObject({ internalUserId: 'demo-2' });
    expectError(await saveExchangeToken(service, unique('exchange'), { user: unique('user'), token: unique('token'), ttl: 60, phone: '89031112233' }), -32602);
  });
});

describe('-34002 PatientNotFound', () => {
  it('answers get_patient when the patient is no longer active in the patient source', async () => {
    await upsertPatients(database.knex, [
      { id: 'leaving-1', surname: 'Уходящая', name: 'Вера', birthDate: '1970-01-01', gender: 2, phone: '+79007770011', active: true },
    ]);
    const { cred } = await authenticatedUser(service, { surname: 'Уходящая', name: 'Вера', date: '1970-01-01', gender: 2, phone: '+79007770011' });
    expect((await getPatient(service, cred)).result).toMatchObject({ patient: { id: 'leaving-1', active: true } });
    await database.knex('ehr_patients').where({ id: 'leaving-1' }).update({ active: false });
    expectError(await getPatient(service, cred), -34002, 'patient no longer active in the patient source');
  });
});

describe('-34009 PatientAlreadyLinked', () => {
  it('refuses a linked user before matching, without counting a failed attempt', async () => {
    const { cred } = await authenticatedUser(service, MARIA);
    const exchangeToken = unique('exchange');
    await saveExchangeToken(service, exchangeToken, { user: cred.user, token: unique('token'), ttl: 60 });
    expectError(await authenticate(service, exchangeToken, ALEXEY), -34009, 'the user is already linked to a patient');
    const row = await database.knex('ehr_exchange_tokens').where({ user_id: cred.user, state: 'pending' }).first();
    expect(row?.failed_attempts).toBe(0);
  });

  it('lets a second user link the same patient', async () => {
    const first = await authenticatedUser(service, MARIA);
    const second = await authenticatedUser(service, MARIA);
    expect((await getPatient(service, first.cred)).result).toMatchObject({ patient: { id: 'demo-1' } });
    expect((await getPatient(service, second.cred)).result).toMatchObject({ patient: { id: 'demo-1' }, user_sign: second.userSign });
    expect(second.userSign).not.toBe(first.userSign);
  });
});

describe('-34003 SaveAuthInfoError', () => {
  it('refuses a session token stored before', async () => {
    const { cred, userSign } = await authenticatedUser(service);
    expectError(await saveAuthInfo(service, { user: cred.user, token: cred.token, ttl: 60 }, userSign), -34003, 'token already stored');
  });

  it("refuses at authenticate a session token that is another user's", async () => {
    const { cred } = await authenticatedUser(service);
    const exchangeToken = unique('exchange');
    await saveExchangeToken(service, exchangeToken, { user: unique('user'), token: cred.token, ttl: 60 });
    expectError(await authenticate(service, exchangeToken, MARIA), -34003);
  });

  it('lets exactly one of 20 concurrent save_auth_info with the same token win', async () => {
    const { cred, userSign } = await authenticatedUser(service);
    const token = unique('token');
    const answers = await Promise.all(Array.from({ length: 20 }, () => saveAuthInfo(service, { user: cred.user, token, ttl: 60 }, userSign)));
    expect(answers.filter((answer) => answer.result !== undefined)).toHaveLength(1);
    expect(answers.filter((answer) => answer.error?.code === -34003)).toHaveLength(19);
  });
});

describe('-34004 SaveExchangeTokenError', () => {
  it('refuses an exchange token stored before', async () => {
    const { exchangeToken, authInfo } = await pendingExchange();
    expectError(await saveExchangeToken(service, exchangeToken, authInfo), -34004, 'exchange token already stored');
  });

  it('lets exactly one of 20 concurrent save_exchange_token with the same token win', async () => {
    const exchangeToken = unique('exchange');
    const authInfo = { user: unique('user'), token: unique('token'), ttl: 60 };
    const answers = await Promise.all(Array.from({ length: 20 }, () => saveExchangeToken(service, exchangeToken, authInfo)));
    expect(answers.filter((answer) => answer.result !== undefined)).toHaveLength(1);
    expect(answers.filter((answer) => answer.error?.code === -34004)).toHaveLength(19);
  });
});

describe('-34007 UserNotFound', () => {
  it('answers save_auth_info for a user never matched to a patient', async () => {
    expectError(await saveAuthInfo(service, { user: unique('user'), token: unique('token'), ttl: 60 }, 'any'), -34007, 'no internalUserId for this user');
  });
});

describe('channels', () => {
  it('refuses internal methods on the public port and public methods on the internal port', async () => {
    const exchangeToken = unique('exchange');
    const params = { exchangeToken, authInfo: { user: unique('user'), token: unique('token'), ttl: 60 } };
    const cred = { user: INTERNAL_USER, token: sha1hex(`pa55word${exchangeToken}`) };
    expectError(await rpc(service.publicUrl, 'embedded_storage.save_exchange_token', params, cred), -32601);
    expectError(await rpc(service.publicUrl, 'embedded_storage.save_auth_info', { authInfo: params.authInfo }, cred), -32601);
    expectError(await rpc(service.internalUrl, 'patient.get_patient', {}), -32601);
    expectError(await rpc(service.internalUrl, 'embedded_storage.authenticate', { exchangeToken, patientProperties: MARIA }), -32601);
  });
});

describe('remove_auth_info and remove_authentication', () => {
  it('remove_auth_info ends that session only; the user stays matched', async () => {
    const { cred, userSign } = await authenticatedUser(service);
    const other = { user: cred.user, token: unique('token') };
    await saveAuthInfo(service, { ...other, ttl: 60 }, userSign);
    expect((await rpc(service.publicUrl, 'embedded_storage.remove_auth_info', {}, cred)).result).toEqual({ success: true });
    expectError(await getPatient(service, cred), -33000);
    expectError(await rpc(service.publicUrl, 'embedded_storage.remove_auth_info', {}, cred), -33000, 'no stored session for these credentials');
    expect((await getPatient(service, other)).result).toMatchObject({ user_sign: userSign });
  });

  it('remove_authentication removes the match, every session and the user_sign', async () => {
    const { cred, userSign } = await authenticatedUser(service);
    const other = { user: cred.user, token: unique('token') };
    await saveAuthInfo(service, { ...other, ttl: 60 }, userSign);
    expect((await rpc(service.publicUrl, 'embedded_storage.remove_authentication', {}, cred)).result).toEqual({ success: true });
    expectError(await getPatient(service, cred), -33000);
    expectError(await getPatient(service, other), -33000);
    expectError(await saveAuthInfo(service, { user: cred.user, token: unique('token'), ttl: 60 }, userSign), -34007);
    // Matching again gives a new user_sign.
    const exchangeToken = unique('exchange');
    await saveExchangeToken(service, exchangeToken, { user: cred.user, token: unique('token'), ttl: 60 });
    const again = await authenticate(service, exchangeToken, ALEXEY);
    expect(again.result).toMatchObject({ internalUserId: 'demo-2' });
    expect((again.result as { user_sign: string }).user_sign).not.toBe(userSign);
  });
});

describe('params', () => {
  it('answers -32602 with the path of each bad param', async () => {
    const { exchangeToken } = await pendingExchange();
    const missingPhone = await authenticate(service, exchangeToken, { ...MARIA, phone: undefined });
    expectError(missingPhone, -32602);
    expect(missingPhone.error!.data!.errors).toContainEqual(expect.objectContaining({ path: '/patientProperties/phone' }));
    const badDate = await authenticate(service, exchangeToken, { ...MARIA, date: '1990-02-30 00:00:00.000' });
    expect(badDate.error!.data!.errors).toEqual([{ path: '/patientProperties/date', message: 'is not a calendar date' }]);
    const noMedcard = await authenticate(service, exchangeToken, MARIA, { searchStrategy: 'MEDCARD' });
    expect(noMedcard.error!.data!.errors).toEqual([{ path: '/medCardId', message: 'is required when searchStrategy is MEDCARD' }]);
    const badTtl = await rpc(
      service.internalUrl,
      'embedded_storage.save_exchange_token',
      { exchangeToken, authInfo: { user: 'u', token: 't', ttl: 'soon' } },
      { user: INTERNAL_USER, token: 'x' },
    );
    expect(badTtl.error!.data!.errors).toContainEqual(expect.objectContaining({ path: '/authInfo/ttl' }));
  });
});

describe('peer SDK compatibility', () => {
  it("matches by MEDCARD with the peer's date variant, its gender 0 and its extra members", async () => {
    const { exchangeToken } = await pendingExchange();
    const answer = await authenticate(
      service,
      exchangeToken,
      {
        surname: 'ФЁДОРОВ',
        name: 'алексей',
        middleName: null,
        date: '1985-11-02 04:40:32.4570000Z',
        gender: 0,
        phone: '+7 903 111-22-33',
        id: '',
        email: 'x@example.org',
      },
      { searchStrategy: 'MEDCARD', medCardId: ' mc-0002 ' },
    );
    expect(answer.result).toMatchObject({ internalUserId: 'demo-2', patient: { medcardNumber: 'MC-0002' } });
  });

  it('accepts the date a JavaScript Date serializes to', async () => {
    const { exchangeToken } = await pendingExchange();
    expect((await authenticate(service, exchangeToken, { ...MARIA, date: '1990-05-17T00:00:00.000Z' })).result).toMatchObject({ internalUserId: 'demo-1' });
  });
});

describe('result schemas', () => {
  it('reject a result that breaks its schema, so the checks on every call can fail', async () => {
    const validators = await resultValidators();
    expect(validators.get('patient.get_patient')!({ patient: { id: 'demo-1' }, user_sign: 'short' })).toBe(false);
    expect(validators.get('embedded_storage.save_exchange_token')!({ success: true, expiresAt: 'tomorrow' })).toBe(false);
  });
});
