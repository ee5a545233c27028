import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/db/embedded-postgres.js';
import { openClinicSecret } from '../../src/emdr/accounts/clients.js';
import { DEMO_CLINIC, DEMO_SIGNING_SECRET_FILE } from '../../src/emdr/demo/demo-clinic.js';
import { demoSigningSecret } from '../../src/seed-demo.js';
import { runCli } from '../support/cli.js';
import { startCallbackReceiver, type CallbackReceiver } from '../support/callback-receiver.js';
import { addClinic, authHeaders, openKnex, ORGANIZATION, post, registerBody } from '../support/emdr.js';
import { startTestService, type TestService } from '../support/service.js';
import { until } from '../support/until.js';

const OTHER_ORGANIZATION = '1.2.643.5.1.13.13.12.2.77.8000';

/**
 * Issue 22, item 3: an existing clinic account's callback URLs and organizations change with
 * `clients update` (callbacks not yet delivered follow the account to its new URL), and the demo
 * clinic's with `seed-demo --callback-url`; its signing secret is its data directory's own.
 */
describe('clients update', () => {
  let service: TestService;
  let receiver: CallbackReceiver;

  beforeAll(async () => {
    receiver = await startCallbackReceiver();
    // The old receiver is gone: attempts fail until the account points elsewhere, and keep trying
    // meanwhile (every half second for two minutes: `clients update` may take seconds on a busy machine).
    service = await startTestService({ CALLBACK_RETRY_SCHEDULE: ['0', ...Array<string>(240).fill('500ms')].join(',') });
  });

  afterAll(async () => {
    await service?.stop();
    await receiver?.close();
  });

  const update = (args: string[]) => runCli(['clients', 'update', ...args], { ...service.env, LOG_LEVEL: 'silent' });

  it('moves an account to a new callback URL, its undelivered callbacks with it, and changes its organizations', async () => {
    const gone = `http://127.0.0.1:${await freePort()}`;
    const clinic = await addClinic(service, gone);
    receiver.signingSecret = clinic.signingSecret;
    const { body: ack } = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody());
    const failing = await until(
      'an attempt failed against the old URL',
      async () =>
        (await (await fetch(`${service.publicUrl}/api/messages/${ack.queueMessageId}`, { headers: authHeaders(clinic) })).json()) as {
          callbacks: Array<{ attempts: unknown[]; url: string }>;
        },
      (state) => (state.callbacks[0]?.attempts.length ?? 0) > 0,
    );
    expect(failing.callbacks[0]!.url).toBe(`${gone}/api/SendRegisterDocumentResponse`);

    const updated = await update([
      '--business-id',
      clinic.businessId,
      '--callback-url',
      receiver.url,
      '--organization',
      ORGANIZATION,
      '--organization',
      OTHER_ORGANIZATION,
    ]);
    expect(updated.code, updated.stderr).toBe(0);
    expect(JSON.parse(updated.stdout)).toEqual({
      businessId: clinic.businessId,
      user: clinic.user,
      callbackUrls: [receiver.url],
      organizations: [ORGANIZATION, OTHER_ORGANIZATION],
      callbackUser: 'ehr-gateway',
      // The acceptance callback being retried, and the result callback held behind it.
      moved: { callbacks: 2, requests: 0 },
    });
    // Both arrive at the new URL.
    await receiver.waitFor((received) => received.filter((callback) => callback.body.queueMessageId === ack.queueMessageId).length >= 2, 60_000);
    expect(receiver.received.filter((callback) => callback.body.queueMessageId === ack.queueMessageId).every((callback) => callback.signatureValid)).toBe(true);
    // The new organization is the account's now; a URL it no longer lists is refused in a request.
    expect((await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody({ organization: OTHER_ORGANIZATION }))).status).toBe(200);
    expect((await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody({ callbackUrl: gone }))).status).toBe(403);

    const everyOrganization = await update(['--business-id', clinic.businessId, '--all-organizations']);
    expect(JSON.parse(everyOrganization.stdout)).toMatchObject({ callbackUrls: [receiver.url], organizations: null, moved: { callbacks: 0, requests: 0 } });
  });

  it.each([
    [['--business-id', 'no-such-clinic', '--callback-url', 'http://127.0.0.1:9'], /^ehr-gateway: no clinic account no-such-clinic\n$/],
    [['--business-id', 'x'], /nothing to change/],
    [['--business-id', 'x', '--callback-url', 'http://127.0.0.1:9/?q=1'], /--callback-url "http:\/\/127\.0\.0\.1:9\/\?q=1" is not an http\(s\) base URL/],
    [['--business-id', 'x', '--organization', 'not-an-oid'], /--organization "not-an-oid" is not an OID/],
    [['--business-id', 'x', '--organization', ORGANIZATION, '--all-organizations'], /either --organization or --all-organizations/],
    [['--callback-url', 'http://127.0.0.1:9'], /--business-id/],
  ])('refuses %j with one line and exit code 2', async (args, message) => {
    const result = await update(args);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(message);
  });

  it('asks for --user when a businessId has several accounts', async () => {
    const first = await addClinic(service, receiver.url);
    const knex = openKnex(service.databaseUrl);
    try {
      await knex('emdr_clients').insert({
        ...(await knex('emdr_clients')
          .where({ business_id: first.businessId })
          .first()
          .then(({ id: _id, ...row }) => row)),
        user_name: 'second',
      });
    } finally {
      await knex.destroy();
    }
    const ambiguous = await update(['--business-id', first.businessId, '--callback-url', 'http://127.0.0.1:9']);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toMatch(/has several accounts \(.*mis.*second.*\): name one with --user/);
    const named = await update(['--business-id', first.businessId, '--user', 'second', '--callback-url', 'http://127.0.0.1:9']);
    expect(JSON.parse(named.stdout)).toMatchObject({ user: 'second', callbackUrls: ['http://127.0.0.1:9'] });
  });
});

