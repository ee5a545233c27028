import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { verifySignature } from '../../examples/clinic-receiver/receiver.js';
import { runCli } from '../support/cli.js';
import { startCallbackReceiver, type CallbackReceiver, type ReceivedCallback } from '../support/callback-receiver.js';
import { addClinic, authHeaders, openKnex, post, registerBody } from '../support/emdr.js';
import { startTestService, type TestService } from '../support/service.js';
import { until } from '../support/until.js';

/**
 * The operator's commands on clinic accounts against a running service: list, show, disable,
 * enable, and the rotations of a clinic's token and signing secret without a refused request or an
 * unverifiable callback in between.
 */
let service: TestService;
let receiver: CallbackReceiver;

beforeAll(async () => {
  receiver = await startCallbackReceiver();
  // RETENTION 1m: the worker's retention rounds, which end overlaps and forget old tokens, run every 6 s, and a
  // completed request outlives the CLI calls that count it even on a loaded machine (at 10s it did not, at load 22).
  service = await startTestService({ CALLBACK_RETRY_SCHEDULE: '0,200ms,200ms', RETENTION: '1m' });
});

afterAll(async () => {
  await service?.stop();
  await receiver?.close();
});

const cli = async (...args: string[]) => {
  const result = await runCli(args, service.env);
  return { ...result, json: result.code === 0 && result.stdout ? JSON.parse(result.stdout) : undefined };
};

/** The status of an authenticated read of interface B with this token (200, or 401 when refused). */
async function statusWith(clinic: CreatedClinicAccount, token: string): Promise<number> {
  const response = await fetch(`${service.publicUrl}/api/messages`, { headers: { ...authHeaders(clinic), token } });
  await response.body?.cancel();
  return response.status;
}

async function registered(clinic: CreatedClinicAccount): Promise<ReceivedCallback> {
  const answer = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody());
  expect(answer.status).toBe(200);
  const queueMessageId = answer.body.queueMessageId as string;
  await receiver.waitFor((received) => received.some((callback) => callback.body.queueMessageId === queueMessageId));
  return receiver.received.find((callback) => callback.body.queueMessageId === queueMessageId)!;
}

function verifiesWith(callback: ReceivedCallback, secret: string): boolean {
  const header = (name: string) => String(callback.headers[name]);
  return verifySignature(secret, header('webhook-id'), header('webhook-timestamp'), callback.rawBody, header('webhook-signature'));
}

async function withAccounts<T>(work: (accounts: ReturnType<ReturnType<typeof openKnex>>) => Promise<T>): Promise<T> {
  const knex = openKnex(service.databaseUrl);
  try {
    return await work(knex('emdr_clients'));
  } finally {
    await knex.destroy();
  }
}

const accountRow = (clinic: CreatedClinicAccount) =>
  withAccounts(async (accounts) => (await accounts.where({ business_id: clinic.businessId }).first()) as Record<string, unknown>);

const signatureCount = (callback: ReceivedCallback) => String(callback.headers['webhook-signature']).split(' ').length;

describe('clients list, show, disable, enable', () => {
  it('lists and shows accounts without secrets; a disabled account is refused like a wrong token until enabled', async () => {
    const clinic = await addClinic(service, receiver.url);
    receiver.signingSecret = clinic.signingSecret;
    await registered(clinic);
    const account = ['--business-id', clinic.businessId, '--user', clinic.user];

    const listed = await cli('clients', 'list', '--business-id', clinic.businessId);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.json.clients).toEqual([
      expect.objectContaining({
        businessId: clinic.businessId,
        user: clinic.user,
        state: 'active',
        organizations: clinic.organizations,
        callbackUrls: clinic.callbackUrls,
      }),
    ]);
    const shown = await cli('clients', 'show', ...account);
    expect(shown.json).toMatchObject({ businessId: clinic.businessId, state: 'active', callbacks: { failed: 0 } });
    expect(Object.values(shown.json.requests as Record<string, number>).reduce((sum, count) => sum + count, 0)).toBe(1);
    for (const output of [listed.stdout, shown.stdout]) {
      for (const secret of [clinic.token, clinic.signingSecret, clinic.callbackCredentials.token]) expect(output).not.toContain(secret);
    }

    expect((await cli('clients', 'disable', ...account)).json).toEqual({ businessId: clinic.businessId, user: clinic.user, state: 'disabled' });
    expect(await statusWith(clinic, clinic.token)).toBe(401);
    expect((await cli('clients', 'list', '--state', 'disabled', '--business-id', clinic.businessId)).json.clients).toHaveLength(1);
    expect((await cli('clients', 'list', '--state', 'active', '--business-id', clinic.businessId)).json.clients).toHaveLength(0);

    expect((await cli('clients', 'enable', ...account)).json.state).toBe('active');
    expect(await statusWith(clinic, clinic.token)).toBe(200);
  });

  it('names an unknown account in one line with exit code 2', async () => {
    for (const command of ['show', 'disable', 'enable', 'rotate-token', 'rotate-signing-secret']) {
      const result = await cli('clients', command, '--business-id', 'nobody', '--user', 'none');
      expect(result.code, command).toBe(2);
      expect(result.stderr).toBe('ehr-gateway: no clinic account nobody/none\n');
    }
    const bad = await cli('clients', 'rotate-token', '--business-id', 'x', '--user', 'y', '--grace', '31d');
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
  });
});

