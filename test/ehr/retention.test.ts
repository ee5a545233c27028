import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestService } from '../support/service.js';
import { until } from '../support/until.js';
import { PHONE_OPTIONAL, authenticate, databaseOf, MARIA, saveExchangeToken, startEhrTestService, unique } from './support/fixtures.js';
import { expectError } from './support/rpc.js';

describe('RETENTION of exchange tokens', () => {
  let service: TestService;
  let database: Awaited<ReturnType<typeof databaseOf>>;

  beforeAll(async () => {
    service = await startEhrTestService({ RETENTION: '2s', EXCHANGE_TOKEN_TTL: '1s', ...PHONE_OPTIONAL });
    database = await databaseOf(service);
  });

  afterAll(async () => {
    await database?.close();
    await service?.stop();
  });

  it('empties an expired exchange token but keeps its hash, so a replayed save_exchange_token cannot store it again', async () => {
    const exchangeToken = unique('exchange');
    const saved = await saveExchangeToken(service, exchangeToken, { user: unique('user'), token: unique('token'), ttl: 3600, phone: '+79161234567' });
    expect(saved.error).toBeUndefined();
    const rowsOf = () => database.knex('ehr_exchange_tokens').select('state', 'user_id', 'session_token_hash', 'phone');

    const [spent] = await until('the purge', rowsOf, (rows) => rows.length === 1 && rows[0].state === 'spent');
    expect(spent).toEqual({ state: 'spent', user_id: null, session_token_hash: null, phone: null });

    // The same call the authorization server made, replayed (its credential covers the token, not authInfo).
    const replay = await saveExchangeToken(service, exchangeToken, { user: unique('attacker'), token: unique('token'), ttl: 3600 });
    expectError(replay, -34004, /already stored/);
    expectError(await authenticate(service, exchangeToken, MARIA), -33000);
    expect(await rowsOf()).toHaveLength(1);
  });
});
