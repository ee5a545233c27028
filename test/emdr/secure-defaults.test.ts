import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { DATA_KEY_FILE, OLD_DATA_KEY_FILE, resolveDataKey } from '../../src/db/encryption.js';
import { migrationSource } from '../../src/db/migrations/index.js';
import { MIGRATIONS } from '../../src/migrations.js';
import { hashToken } from '../../src/emdr/accounts/clients.js';
import { runCli } from '../support/cli.js';
import { startCallbackReceiver, type CallbackReceiver } from '../support/callback-receiver.js';
import { createTestDatabase } from '../support/database.js';
import { authHeaders, openKnex, ORGANIZATION, post, registerBody } from '../support/emdr.js';
import { startTestService, type TestService } from '../support/service.js';

/** The account-related defaults of interface B, and its secrets at rest. */

const hexKey = () => randomBytes(32).toString('hex');

describe('clients add', () => {
  let env: Record<string, string>;
  beforeAll(async () => {
    env = { DATABASE_URL: await createTestDatabase(), DATA_KEY: hexKey(), LOG_LEVEL: 'silent' };
  });
  const add = (businessId: string, ...extra: string[]) =>
    runCli(['clients', 'add', '--business-id', businessId, '--user', 'mis', '--callback-url', 'http://127.0.0.1:9', ...extra], env);

  it('refuses an account without --organization unless --all-organizations is given, in one line with exit code 2', async () => {
    const refused = await add('b-none');
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toMatch(/--organization .*--all-organizations/);
    expect(refused.stdout).toBe('');

    const both = await add('b-both', '--organization', ORGANIZATION, '--all-organizations');
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/not both/);

    const all = await add('b-all', '--all-organizations');
    expect(all.code).toBe(0);
    expect(JSON.parse(all.stdout).organizations).toBeNull();
    const one = await add('b-one', '--organization', ORGANIZATION);
    expect(JSON.parse(one.stdout).organizations).toEqual([ORGANIZATION]);

    const knex = openKnex(env.DATABASE_URL!);
    try {
      expect(await knex('emdr_clients').orderBy('business_id').pluck('business_id')).toEqual(['b-all', 'b-one']);
    } finally {
      await knex.destroy();
    }
  });

  it("registers only callback URLs a request may name (the spec's CallbackUrl), in one line with exit code 2", async () => {
    for (const url of ['https://mis.example.ru/emdr?x=1', 'ftp://mis.example.ru', 'https://mis.example.ru/a b', 'not a url']) {
      const refused = await runCli(['clients', 'add', '--business-id', 'b-url', '--user', 'mis', '--callback-url', url, '--all-organizations'], env);
      expect(refused.code, url).toBe(2);
      expect(refused.stderr.trim().split('\n')).toHaveLength(1);
      expect(refused.stderr).toContain('is not an http(s) base URL');
    }
    const added = await runCli(
      [
        'clients',
        'add',
        '--business-id',
        'b-url',
        '--user',
        'mis',
        '--callback-url',
        'https://mis.example.ru/emdr/',
        '--callback-url',
        'http://[::1]:9090',
        '--all-organizations',
      ],
      env,
    );
    expect(added.code, added.stderr).toBe(0);
    expect(JSON.parse(added.stdout).callbackUrls).toEqual(['https://mis.example.ru/emdr/', 'http://[::1]:9090']);
  });

  it('documents --all-organizations in its help', async () => {
    const help = await runCli(['clients', 'add', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--all-organizations');
  });

  it('keeps the callback token and the signing secret only sealed: neither appears in the stored row', async () => {
    const added = await add('b-sealed', '--organization', ORGANIZATION);
    const printed = JSON.parse(added.stdout);
    const knex = openKnex(env.DATABASE_URL!);
    try {
      const { rows } = await knex.raw(
        `select row_to_json(k)::text as text, callback_token_sealed, signing_secret_sealed from emdr_clients k where business_id = 'b-sealed'`,
      );
      const stored = rows[0].text as string;
      const bytes = Buffer.concat([rows[0].callback_token_sealed, rows[0].signing_secret_sealed]);
      for (const secret of [printed.callbackCredentials.token, printed.signingSecret]) {
        expect(stored).not.toContain(secret);
        expect(bytes.includes(Buffer.from(secret))).toBe(false);
      }
    } finally {
      await knex.destroy();
    }
  });
});

describe('seed-demo', () => {
  it('refuses the database of DATABASE_URL without --force, before touching it', async () => {
    const env = { DATABASE_URL: await createTestDatabase(), DATA_KEY: hexKey(), LOG_LEVEL: 'silent' };
    const refused = await runCli(['seed-demo'], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toMatch(/--force/);
    const knex = openKnex(env.DATABASE_URL);
    try {
      expect(await knex.schema.hasTable('emdr_clients')).toBe(false);
      expect((await runCli(['seed-demo', '--force'], env)).code).toBe(0);
      expect(await knex('emdr_clients').pluck('business_id')).toEqual(['4000125']);
    } finally {
      await knex.destroy();
    }
  });
});

describe('the data key', () => {
  it('is read from DATA_KEY, or from USER_SIGN_KEY, its old name; both set must agree', () => {
    const key = hexKey();
    expect(loadConfig({ DATA_KEY: key }).dataKey!.toString('hex')).toBe(key);
    expect(loadConfig({ USER_SIGN_KEY: key }).dataKey!.toString('hex')).toBe(key);
    expect(loadConfig({ DATA_KEY: key, USER_SIGN_KEY: key }).dataKey!.toString('hex')).toBe(key);
    expect(() => loadConfig({ DATA_KEY: key, USER_SIGN_KEY: hexKey() })).toThrow(/^DATA_KEY: differs from USER_SIGN_KEY/);
    expect(() => loadConfig({ DATA_KEY: 'short' })).toThrow(/^DATA_KEY: /);
    expect(() => loadConfig({ USER_SIGN_KEY: 'short' })).toThrow(/^USER_SIGN_KEY: /);
  });

  it('is required with DATABASE_URL; on the embedded PostgreSQL it is DATA_DIR/data.key, or an existing user-sign.key', async () => {
    await expect(resolveDataKey(loadConfig({ DATABASE_URL: 'postgres://u:p@localhost/db' }))).rejects.toThrow(
      /^DATA_KEY: is required when DATABASE_URL is set/,
    );
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'data-key-'));
    try {
      const old = hexKey();
      await fs.writeFile(path.join(dir, OLD_DATA_KEY_FILE), `${old}\n`, { mode: 0o600 });
      expect((await resolveDataKey(loadConfig({ DATA_DIR: dir }))).toString('hex')).toBe(old);
      await fs.rm(path.join(dir, OLD_DATA_KEY_FILE));
      const generated = await resolveDataKey(loadConfig({ DATA_DIR: dir }));
      expect((await fs.readFile(path.join(dir, DATA_KEY_FILE), 'utf8')).trim()).toBe(generated.toString('hex'));
      expect((await fs.stat(path.join(dir, DATA_KEY_FILE))).mode & 0o777).toBe(0o600);
      expect((await resolveDataKey(loadConfig({ DATA_DIR: dir }))).equals(generated)).toBe(true);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});

describe('a database whose clinic secrets were stored in clear', () => {
  const token = `emdr_${randomBytes(16).toString('hex')}`;
  const callbackToken = `cbt_${randomBytes(16).toString('hex')}`;
  const signingSecret = `whsec_${randomBytes(32).toString('base64')}`;
  let databaseUrl: string;
  let receiver: CallbackReceiver;
  let service: TestService | undefined;

  beforeAll(async () => {
    receiver = await startCallbackReceiver({ signingSecret, expectedHeaders: { businessId: 'b-clear', user: 'ehr-gateway', token: callbackToken } });
    databaseUrl = await createTestDatabase();
    const knex = openKnex(databaseUrl);
    try {
      // The schema as it was before the secrets were sealed: every migration up to emdr_0001.
      for (;;) {
        const [, applied] = (await knex.migrate.up({ migrationSource: migrationSource(MIGRATIONS) })) as [number, string[]];
        if (applied.includes('emdr_0001_clients_requests_callbacks_registry')) break;
      }
      await knex('emdr_clients').insert({
        business_id: 'b-clear',
        user_name: 'mis',
        token_hash: hashToken(token),
        organizations: [ORGANIZATION],
        callback_urls: [receiver.url],
        callback_user: 'ehr-gateway',
        callback_token: callbackToken,
        signing_secret: signingSecret,
      });
    } finally {
      await knex.destroy();
    }
  });

  afterAll(async () => {
    await service?.stop();
    await receiver?.close();
  });

  it('has them sealed by the migration, and the callbacks still carry them', async () => {
    const withoutKey = await runCli(['migrate'], { DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent' });
    expect(withoutKey.code).toBe(2);
    expect(withoutKey.stderr).toMatch(/DATA_KEY: is required when DATABASE_URL is set/);

    const key = hexKey();
    const migrated = await runCli(['migrate'], { DATABASE_URL: databaseUrl, DATA_KEY: key, LOG_LEVEL: 'silent' });
    expect(migrated.code).toBe(0);
    expect(JSON.parse(migrated.stdout).applied).toContain('emdr_0002_sealed_clinic_secrets');
    const knex = openKnex(databaseUrl);
    try {
      const { rows } = await knex.raw(`select row_to_json(k)::text as text from emdr_clients k`);
      expect(rows[0].text).not.toContain(callbackToken);
      expect(rows[0].text).not.toContain(signingSecret);
    } finally {
      await knex.destroy();
    }

    service = await startTestService({ DATABASE_URL: databaseUrl, DATA_KEY: key });
    const clinic = { businessId: 'b-clear', user: 'mis', token } as Parameters<typeof authHeaders>[0];
    const { body: ack } = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody());
    const [acceptance] = await receiver.waitFor((received) => received.some((callback) => callback.body.queueMessageId === ack.queueMessageId));
    expect(acceptance!.signatureValid).toBe(true);
    expect(acceptance!.headers.token).toBe(callbackToken);
    expect(receiver.schemaViolations).toEqual([]);
  });
});
