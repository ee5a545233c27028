import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STAGES } from '../../src/emdr/pipeline/lifecycle/lifecycle.js';
import { statement } from '../../src/db/sql.js';
import { createLogger } from '../../src/logging/logger.js';
import { runInRequest } from '../../src/logging/request-context.js';
import { seedDemoPatients } from '../../src/ehr/patients/patients.js';
import { runCli } from '../support/cli.js';
import { startCallbackReceiver, type CallbackReceiver } from '../support/callback-receiver.js';
import { openSql } from '../support/database.js';
import { addClinic, authHeaders, post, registerBody } from '../support/emdr.js';
import { startTestService, type TestService } from '../support/service.js';
import { until } from '../support/until.js';
import { authenticatedUser, databaseOf, getPatient, INTERNAL_USERS, MARIA } from '../ehr/support/fixtures.js';
import { VERSION } from '../ehr/support/rpc.js';

/** Issue 11: /metrics with real values, the audit trail's rows, request ids on answers, log lines, audit rows and callbacks. */

const AUDIT_ROWS = statement('test_audit_rows', 'select * from audit_events order by id');

/** The value of one sample of the Prometheus text, or undefined. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const match = /^([a-z_]+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const got = Object.fromEntries([...(match[2] ?? '').matchAll(/([a-z_]+)="([^"]*)"/g)].map((pair) => [pair[1], pair[2]]));
    if (Object.entries(labels).every(([key, value]) => got[key] === value)) return Number(match[3]);
  }
  return undefined;
}

/** /metrics once `ready` holds for it (a callback's outcome is counted just after the receiver answered). */
function scrapeWhen(url: string, ready: (text: string) => boolean): Promise<string> {
  return until('the metrics', async () => (await fetch(`${url}/metrics`)).text(), ready);
}