describe('seed-demo: the demo clinic', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({}, ['emdr']);
  });

  afterAll(async () => {
    await service?.stop();
  });

  const seed = (args: string[] = []) => runCli(['seed-demo', '--force', ...args], { ...service.env, LOG_LEVEL: 'silent' });

  async function storedSecret(): Promise<string> {
    const knex = openKnex(service.databaseUrl);
    try {
      const row = await knex('emdr_clients').where({ business_id: DEMO_CLINIC.businessId }).first<{ signing_secret_sealed: Buffer }>();
      return openClinicSecret(service.dataKey, 'signing_secret', { businessId: DEMO_CLINIC.businessId, user: DEMO_CLINIC.user }, row.signing_secret_sealed);
    } finally {
      await knex.destroy();
    }
  }

  it('takes --callback-url when it creates the clinic and when it exists, keeps it on a plain re-seed, and stores the secret it prints', async () => {
    const created = JSON.parse((await seed(['--callback-url', 'http://127.0.0.1:9191'])).stdout);
    expect(created.clinic).toMatchObject({ created: true, callbackUrls: ['http://127.0.0.1:9191'] });
    expect(await storedSecret()).toBe(created.clinic.signingSecret);

    const moved = JSON.parse((await seed(['--callback-url', 'http://127.0.0.1:9292/clinic'])).stdout);
    expect(moved.clinic).toMatchObject({ created: false, callbackUrls: ['http://127.0.0.1:9292/clinic'] });
    const kept = JSON.parse((await seed()).stdout);
    expect(kept.clinic).toMatchObject({ created: false, callbackUrls: ['http://127.0.0.1:9292/clinic'] });
    // With DATABASE_URL there is no data directory of the database: a fresh secret each run, the one printed.
    expect(kept.clinic.signingSecret).not.toBe(created.clinic.signingSecret);
    expect(await storedSecret()).toBe(kept.clinic.signingSecret);

    const told = `whsec_${Buffer.from('a secret the test chose, 32 bytes!').toString('base64')}`;
    expect(JSON.parse((await seed(['--signing-secret', told])).stdout).clinic.signingSecret).toBe(told);
    expect(await storedSecret()).toBe(told);
  });

  it('refuses a bad --callback-url or --signing-secret with one line and exit code 2', async () => {
    for (const [args, message] of [
      [['--callback-url', 'ftp://127.0.0.1:9090'], /--callback-url "ftp:\/\/127\.0\.0\.1:9090" is not an http\(s\) base URL/],
      [['--signing-secret', 'not-a-secret'], /--signing-secret is a Standard Webhooks secret/],
    ] as const) {
      const result = await seed([...args]);
      expect(result.code).toBe(2);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).toMatch(message);
    }
  });

  it('makes one signing secret per data directory, once, and reuses it; one given wins', async () => {
    const [first, second] = await Promise.all([fs.mkdtemp(path.join(os.tmpdir(), 'demo-secret-')), fs.mkdtemp(path.join(os.tmpdir(), 'demo-secret-'))]);
    try {
      const a = await demoSigningSecret(undefined, first);
      expect(a.signingSecret).toMatch(/^whsec_/);
      expect(a.signingSecretFile).toBe(path.join(first, DEMO_SIGNING_SECRET_FILE));
      expect((await fs.stat(a.signingSecretFile!)).mode & 0o777).toBe(0o600);
      expect((await demoSigningSecret(undefined, first)).signingSecret).toBe(a.signingSecret);
      expect((await demoSigningSecret(undefined, second)).signingSecret).not.toBe(a.signingSecret);
      expect(await demoSigningSecret('whsec_given', first)).toEqual({ signingSecret: 'whsec_given' });
    } finally {
      await Promise.all([first, second].map((dir) => fs.rm(dir, { recursive: true, force: true })));
    }
  });
});
