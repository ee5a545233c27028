import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/db/embedded-postgres.js';
import { repoRoot } from '../support/cli.js';
import type { TestService } from '../support/service.js';
import { INTERNAL_USER, INTERNAL_PASSWORD, startEhrTestService } from '../ehr/support/fixtures.js';
import { rpc, sha1hex, VERSION } from '../ehr/support/rpc.js';

/**
 * Issue 22, item 5: an error a newcomer meets while following the README points at the mistake:
 * the listener that answers a method or path, the form a credential must take, and a helper that
 * says "no answer" rather than printing a stack trace.
 */
describe('errors that point the right way', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startEhrTestService({}, ['ehr', 'emdr']);
  });

  afterAll(async () => {
    await service?.stop();
  });

  it('names the listener of a method called on the other one', async () => {
    const exchangeToken = `exchange-${Date.now()}`;
    const onPublic = await rpc(
      service.publicUrl,
      'embedded_storage.save_exchange_token',
      { exchangeToken, authInfo: { user: 'u', token: 't', ttl: 60 } },
      { user: INTERNAL_USER, token: sha1hex(INTERNAL_PASSWORD + exchangeToken) },
    );
    expect(onPublic.error).toMatchObject({ code: -32601, message: 'Method not found' });
    expect(onPublic.error!.data!.reason).toBe(
      'embedded_storage.save_exchange_token answers only on the internal listener (INTERNAL_PORT, default 8081), for the authorization server, not on this one',
    );
    const onInternal = await rpc(service.internalUrl, 'patient.get_patient', {});
    expect(onInternal.error!.data!.reason).toBe('patient.get_patient answers only on the public listener (PORT, default 8080), not on this one');
    // A method that exists nowhere says so (patient.get_patients is the record's back-office method now).
    expect((await rpc(service.publicUrl, 'patient.get_medical_history', {})).error!.data!.reason).toBe(
      'no method patient.get_medical_history on this endpoint',
    );
  });

  it("keeps every error's message English on the wire, whatever language the client prefers (they are for logs)", async () => {
    const ask = async (language: string) => {
      const rpcAnswer = await fetch(`${service.publicUrl}/${VERSION}/`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'accept-language': language },
        body: '{"jsonrpc":"2.0","id":1,"method":"no.such"}',
      });
      const restAnswer = await fetch(`${service.publicUrl}/api/messages`, { headers: { 'accept-language': language } });
      return {
        rpc: await rpcAnswer.json(),
        rest: await restAnswer.json(),
        contentLanguage: [rpcAnswer.headers.get('content-language'), restAnswer.headers.get('content-language')],
      };
    };
    const [russian, english] = [await ask('ru-RU,ru;q=0.9'), await ask('en')];
    expect(russian.rpc).toEqual(english.rpc);
    expect(russian.rest).toEqual(english.rest);
    expect(russian.rest).toMatchObject({ status: 'Error', errors: [{ code: 'UNAUTHENTICATED', message: expect.stringMatching(/^[\x20-\x7e]+$/) }] });
    expect(russian.contentLanguage).toEqual([null, null]);
  });

  it('answers /api/*, /docs and /console on the internal listener by naming the public one', async () => {
    for (const route of ['/api/RegisterDocument', '/api/messages', '/docs', '/console']) {
      const answer = await fetch(`${service.internalUrl}${route}`, { method: route === '/api/RegisterDocument' ? 'POST' : 'GET' });
      expect(answer.status, route).toBe(404);
      expect(((await answer.json()) as { error: string }).error, route).toBe(
        'this is the internal listener (INTERNAL_PORT); interface B (/api/*), /docs and /console answer on the public listener (PORT)',
      );
    }
    const elsewhere = await fetch(`${service.internalUrl}/no/such/path`);
    expect(((await elsewhere.json()) as { error: string }).error).toBe(
      `no such path on the internal listener (INTERNAL_PORT); it answers interface A's internal methods at /${VERSION}/, /healthz, /readyz, /metrics`,
    );
  });

  it('tells the expected form of an internal credential with every rejection, the same whether the account or the token was wrong', async () => {
    const exchangeToken = `exchange-${Date.now()}`;
    const params = { exchangeToken, authInfo: { user: 'u', token: `t-${Date.now()}`, ttl: 60 } };
    const rule = "cred.token is the lowercase hex SHA-1 (40 characters) of the internal account's password followed by params.exchangeToken";
    const rejected = async (cred?: { user: string; token: string }) =>
      (await rpc(service.internalUrl, 'embedded_storage.save_exchange_token', params, cred)).error!;
    // The order of password and token swapped: well-formed, wrong.
    expect(await rejected({ user: INTERNAL_USER, token: sha1hex(exchangeToken + INTERNAL_PASSWORD) })).toEqual({
      code: -33000,
      message: 'NotAuthorized',
      data: { reason: 'credentials rejected', hint: rule },
    });
    expect((await rejected({ user: 'nobody', token: sha1hex(exchangeToken + INTERNAL_PASSWORD) })).data).toEqual({
      reason: 'credentials rejected',
      hint: rule,
    });
    // sha1sum's whole output, upper case, base64: not the form at all.
    for (const token of [
      `${sha1hex(INTERNAL_PASSWORD + exchangeToken)}  -`,
      sha1hex(INTERNAL_PASSWORD + exchangeToken).toUpperCase(),
      Buffer.from(sha1hex(INTERNAL_PASSWORD + exchangeToken), 'hex').toString('base64'),
    ]) {
      expect((await rejected({ user: INTERNAL_USER, token })).data).toEqual({
        reason: 'credentials rejected',
        hint: `cred.token is not 40 lowercase hex characters; ${rule}`,
      });
    }
    expect((await rejected()).data).toEqual({ reason: 'credentials rejected', hint: `no cred {user, token} was sent; ${rule}` });
    const saveAuthInfo = await rpc(
      service.internalUrl,
      'embedded_storage.save_auth_info',
      { authInfo: { user: 'nobody-linked', token: 't', ttl: 60 } },
      { user: 'nobody', token: 'x' },
    );
    expect(saveAuthInfo.error!.data).toEqual({
      reason: 'credentials rejected',
      hint: "cred.token is not 40 lowercase hex characters; cred.token is the lowercase hex SHA-1 (40 characters) of the internal account's password followed by the user_sign that authenticate answered for authInfo.user",
    });
  });

  for (const readme of ['README.md', 'README.ru.md']) {
    it(`${readme}: its json helper says "no answer" in one line when curl reached no service (a wrong port), no stack trace`, async () => {
      const text = await fs.readFile(path.join(repoRoot, readme), 'utf8');
      const helper = /^json\(\) \{.*\}$/m.exec(text)?.[0];
      expect(helper, `${readme} defines json()`).toBeDefined();
      const closedPort = await freePort();
      const script = `${helper}\nANSWER=$(curl -sS http://127.0.0.1:${closedPort}/api/messages)\necho "$ANSWER" | json queueMessageId\necho "status $?"\necho '{"a":{"b":"deep"}}' | json a.b\necho 'not json' | json a`;
      const { stdout, stderr } = await new Promise<{ stdout: string; stderr: string }>((resolve) => {
        const child = spawn('bash', ['--noprofile', '--norc', '-c', script], { cwd: repoRoot });
        let out = '';
        let err = '';
        child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
        child.on('close', () => resolve({ stdout: out, stderr: err }));
      });
      // curl -sS says why, the helper says what it did not get; neither prints a stack.
      expect(stderr).toMatch(/curl: \(7\) Failed to connect to 127\.0\.0\.1 port \d+/);
      expect(stderr).toContain('json: no answer (is the service running on that port?)');
      expect(stderr).toContain('json: not JSON: not json');
      expect(stderr).not.toMatch(/^\s+at /m);
      expect(stdout).toContain('status 1');
      expect(stdout).toContain('deep');
    });
  }
});