describe('metrics, audit trail and request ids', () => {
  let service: TestService;
  let receiver: CallbackReceiver;

  beforeAll(async () => {
    receiver = await startCallbackReceiver();
    service = await startTestService({ INTERNAL_USERS, CALLBACK_RETRY_SCHEDULE: '0,1m' });
    const database = await databaseOf(service);
    await seedDemoPatients(database.knex);
    await database.close();
  });

  afterAll(async () => {
    await service?.stop();
    await receiver?.close();
  });

  it('serves /metrics on the internal listener only, with the values of real requests', async () => {
    const { cred } = await authenticatedUser(service, MARIA);
    for (let i = 0; i < 3; i += 1) expect((await getPatient(service, cred)).result).toBeDefined();
    expect((await getPatient(service, { user: 'nobody', token: 'nothing' })).error?.code).toBe(-33000);
    const clinic = await addClinic(service, receiver.url);
    receiver.signingSecret = clinic.signingSecret;
    expect((await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody())).status).toBe(200);
    expect((await post(service.publicUrl, '/api/RegisterDocument', { ...authHeaders(clinic), token: 'wrong' }, registerBody())).status).toBe(401);
    await receiver.waitFor((received) => received.length >= 2, 30_000);

    expect((await fetch(`${service.publicUrl}/metrics`)).status).toBe(404);
    const response = await fetch(`${service.internalUrl}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await scrapeWhen(
      service.internalUrl,
      (scraped) => sample(scraped, 'ehr_gateway_callback_deliveries_total', { callback: 'SendRegisterDocumentResultResponse' }) === 1,
    );
    expect(sample(text, 'ehr_gateway_rpc_requests_total', { method: 'patient.get_patient' })).toBe(4);
    expect(sample(text, 'ehr_gateway_rpc_errors_total', { method: 'patient.get_patient', code: '-33000' })).toBe(1);
    expect(sample(text, 'ehr_gateway_rpc_request_duration_seconds_count', { method: 'patient.get_patient' })).toBe(4);
    expect(sample(text, 'ehr_gateway_rpc_requests_total', { method: 'embedded_storage.authenticate' })).toBe(1);
    expect(sample(text, 'ehr_gateway_api_requests_total', { operation: 'RegisterDocument', status: '200' })).toBe(1);
    expect(sample(text, 'ehr_gateway_api_requests_total', { operation: 'RegisterDocument', status: '401' })).toBe(1);
    expect(sample(text, 'ehr_gateway_api_errors_total', { operation: 'RegisterDocument', code: 'UNAUTHENTICATED' })).toBe(1);
    expect(sample(text, 'ehr_gateway_api_request_duration_seconds_count', { operation: 'RegisterDocument' })).toBe(2);
    expect(sample(text, 'ehr_gateway_callback_attempts_total', { callback: 'SendRegisterDocumentResponse' })).toBe(1);
    expect(sample(text, 'ehr_gateway_callback_deliveries_total', { callback: 'SendRegisterDocumentResponse' })).toBe(1);
    expect(sample(text, 'ehr_gateway_callback_deliveries_total', { callback: 'SendRegisterDocumentResultResponse' })).toBe(1);
    // One queue per stage of the lifecycle (src/emdr/pipeline/lifecycle/lifecycle.ts).
    for (const queue of Object.keys(STAGES)) {
      expect(sample(text, 'ehr_gateway_queue_depth', { queue })).toBe(0);
      expect(sample(text, 'ehr_gateway_queue_claimable', { queue })).toBe(0);
      expect(sample(text, 'ehr_gateway_queue_oldest_age_seconds', { queue })).toBe(0);
    }
    expect(sample(text, 'ehr_gateway_db_pool_connections')).toBeGreaterThan(0);
    expect(sample(text, 'ehr_gateway_db_pool_in_use')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'ehr_gateway_db_pool_waiting')).toBe(0);
    expect(sample(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(sample(text, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
  });

  it('reports a queue that waits: depth, claimable and the age of its oldest row', async () => {
    const clinic = await addClinic(service, `${receiver.url}/`);
    // The receiver refuses: the acceptance callback waits for its retry, the result stays held.
    const policy = receiver.reply;
    receiver.reply = () => ({ status: 503, body: {} });
    try {
      const { body } = await post(service.publicUrl, '/api/DemandContent', authHeaders(clinic), { emdrId: '26.11.999999999' });
      await receiver.waitFor((received) => received.some((callback) => callback.body.queueMessageId === body.queueMessageId), 30_000);
    } finally {
      receiver.reply = policy;
    }
    const text = await scrapeWhen(
      service.internalUrl,
      (scraped) => sample(scraped, 'ehr_gateway_callback_failures_total', { callback: 'SendDemandContentResponse' }) === 1,
    );
    expect(sample(text, 'ehr_gateway_queue_depth', { queue: 'delivery' })).toBe(1);
    expect(sample(text, 'ehr_gateway_queue_oldest_age_seconds', { queue: 'delivery' })).toBeGreaterThan(0);
    expect(sample(text, 'ehr_gateway_queue_claimable', { queue: 'delivery' })).toBe(0);
    expect(sample(text, 'ehr_gateway_callback_failures_total', { callback: 'SendDemandContentResponse' })).toBe(1);
  });

  it('carries x-request-id: kept when sane, generated otherwise, on every answer, log line, audit row and callback', async () => {
    const { cred } = await authenticatedUser(service, MARIA);
    const kept = await fetch(`${service.publicUrl}/${VERSION}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'clinic-trace.42' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'patient.get_patient', params: {}, cred }),
    });
    expect(kept.headers.get('x-request-id')).toBe('clinic-trace.42');
    const replaced = await fetch(`${service.publicUrl}/healthz`, { headers: { 'x-request-id': 'has spaces "and quotes"' } });
    expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect((await fetch(`${service.publicUrl}/nowhere`)).headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);

    const clinic = await addClinic(service, receiver.url);
    receiver.signingSecret = clinic.signingSecret;
    const { body } = await post(service.publicUrl, '/api/RegisterDocument', { ...authHeaders(clinic), 'x-request-id': 'mis-req-7' }, registerBody());
    const callbacks = await receiver.waitFor(
      (received) => received.filter((callback) => callback.body.queueMessageId === body.queueMessageId).length >= 2,
      30_000,
    );
    for (const callback of callbacks.filter((item) => item.body.queueMessageId === body.queueMessageId))
      expect(callback.headers['x-request-id']).toBe('mis-req-7');

    const refused = await fetch(`${service.publicUrl}/api/RegisterDocument`, {
      method: 'POST',
      headers: { ...authHeaders(clinic), 'x-request-id': 'mis-req-8' },
      body: '{"broken',
    });
    expect(refused.status).toBe(400);
    expect(refused.headers.get('x-request-id')).toBe('mis-req-8');
    const sql = openSql(service.databaseUrl);
    try {
      type Row = { request_id: string; client_request_id: string | null; action: string; outcome: string; queue_message_id: string | null };
      // The callbacks' outcomes are committed just after the receiver answered.
      const rows = await until(
        'the callbacks audited',
        () => sql.rows<Row>(AUDIT_ROWS),
        (found) => found.filter((row) => row.queue_message_id === body.queueMessageId).length >= 3,
      );
      // The client's id in a column of its own; request_id is the gateway's own (issue 21, L7).
      const read = rows.find((row) => row.client_request_id === 'clinic-trace.42');
      expect(read).toMatchObject({ action: 'patient.get_patient', outcome: 'ok' });
      expect(read!.request_id).toMatch(/^[0-9a-f-]{36}$/);
      const ofRequest = rows.filter((row) => row.queue_message_id === body.queueMessageId);
      expect(ofRequest.map((row) => [row.action, row.outcome])).toEqual([
        ['RegisterDocument', 'ok'],
        ['SendRegisterDocumentResponse', 'delivered'],
        ['SendRegisterDocumentResultResponse', 'delivered'],
      ]);
      // One request: the intake's row and its callbacks' rows share the gateway's id; the intake's keeps the client's beside it.
      expect(new Set(ofRequest.map((row) => row.request_id)).size).toBe(1);
      expect(ofRequest[0]!.request_id).toMatch(/^[0-9a-f-]{36}$/);
      expect(ofRequest[0]!.client_request_id).toBe('mis-req-7');
    } finally {
      await sql.pool.end();
    }
  });

  it('names the request in every line logged while it is served', () => {
    const lines: string[] = [];
    const logger = createLogger(
      'info',
      new Writable({
        write: (chunk: Buffer, _encoding, done) => {
          lines.push(chunk.toString());
          done();
        },
      }),
    );
    runInRequest({ requestId: 'mis-req-9' }, () => logger.warn({ queueMessageId: 'q' }, 'inside'));
    logger.warn('outside');
    expect(JSON.parse(lines[0]!)).toMatchObject({ requestId: 'mis-req-9', msg: 'inside' });
    expect(JSON.parse(lines[1]!).requestId).toBeUndefined();
  });

  it('writes an audit row for every access to patient data, registry request and callback outcome, without personal data', async () => {
    const sql = openSql(service.databaseUrl);
    let rows: Array<Record<string, unknown>>;
    try {
      rows = await sql.rows(AUDIT_ROWS);
    } finally {
      await sql.pool.end();
    }
    const count = (action: string, outcome: string) => rows.filter((row) => row.action === action && row.outcome === outcome).length;
    expect(count('embedded_storage.authenticate', 'ok')).toBe(2);
    expect(count('patient.get_patient', 'ok')).toBe(4);
    expect(count('patient.get_patient', '-33000')).toBe(1);
    expect(count('RegisterDocument', 'ok')).toBe(2);
    expect(count('DemandContent', 'ok')).toBe(1);
    expect(count('SendRegisterDocumentResponse', 'delivered')).toBe(2);
    expect(rows.filter((row) => row.action === 'patient.get_patient' && row.outcome === 'ok').every((row) => row.internal_user_id === 'demo-1')).toBe(true);
    expect(
      rows.filter((row) => String(row.action).startsWith('Send') || row.action === 'RegisterDocument').every((row) => typeof row.business_id === 'string'),
    ).toBe(true);
    const text = JSON.stringify(rows).toLowerCase();
    for (const personal of ['иванова', 'мария', '79161234567', '1990-05-17', '112-233-445', '11223344595', 'pa55word']) expect(text).not.toContain(personal);
  });

  it('prints the trail with ehr-gateway audit, filtered by user and clinic', async () => {
    const env = { DATABASE_URL: service.databaseUrl, DATA_KEY: service.env.DATA_KEY, LOG_LEVEL: 'warn' };
    const byUser = await runCli(['audit', '--since', '1h', '--user', 'demo-1', '--json'], env);
    expect(byUser.code, byUser.stderr).toBe(0);
    const rows = byUser.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(rows.length).toBe(6);
    expect(rows.every((row) => row.internalUserId === 'demo-1')).toBe(true);
    const text = await runCli(['audit', '--business-id', 'no-such-clinic'], env);
    expect(text.code).toBe(0);
    expect(text.stdout).toBe('');
    const all = await runCli(['audit'], env);
    expect(all.stdout).toMatch(/\tpatient\.get_patient\t-\tok$/m);
    expect((await runCli(['audit', '--since', 'yesterday'], env)).code).toBe(2);
  });
});
