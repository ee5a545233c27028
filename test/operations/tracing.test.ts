import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { startCallbackReceiver, SUCCESS, type CallbackReceiver } from '../support/callback-receiver.js';
import { createTestDatabase } from '../support/database.js';
import { addClinic, authHeaders, post, registerBody, VALID_SNILS } from '../support/emdr.js';
import { startOtlpCollector, type CollectedSpan, type OtlpCollector } from '../support/otlp-collector.js';
import { spawnServe, type ServeProcess } from '../support/processes.js';
import { until } from '../support/until.js';
import { startTestService } from '../support/service.js';
import { openSql } from '../support/database.js';
import { rpc } from '../ehr/support/rpc.js';
import { statement } from '../../src/db/sql.js';

/**
 * Issue 23: one RegisterDocument followed through an API process (`serve --only emdr`) and a
 * separate worker process (`serve --only worker`), both exporting to a collector stand-in over
 * OTLP/HTTP: its request, acceptance check, registry submission and answer, and every attempt of
 * both callbacks (the first attempt of the acceptance callback refused by the clinic) are spans of
 * ONE trace, the worker's continuing from the traceparent stored with the request row.
 */

const TIMEOUT_MS = 180_000;

describe('tracing across processes (OpenTelemetry, OTLP/HTTP)', () => {
  let collector: OtlpCollector;
  let receiver: CallbackReceiver;
  const processes: ServeProcess[] = [];

  beforeAll(async () => {
    collector = await startOtlpCollector();
    receiver = await startCallbackReceiver();
  });

  afterAll(async () => {
    await Promise.all(processes.map((serve) => serve.stop()));
    await receiver?.close();
    await collector?.close();
  });

  it(
    'one trace covers RegisterDocument → acceptance → submission → both callbacks, each attempt, across an API and a worker process',
    async () => {
      const env = {
        DATABASE_URL: await createTestDatabase(),
        DATA_KEY: randomBytes(32).toString('hex'),
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_SERVICE_NAME: 'ehr-gateway-test',
        // The refused first attempt is tried again at once.
        CALLBACK_RETRY_SCHEDULE: '0,100ms,1s',
      };
      const migrated = await runCli(['migrate'], env);
      expect(migrated.code, migrated.stderr).toBe(0);
      const [api, worker] = await Promise.all([spawnServe('api', ['serve', '--only', 'emdr'], env), spawnServe('worker', ['serve', '--only', 'worker'], env)]);
      processes.push(api!, worker!);
      const clinic = await addClinic({ databaseUrl: env.DATABASE_URL, dataKey: Buffer.from(env.DATA_KEY, 'hex') }, receiver.url);
      receiver.signingSecret = clinic.signingSecret;
      let refused = 0;
      receiver.reply = (callback) =>
        callback.name === 'SendRegisterDocumentResponse' && refused++ === 0
          ? { status: 503, body: { status: 'Error', message: 'busy' } }
          : callback.signatureValid
            ? SUCCESS
            : { status: 401, body: {} };

      const body = registerBody();
      const answer = await post(api!.publicUrl, '/api/RegisterDocument', authHeaders(clinic), body);
      expect(answer.status).toBe(200);
      const queueMessageId = answer.body.queueMessageId as string;
      await receiver.waitFor(
        (received) => received.some((callback) => callback.name === 'SendRegisterDocumentResultResponse' && callback.body.queueMessageId === queueMessageId),
        TIMEOUT_MS,
      );
      expect(receiver.received.filter((callback) => callback.name === 'SendRegisterDocumentResponse').map((callback) => callback.body.queueMessageId)).toEqual([
        queueMessageId,
        queueMessageId,
      ]);

      // SIGTERM: each process exports what its batch processor still holds before it exits.
      await Promise.all([api!.stop(), worker!.stop()]);
      const ofRequest = (spans: CollectedSpan[]) => spans.filter((span) => span.attributes['ehr_gateway.queue_message_id'] === queueMessageId);
      await until(
        'spans of the request at the collector',
        async () =>
          ofRequest(collector.spans)
            .map((span) => span.name)
            .sort(),
        (names) => names.filter((name) => name === 'callback attempt').length >= 3,
        60_000,
      );

      const request = collector.spans.find((span) => span.name === 'RegisterDocument');
      expect(request, `spans received: ${collector.spans.map((span) => span.name).join(', ')}`).toBeDefined();
      expect(request!.kind).toBe(2);
      expect(request!.attributes).toMatchObject({
        'http.request.method': 'POST',
        'http.response.status_code': 200,
        'ehr_gateway.operation': 'RegisterDocument',
      });
      expect(request!.resource).toMatchObject({ 'service.name': 'ehr-gateway-test', 'process.pid': api!.child.pid });

      const trace = collector.spans.filter((span) => span.traceId === request!.traceId);
      const named = (name: string) => trace.filter((span) => span.name === name);
      // The worker's spans: in the request's trace, children of its span, from the other process.
      for (const name of ['acceptance check', 'registry submission', 'registry outcome']) {
        expect(named(name), name).toHaveLength(1);
        expect(named(name)[0]!.parentSpanId, name).toBe(request!.spanId);
        expect(named(name)[0]!.resource['process.pid'], name).toBe(worker!.child.pid);
        expect(named(name)[0]!.attributes['ehr_gateway.queue_message_id'], name).toBe(queueMessageId);
      }
      expect(named('acceptance check')[0]!.attributes['ehr_gateway.verdict']).toBe('accepted');
      expect(named('registry outcome')[0]!.attributes['ehr_gateway.state']).toBe('completed');

      const attempts = named('callback attempt').map((span) => ({
        callback: span.attributes['ehr_gateway.callback'],
        attempt: span.attributes['ehr_gateway.round_attempt'],
        delivered: span.attributes['ehr_gateway.delivered'],
        status: span.attributes['http.response.status_code'],
        failed: span.statusCode === 2,
        parent: span.parentSpanId === request!.spanId,
        worker: span.resource['process.pid'] === worker!.child.pid,
      }));
      expect(attempts.sort((a, b) => `${a.callback}${a.attempt}`.localeCompare(`${b.callback}${b.attempt}`))).toEqual([
        { callback: 'SendRegisterDocumentResponse', attempt: 1, delivered: false, status: 503, failed: true, parent: true, worker: true },
        { callback: 'SendRegisterDocumentResponse', attempt: 2, delivered: true, status: 200, failed: false, parent: true, worker: true },
        { callback: 'SendRegisterDocumentResultResponse', attempt: 1, delivered: true, status: 200, failed: false, parent: true, worker: true },
      ]);
      // Every span of the request is in this one trace.
      expect(ofRequest(collector.spans).every((span) => span.traceId === request!.traceId)).toBe(true);

      // Ids only: nothing the clinic sent, nor its credentials, reaches the collector.
      const exported = collector.bodies.join('\n');
      for (const secret of [
        VALID_SNILS,
        VALID_SNILS.replace(/\D/g, ''),
        clinic.token,
        clinic.signingSecret,
        String(body.document).slice(0, 40),
        String(body.signature).slice(0, 40),
        String(body.localUid),
      ]) {
        expect(exported.includes(secret), `the export carries ${secret.slice(0, 12)}…`).toBe(false);
      }
    },
    TIMEOUT_MS * 2,
  );
});

