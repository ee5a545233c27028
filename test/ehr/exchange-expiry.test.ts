import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestService } from '../support/service.js';
import { PHONE_OPTIONAL, authenticate, startEhrTestService, MARIA, saveExchangeToken, unique } from './support/fixtures.js';
import { expectError } from './support/rpc.js';

let service: TestService;

beforeAll(async () => {
  service = await startEhrTestService({ EXCHANGE_TOKEN_TTL: '1s', AUTH_TTL_UNIT: 'minutes', ...PHONE_OPTIONAL });
});

afterAll(async () => {
  await service?.stop();
});

describe('exchange token lifetime (EXCHANGE_TOKEN_TTL=1s)', () => {
  it('answers -33001 once the exchange token has expired, and reports its expiry', async () => {
    const exchangeToken = unique('exchange');
    const before = Date.now();
    const saved = await saveExchangeToken(service, exchangeToken, { user: unique('user'), token: unique('token'), ttl: 10 });
    const expiresAt = Date.parse((saved.result as { expiresAt: string }).expiresAt);
    expect(expiresAt).toBeGreaterThanOrEqual(before + 1000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 1000);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt - Date.now()) + 100));
    expectError(await authenticate(service, exchangeToken, MARIA), -33001, 'exchange token expired');
  });
});

describe('AUTH_TTL_UNIT=minutes', () => {
  it('counts authInfo.ttl in minutes from created', async () => {
    const created = new Date(Date.now() - 60_000);
    const exchangeToken = unique('exchange');
    await saveExchangeToken(service, exchangeToken, { user: unique('user'), token: unique('token'), ttl: 2, created: created.toISOString() });
    // 2 minutes from a minute ago: still live. With seconds it would have expired.
    expect((await authenticate(service, exchangeToken, MARIA)).result).toMatchObject({ internalUserId: 'demo-1' });
    expectError(
      await saveExchangeToken(service, unique('exchange'), { user: unique('user'), token: unique('token'), ttl: 1, created: created.toISOString() }),
      -33001,
    );
  });
});
