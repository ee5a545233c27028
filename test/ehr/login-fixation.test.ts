import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestService } from '../support/service.js';
import { ALEXEY, authenticate, getPatient, saveExchangeToken, startEhrTestService, unique } from './support/fixtures.js';
import { expectError } from './support/rpc.js';

/**
 * Issue 21, L4: login fixation. An exchange token minted for one account, used by another person's
 * app, linked that person's patient to the first account when the authorization server sent no
 * verified phone with it. The decision: the phone binding is required by default
 * (EXCHANGE_TOKEN_PHONE=required); an authorization server that cannot verify phones needs the
 * operator's explicit EXCHANGE_TOKEN_PHONE=optional, and takes the risk.
 */

describe('L4: the phone binding is required by default', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startEhrTestService({}, ['ehr']);
  });

  afterAll(async () => {
    await service?.stop();
  });

  it('refuses save_exchange_token without authInfo.phone with -32602 at /authInfo/phone', async () => {
    const answer = await saveExchangeToken(service, unique('exchange'), { user: unique('attacker'), token: unique('token'), ttl: 3600 });
    // Before: stored, and the token then linked whoever authenticated with it to the attacker's account.
    expectError(answer, -32602);
    expect(answer.error!.data!.errors).toEqual([
      { path: '/authInfo/phone', message: 'is required: the phone the authorization server verified (EXCHANGE_TOKEN_PHONE=required)' },
    ]);
  });

  it("does not link another person's patient to the account a token was minted for", async () => {
    const attacker = { user: unique('attacker'), token: unique('token') };
    const exchangeToken = unique('exchange');
    // The authorization server verified the attacker's own phone.
    expect((await saveExchangeToken(service, exchangeToken, { ...attacker, ttl: 3600, phone: '+79990001122' })).result).toMatchObject({ success: true });
    // The victim's app, handed the attacker's token, sends the victim's data (demo-2).
    expectError(await authenticate(service, exchangeToken, ALEXEY), -34001, 'no single patient matches');
    expectError(await getPatient(service, attacker), -33000);
  });
});

describe("L4: EXCHANGE_TOKEN_PHONE=optional, the operator's explicit choice", () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startEhrTestService({ EXCHANGE_TOKEN_PHONE: 'optional' }, ['ehr']);
  });

  afterAll(async () => {
    await service?.stop();
  });

  it('stores an exchange token without a phone, which then matches on the typed data alone', async () => {
    const user = { user: unique('user'), token: unique('token') };
    const exchangeToken = unique('exchange');
    expect((await saveExchangeToken(service, exchangeToken, { ...user, ttl: 3600 })).result).toMatchObject({ success: true });
    expect((await authenticate(service, exchangeToken, ALEXEY)).result).toMatchObject({ patient: { id: 'demo-2' } });
  });
});
