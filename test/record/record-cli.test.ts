import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { createLogger } from '../../src/logging/logger.js';
import { runCli } from '../support/cli.js';
import { sdkCall } from './support.js';
import { startTestService, type TestService } from '../support/service.js';

/** The commands `records import` and `apikeys add|list|revoke|rotate`: help, bad arguments, keys kept as hashes only, rotation without a refused call. */

let service: TestService;

beforeAll(async () => {
  service = await startTestService({}, ['ehr']);
});

afterAll(async () => {
  await service?.stop();
});

describe('records import', () => {
  it('answers --help with the formats and the summary', async () => {
    const help = await runCli(['records', 'import', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Bulk Data NDJSON');
    expect(help.stdout).toContain('rejectedTotal');
  });

  it.each([
    [['records', 'import', '--organization', '1.2.3'], /missing required argument/],
    [['records', 'import', 'x.ndjson'], /required option '--organization <oid>'/],
    [['records', 'import', 'x.ndjson', '--organization', 'not-an-oid'], /is not an OID/],
    [['records', 'import', '/nonexistent/x.ndjson', '--organization', '1.2.3'], /no such file or folder/],
    [['records', 'import', '/tmp', '--organization', '1.2.3', '--source', 'bad source!'], /--source/],
  ])('%j: one line, exit 2', async (args, message) => {
    const result = await runCli(args as string[], service.env);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(message);
  });
});

describe('apikeys', () => {
  it('add prints the key once; list never shows it; the table keeps only its SHA-256; revoke ends it', async () => {
    const added = await runCli(
      ['apikeys', 'add', '--organization', '1.2.643.5.1.13.13.12.2.77.1', '--organization', '1.2.643.5.1.13.13.12.2.77.2', '--name', 'reception'],
      service.env,
    );
    expect(added.code, added.stderr).toBe(0);
    const key = JSON.parse(added.stdout) as { id: string; apiKey: string; organizations: string[]; name: string };
    expect(key).toMatchObject({ name: 'reception', organizations: ['1.2.643.5.1.13.13.12.2.77.1', '1.2.643.5.1.13.13.12.2.77.2'] });
    expect(key.apiKey).toMatch(/^ehrk_[A-Za-z0-9_-]{43}$/);

    const listed = await runCli(['apikeys', 'list'], service.env);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([
      { id: key.id, name: 'reception', organizations: key.organizations, created: expect.any(String), revoked: null },
    ]);
    expect(listed.stdout).not.toContain(key.apiKey);

    const database = await openDatabase(service.config, createLogger('silent'), { adopt: false });
    try {
      const rows = await database.knex('ehr_api_keys').select('*');
      expect(rows).toHaveLength(1);
      expect(Buffer.from(rows[0].key_hash).length).toBe(32);
      expect(JSON.stringify(rows)).not.toContain(key.apiKey.slice(5));
    } finally {
      await database.close();
    }

    const revoked = await runCli(['apikeys', 'revoke', key.id], service.env);
    expect(JSON.parse(revoked.stdout)).toEqual({ id: key.id, revoked: true });
    expect(JSON.parse((await runCli(['apikeys', 'list'], service.env)).stdout)[0].revoked).toEqual(expect.any(String));
  });

  it('rotate gives a successor with the same organizations; the old key works beside it for the grace, then never again', async () => {
    const organization = '1.2.643.5.1.13.13.12.2.77.3';
    const old = await runCli(['apikeys', 'add', '--organization', organization, '--name', 'back office'], service.env);
    expect(old.code, old.stderr).toBe(0);
    const oldKey = JSON.parse(old.stdout) as { id: string; apiKey: string };
    const accepted = async (apiKey: string) => {
      const answer = await sdkCall(service, 'patient.get_patients', { limit: 1 }, { apiKey });
      if (answer.error !== undefined) expect(answer.error.code, JSON.stringify(answer.error)).toBe(-33000);
      return answer.error === undefined;
    };
    expect(await accepted(oldKey.apiKey)).toBe(true);

    const rotated = await runCli(['apikeys', 'rotate', oldKey.id, '--grace', '2h'], service.env);
    expect(rotated.code, rotated.stderr).toBe(0);
    const successor = JSON.parse(rotated.stdout) as {
      id: string;
      apiKey: string;
      name: string;
      organizations: string[];
      previousId: string;
      previousKeyValidUntil: string;
    };
    expect(successor).toMatchObject({ name: 'back office', organizations: [organization], previousId: oldKey.id });
    expect(successor.id).not.toBe(oldKey.id);
    expect(successor.apiKey).not.toBe(oldKey.apiKey);
    expect(Date.parse(successor.previousKeyValidUntil) - Date.now()).toBeGreaterThan(7_100_000);
    // During the grace both keys are accepted: a back office switches whenever it likes.
    expect(await accepted(successor.apiKey)).toBe(true);
    expect(await accepted(oldKey.apiKey)).toBe(true);
    const listed = JSON.parse((await runCli(['apikeys', 'list'], service.env)).stdout) as Array<{ id: string; revoked: string | null }>;
    expect(listed.find((key) => key.id === oldKey.id)!.revoked).toBe(successor.previousKeyValidUntil);

    // The grace is over (as the database's clock sees it): the old key is refused, the new one goes on.
    const database = await openDatabase(service.config, createLogger('silent'), { adopt: false });
    try {
      await database
        .knex('ehr_api_keys')
        .where({ id: oldKey.id })
        .update({ revoked_at: database.knex.raw('now()') });
    } finally {
      await database.close();
    }
    expect(await accepted(oldKey.apiKey)).toBe(false);
    expect(await accepted(successor.apiKey)).toBe(true);
    // A key that is no longer live has no successor to make; --grace 0 ends the old key at once (a leaked key).
    expect((await runCli(['apikeys', 'rotate', oldKey.id], service.env)).stderr).toMatch(`no live api key ${oldKey.id}`);
    const leaked = JSON.parse((await runCli(['apikeys', 'rotate', successor.id, '--grace', '0'], service.env)).stdout) as { apiKey: string };
    expect(await accepted(successor.apiKey)).toBe(false);
    expect(await accepted(leaked.apiKey)).toBe(true);
  });

  it.each([
    [['apikeys', 'rotate', '1', '--grace', '31d'], /--grace "31d" is not a duration from 0 to 30d/],
    [['apikeys', 'rotate', 'x'], /is not an api key id/],
    [['apikeys', 'add'], /at least one --organization/],
    [['apikeys', 'add', '--organization', '1.2.x'], /is not an OID/],
    [['apikeys', 'revoke', 'abc'], /is not an api key id/],
    [['apikeys', 'revoke', '999999'], /no api key 999999/],
    [['apikeys'], /name a subcommand/],
  ])('%j: one line, exit 2', async (args, message) => {
    const result = await runCli(args as string[], service.env);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
  });
});
