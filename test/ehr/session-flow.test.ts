import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestService } from '../support/service.js';
import { authenticate, startEhrTestService, getPatient, MARIA, saveAuthInfo, saveExchangeToken } from './support/fixtures.js';
import { expectError } from './support/rpc.js';

let service: TestService;

beforeAll(async () => {
  service = await startEhrTestService();
});

afterAll(async () => {
  await service?.stop();
});

describe('the story of the original, over real HTTP', () => {
  it('get_patient fails, exchange token, authenticate, get_patient, save_auth_info with user_sign, get_patient with the new token', async () => {
    const cred = { user: 'user123', token: 'token456' };

    // 1. The app asks for the patient: the EHR server holds no session yet.
    expectError(await getPatient(service, cred), -33000, 'no stored session for these credentials');

    // 2. The authorization server stores an exchange token over the internal channel, with the phone it verified.
    const saved = await saveExchangeToken(service, 'Xk2pQ9rT4vLm', { ...cred, ttl: 1440, created: new Date().toISOString(), phone: '+79161234567' });
    expect(saved.result).toMatchObject({ success: true });

    // 3. The app authenticates on the public port with the patient's properties.
    const authenticated = await authenticate(service, 'Xk2pQ9rT4vLm', MARIA);
    const result = authenticated.result as {
      patient: { id: string; surname: string; phone: string };
      user_sign: string;
      userSign: string;
      internalUserId: string;
    };
    expect(result.patient).toMatchObject({ id: 'demo-1', surname: 'Иванова', phone: '+79161234567', birthdate: '1990-05-17 00:00:00.000' });
    expect(result.internalUserId).toBe('demo-1');
    expect(result.userSign).toBe(result.user_sign);

    // 4. get_patient now answers with the patient and the same user_sign.
    const patient = await getPatient(service, cred);
    expect(patient.result).toMatchObject({ patient: { id: 'demo-1' }, user_sign: result.user_sign, userSign: result.user_sign });

    // 5. Later the authorization server stores a new session with save_auth_info, signed with the user_sign.
    const newCred = { user: 'user123', token: 'token789' };
    const stored = await saveAuthInfo(service, { ...newCred, ttl: 1440 }, result.user_sign);
    expect(stored.result).toMatchObject({ success: true, internalUserId: 'demo-1' });

    // 6. get_patient works with the new token.
    const again = await getPatient(service, newCred);
    expect(again.result).toMatchObject({ patient: { id: 'demo-1' }, user_sign: result.user_sign });
  });
});