describe('the request span (in process)', () => {
  let collector: OtlpCollector;

  beforeAll(async () => {
    collector = await startOtlpCollector();
  });

  afterAll(async () => {
    await collector?.close();
  });

  it("continues a client's traceparent, stores it with the request row, gives each JSON-RPC call a span, and probes none", async () => {
    const service = await startTestService({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url }, ['ehr', 'emdr']);
    let stopped = false;
    try {
      const clinic = await addClinic(service, 'http://127.0.0.1:9');
      const clientTrace = randomBytes(16).toString('hex');
      const clientSpan = randomBytes(8).toString('hex');
      const headers = authHeaders(clinic);
      const continued = await post(
        service.publicUrl,
        '/api/RegisterDocument',
        { ...headers, traceparent: `00-${clientTrace}-${clientSpan}-01` },
        registerBody(),
      );
      expect(continued.status).toBe(200);
      const fresh = await post(service.publicUrl, '/api/RegisterDocument', { ...headers, traceparent: '00-not-a-trace-01' }, registerBody());
      expect(fresh.status).toBe(200);
      expect((await rpc(service.publicUrl, 'patient.get_patient', {}, { user: 'nobody', token: 'nothing' })).error?.code).toBe(-33000);
      expect((await fetch(`${service.internalUrl}/healthz`)).status).toBe(200);

      const sql = openSql(service.databaseUrl);
      const stored = await sql.rows<{ trace_parent: string }>(
        statement('test_trace_parent', 'select trace_parent from emdr_requests where queue_message_id = $1'),
        [continued.body.queueMessageId],
      );
      await sql.pool.end();
      expect(stored[0]!.trace_parent).toMatch(new RegExp(`^00-${clientTrace}-[0-9a-f]{16}-01$`));

      await service.stop();
      stopped = true;
      const spans = await until(
        'the spans at the collector',
        async () => [...collector.spans],
        (list) => list.filter((span) => span.name === 'RegisterDocument').length >= 2,
        30_000,
      );
      const registrations = spans.filter((span) => span.name === 'RegisterDocument');
      const fromClient = registrations.find((span) => span.traceId === clientTrace);
      expect(fromClient?.parentSpanId).toBe(clientSpan);
      // The stored traceparent names the request's own span: the worker's spans become its children.
      expect(stored[0]!.trace_parent.split('-')[2]).toBe(fromClient!.spanId);
      // A malformed traceparent starts a trace of its own.
      expect(registrations.filter((span) => span.traceId !== clientTrace)).toHaveLength(1);
      expect(registrations.find((span) => span.traceId !== clientTrace)!.parentSpanId).toBe('');

      const call = spans.find((span) => span.name === 'patient.get_patient');
      expect(call?.attributes).toMatchObject({ 'rpc.system': 'jsonrpc', 'rpc.method': 'patient.get_patient', 'rpc.jsonrpc.error_code': -33000 });
      expect(call!.statusCode).toBe(2);
      const request = spans.find((span) => span.spanId === call!.parentSpanId);
      expect(request).toMatchObject({ name: 'POST public', kind: 2, attributes: expect.objectContaining({ 'http.response.status_code': 200 }) });
      expect(spans.filter((span) => span.attributes['ehr_gateway.listener'] === 'internal')).toEqual([]);
    } finally {
      if (!stopped) await service.stop();
    }
  }, 120_000);
});
