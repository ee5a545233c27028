import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEhrClient, EhrRpcError } from '../../generated/ehr-client.js';
import { exitOf, runCli } from '../support/cli.js';
import { outputMatching, spawnTsProgram, startServeProcess, type ServeProcess } from '../support/processes.js';

/**
 * The original's story across three processes: the stand-in authorization server
 * (examples/auth-server), ehr-gateway, and a patient app driven by the generated interface A client.
 */
describe('the whole story across three processes', () => {
  let gateway: ServeProcess;
  let authServer: ChildProcess;
  let authUrl: string;

  beforeAll(async () => {
    gateway = await startServeProcess({ INTERNAL_USERS: 'demo-auth:demo-auth-password' });
    const seeded = await runCli(['seed-demo', '--force'], gateway.env);
    expect(seeded.code).toBe(0);
    // On a port it binds itself (0), which it prints once it listens.
    authServer = spawnTsProgram('examples/auth-server/server.ts', ['--port', '0', '--ehr-internal-url', gateway.internalUrl]);
    authUrl = (await outputMatching('auth-server', authServer, /\[auth-server\] listening on (http:\/\/[\d.:]+),/, 30_000)).match[1]!;
    expect((await fetch(`${authUrl}/healthz`)).status).toBe(200);
  });

  afterAll(async () => {
    authServer?.kill('SIGTERM');
    if (authServer) await exitOf(authServer);
    await gateway?.stop();
  });

  async function auth<T>(route: string, body: unknown): Promise<T> {
    const response = await fetch(`${authUrl}${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const payload = (await response.json()) as T & { error?: string };
    if (!response.ok) throw new Error(`${route}: ${response.status} ${payload.error}`);
    return payload;
  }

  async function logIn(phone: string, userSign?: string) {
    await auth('/login/start', { phone });
    const { otp } = (await (await fetch(`${authUrl}/dev/last-otp?phone=${encodeURIComponent(phone)}`)).json()) as { otp: string };
    return auth<{ user: string; token: string; ehrSession: string }>('/login/verify', { phone, otp, ...(userSign ? { userSign } : {}) });
  }

  it('logs in by phone, is refused, authenticates with an exchange token, then reads the patient; a later login stores its session directly', async () => {
    const app = createEhrClient({ publicUrl: gateway.publicUrl });
    const phone = '+79161234567';
    const first = await logIn(phone);
    expect(first.ehrSession).toBe('not requested');

    // 1. Not authenticated on the EHR side yet.
    const refusal = await app.patientGetPatient({}, { user: first.user, token: first.token }).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(EhrRpcError);
    expect((refusal as EhrRpcError).code).toBe(-33000);

    // 2. The authorization server hands out an exchange token and stores it on the EHR server (SHA-1 cred).
    const { exchangeToken } = await auth<{ exchangeToken: string }>('/exchange-token', { user: first.user, token: first.token });

    // 3. The app sends the identifying data to the EHR server only. Another patient's data fails:
    //    the authorization server stored the phone it verified with the exchange token.
    const otherPatient = await app
      .embeddedStorageAuthenticate({
        exchangeToken,
        patientProperties: { name: 'Алексей', surname: 'Фёдоров', date: '1985-11-02 00:00:00.000', gender: 1, phone: '+79031112233' },
      })
      .catch((error: unknown) => error);
    expect((otherPatient as EhrRpcError).code).toBe(-34001);
    const matched = await app.embeddedStorageAuthenticate({
      exchangeToken,
      patientProperties: { name: 'мария', surname: 'ИВАНОВА', date: '1990-05-17 00:00:00.000', gender: 2, phone: '89161234567' },
    });
    expect(matched.patient.surname).toBe('Иванова');
    expect(matched.user_sign).toBe(matched.userSign);
    await auth('/link', { user: first.user, token: first.token, internalUserId: matched.internalUserId });

    // 4. Authenticated: patient data and user_sign.
    const patient = await app.patientGetPatient({}, { user: first.user, token: first.token });
    expect(patient.patient.id).toBe(matched.internalUserId);
    expect(patient.user_sign).toBe(matched.user_sign);

    // 5. A later login: the app hands over its user_sign, the authorization server calls save_auth_info.
    const second = await logIn(phone, matched.user_sign);
    expect(second.ehrSession).toBe('saved');
    expect(second.user).toBe(first.user);
    expect(second.token).not.toBe(first.token);
    const again = await app.patientGetPatient({}, { user: second.user, token: second.token });
    expect(again.patient.id).toBe(matched.internalUserId);
  });

  it('gets the gateway refusal through when the user_sign handed over is wrong', async () => {
    await expect(logIn('+79031112233', 'not-the-user-sign')).rejects.toThrow(/502/);
  });
});