describe('clients rotate-token', () => {
  it('accepts the old token beside the new one for the grace, then only the new one', async () => {
    const clinic = await addClinic(service, receiver.url);
    const rotated = await cli('clients', 'rotate-token', '--business-id', clinic.businessId, '--user', clinic.user, '--grace', '2h');
    expect(rotated.code, rotated.stderr).toBe(0);
    const { token, previousTokenValidUntil } = rotated.json as { token: string; previousTokenValidUntil: string };
    expect(token).not.toBe(clinic.token);
    expect(Date.parse(previousTokenValidUntil) - Date.now()).toBeGreaterThan(7_100_000);
    expect(await statusWith(clinic, token)).toBe(200);
    expect(await statusWith(clinic, clinic.token)).toBe(200);

    // The grace ends (the clock moved on, as the database sees it): the old token is refused at once, and the worker's retention round forgets its hash.
    await withAccounts((accounts) => accounts.where({ business_id: clinic.businessId }).update({ previous_token_expires_at: accounts.client.raw('now()') }));
    expect(await statusWith(clinic, clinic.token)).toBe(401);
    expect(await statusWith(clinic, token)).toBe(200);
    await until(
      'the previous token forgotten',
      () => accountRow(clinic),
      (row) => row.previous_token_hash === null,
      60_000,
    );
  });

  it('with --grace 0 refuses the old token at once (a leaked token)', async () => {
    const clinic = await addClinic(service, receiver.url);
    const rotated = await cli('clients', 'rotate-token', '--business-id', clinic.businessId, '--user', clinic.user, '--grace', '0');
    expect(rotated.json.previousTokenValidUntil).toBeNull();
    expect(await statusWith(clinic, clinic.token)).toBe(401);
    expect(await statusWith(clinic, rotated.json.token)).toBe(200);
  });
});

describe('clients rotate-signing-secret', () => {
  it('signs each callback with the new and the old secret during the overlap, then with the new one alone', async () => {
    const clinic = await addClinic(service, receiver.url);
    receiver.signingSecret = clinic.signingSecret;
    const before = await registered(clinic);
    expect(signatureCount(before)).toBe(1);

    const rotated = await cli('clients', 'rotate-signing-secret', '--business-id', clinic.businessId, '--user', clinic.user, '--overlap', '2h');
    expect(rotated.code, rotated.stderr).toBe(0);
    const { signingSecret, overlapEndsAt } = rotated.json as { signingSecret: string; overlapEndsAt: string };
    expect(signingSecret).toMatch(/^whsec_/);
    expect(Date.parse(overlapEndsAt)).toBeGreaterThan(Date.now());

    // The receiver still knows the old secret only: it verifies, and so would one that knows the new one.
    const during = await registered(clinic);
    expect(signatureCount(during)).toBe(2);
    expect(during.signatureValid).toBe(true);
    expect(verifiesWith(during, clinic.signingSecret)).toBe(true);
    expect(verifiesWith(during, signingSecret)).toBe(true);

    // The overlap's time is over: the worker's retention round ends it.
    receiver.signingSecret = signingSecret;
    await withAccounts((accounts) => accounts.where({ business_id: clinic.businessId }).update({ signing_overlap_ends_at: accounts.client.raw('now()') }));
    await until(
      'the overlap ended by the worker',
      () => accountRow(clinic),
      (row) => row.signing_overlap_ends_at === null,
      60_000,
    );
    const after = await registered(clinic);
    expect(signatureCount(after)).toBe(1);
    expect(verifiesWith(after, signingSecret)).toBe(true);
    expect(verifiesWith(after, clinic.signingSecret)).toBe(false);
  });

  it('--finish ends an overlap at once; --overlap 0 replaces the secret at once', async () => {
    const clinic = await addClinic(service, receiver.url);
    const account = ['--business-id', clinic.businessId, '--user', clinic.user];
    const first = await cli('clients', 'rotate-signing-secret', ...account, '--overlap', '7d');
    expect((await cli('clients', 'rotate-signing-secret', ...account, '--finish')).json).toEqual({
      businessId: clinic.businessId,
      user: clinic.user,
      overlapEndsAt: null,
    });
    receiver.signingSecret = first.json.signingSecret;
    const finished = await registered(clinic);
    expect(signatureCount(finished)).toBe(1);
    expect(finished.signatureValid).toBe(true);
    expect((await cli('clients', 'rotate-signing-secret', ...account, '--finish')).code).toBe(2);

    const second = await cli('clients', 'rotate-signing-secret', ...account, '--overlap', '0');
    expect(second.json.overlapEndsAt).toBeNull();
    receiver.signingSecret = second.json.signingSecret;
    const replaced = await registered(clinic);
    expect(signatureCount(replaced)).toBe(1);
    expect(replaced.signatureValid).toBe(true);
  });
});
