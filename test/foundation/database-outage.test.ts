import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { VERSION } from '../ehr/support/rpc.js';
import { responseProblems } from '../support/contract.js';
import { createTestDatabase } from '../support/database.js';
import { addClinic, authHeaders } from '../support/emdr.js';
import { startServeProcess, type ServeProcess } from '../support/processes.js';
import { until } from '../support/until.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';

const isJsonObject = (line: string) => {
  try {
    const value = JSON.parse(line) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
};

/**
 * `serve` reaches PostgreSQL through a TCP proxy that the test cuts: an outage of the database
 * alone, the way a restart or a network failure looks to the service.
 */
describe('while the database is unreachable', () => {
  let proxy: TcpProxy;
  let serve: ServeProcess;
  let clinic: CreatedClinicAccount;

  beforeAll(async () => {
    const databaseUrl = await createTestDatabase();
    const direct = new URL(databaseUrl);
    proxy = await startTcpProxy(direct.hostname, Number(direct.port));
    const proxied = new URL(databaseUrl);
    proxied.port = String(proxy.port);
    serve = await startServeProcess({ DATABASE_URL: proxied.toString(), LOG_LEVEL: 'info' });
    clinic = await addClinic({ databaseUrl, dataKey: Buffer.from(serve.env.DATA_KEY!, 'hex') }, 'http://127.0.0.1:9');
  });

  afterAll(async () => {
    await serve?.stop();
    await proxy?.close();
  });

  const demand = async (headers: Record<string, string>) => {
    const response = await fetch(`${serve.publicUrl}/api/DemandContent`, { method: 'POST', headers, body: JSON.stringify({ emdrId: '26.11.000000001' }) });
    return { status: response.status, retryAfter: response.headers.get('retry-after'), body: (await response.json()) as { errors?: Array<{ code: string }> } };
  };
  const getPatient = async () => {
    const response = await fetch(`${serve.publicUrl}/${VERSION}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json;charset=UTF-8' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'patient.get_patient', params: {}, cred: { user: 'u', token: 't' } }),
    });
    return { status: response.status, body: (await response.json()) as { error?: { code: number; data?: { reason?: string } } } };
  };

  it('says "retry later" on both interfaces (never bad credentials), logs only JSON lines, and recovers', async () => {
    expect((await demand(authHeaders(clinic))).status).toBe(200);
    const logMark = serve.output().length;
    await proxy.cutOff();
    for (let round = 0; round < 3; round += 1) {
      for (const headers of [authHeaders(clinic), { ...authHeaders(clinic), token: 'wrong' }]) {
        const answer = await demand(headers);
        expect(answer).toMatchObject({ status: 503, body: { errors: [{ code: 'SERVICE_UNAVAILABLE' }] } });
        expect(Number(answer.retryAfter)).toBeGreaterThan(0);
        expect(responseProblems('POST', '/api/DemandContent', answer.status, answer.body)).toEqual([]);
      }
      const rpc = await getPatient();
      expect(rpc.status).toBe(200);
      expect(rpc.body.error).toMatchObject({ code: -32001, data: { reason: expect.stringMatching(/retry later/) } });
    }
    // /metrics still answers, and says the database is down (the alert DatabaseDown of deploy/prometheus).
    const scrape = async () => (await (await fetch(`${serve.internalUrl}/metrics`)).text()).match(/^ehr_gateway_database_up (\d)$/m)?.[1];
    expect(await scrape()).toBe('0');
    await proxy.restore();
    await until(
      'interface B recovered',
      async () => (await demand(authHeaders(clinic))).status,
      (status) => status === 200,
      60_000,
    );
    expect(await scrape()).toBe('1');
    // Back to judging the call itself (no session for these credentials), not the outage.
    expect([-32001, -32603]).not.toContain((await getPatient()).body.error?.code);

    const lines = serve
      .output()
      .slice(logMark)
      .split('\n')
      .filter((line) => line.trim() !== '');
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.filter((line) => !isJsonObject(line))).toEqual([]);
    expect(lines.filter((line) => /Connection Error|Acquire connection error/.test(line))).toEqual([]);
  });
});
