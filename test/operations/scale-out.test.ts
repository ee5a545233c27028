import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { openDatabase } from '../../src/db/database.js';
import { seedDemoPatients } from '../../src/ehr/patients/patients.js';
import { createLogger } from '../../src/logging/logger.js';
import { exitOf, runCli } from '../support/cli.js';
import { spawnServe, type ServeProcess } from '../support/processes.js';
import { until } from '../support/until.js';
import { startCallbackReceiver, type CallbackReceiver } from '../support/callback-receiver.js';
import { createTestDatabase, openSql } from '../support/database.js';
import { LOOPBACK_CALLBACKS } from '../support/service.js';
import { addClinic, authHeaders, pipelineSnapshot, post, registerBody } from '../support/emdr.js';
import { INTERNAL_PASSWORD, INTERNAL_USER, INTERNAL_USERS, MARIA, unique } from '../ehr/support/fixtures.js';
import { rpc, sha1hex } from '../ehr/support/rpc.js';
import { statement } from '../../src/db/sql.js';

/**
 * Issue 11: two `serve --only ehr`, two `serve --only emdr` and two `serve --only worker` processes
 * over one database; load through both API processes of each interface, one worker killed with
 * SIGKILL halfway. Counts are asserted from the receiver and from the database. Every call names
 * the process it went to when it fails (a busy machine once gave "fetch failed" and nothing more),
 * and every wait is on a condition, with room for a machine under load.
 */

type Role = ServeProcess;

/** A call to `role`; a failure names the process, whether it still runs, and the end of what it said. */
async function by<T>(role: Role, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const state = role.child.exitCode !== null || role.child.signalCode !== null ? `exited (${role.child.signalCode ?? role.child.exitCode})` : 'running';
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(
      `${role.name} (${state}): ${(error as Error).message}${cause ? ` (${cause.code ?? cause.message})` : ''}; it said: ${role.output().slice(-3000)}`,
    );
  }
}

/** How long the callbacks of a phase may take on a machine under load. */
const PHASE_TIMEOUT_MS = 300_000;

const SEED_DOCUMENTS = 10;
const BURST_REGISTRATIONS = 30;
const BURST_DEMANDS = 30;
const USERS = 8;

const COUNT_STATES = statement('test_scale_states', `select operation, state, count(*)::int as n from emdr_requests group by 1, 2 order by 1, 2`);
const COUNT_CALLBACKS = statement('test_scale_callbacks', `select state, count(*)::int as n from emdr_callbacks group by 1`);
const COUNT_REGISTERED = statement(
  'test_scale_registered',
  `select count(*)::int as n, count(distinct local_uid)::int as local_uids from emdr_registry_documents`,
);

describe('N API and M worker processes over one PostgreSQL', () => {
  let receiver: CallbackReceiver;
  const roles: Role[] = [];
  let env: Record<string, string>;

  /** Waits for the receiver to hold what `done` wants; a failure says where the pipeline's rows stand and what the workers said. */
  async function phase(what: string, done: () => boolean): Promise<void> {
    try {
      await receiver.waitFor(done, PHASE_TIMEOUT_MS);
    } catch (error) {
      const workers = roles.filter((role) => role.name.startsWith('worker')).map((role) => `${role.name} said: ${role.output().slice(-1500)}`);
      throw new Error(`${what}: ${(error as Error).message}; the pipeline: ${await pipelineSnapshot(env.DATABASE_URL!)}; ${workers.join('; ')}`);
    }
  }

  /** A role on ports of its own, ready once it says it started: both of its listeners accept connections then. */
  async function start(name: string, only: string): Promise<Role> {
    const role = await spawnServe(name, ['serve', '--only', only], env);
    roles.push(role);
    return role;
  }

  beforeAll(async () => {
    receiver = await startCallbackReceiver();
    env = {
      DATABASE_URL: await createTestDatabase(),
      DATA_KEY: randomBytes(32).toString('hex'),
      INTERNAL_USERS,
      HOST: '127.0.0.1',
      JOB_EXPIRY: '2s',
      CALLBACK_RETRY_SCHEDULE: '0,500ms,1s,1s,2s,2s,2s,2s',
      // The registry takes its time, so that the killed worker has work in hand.
      REGISTRY_LATENCY: '100ms',
      RATE_LIMIT: '0',
      BYTE_QUOTA: '0',
      ...LOOPBACK_CALLBACKS,
    };
    const migrated = await runCli(['migrate'], env);
    expect(migrated.code, migrated.stderr).toBe(0);
    const database = await openDatabase(loadConfig(env), createLogger('silent'), { adopt: false });
    await seedDemoPatients(database.knex);
    await database.close();
  }, 120_000);

  afterAll(async () => {
    for (const role of roles) if (role.child.exitCode === null && role.child.signalCode === null) role.child.kill('SIGTERM');
    await Promise.all(roles.map((role) => exitOf(role.child).catch(() => undefined)));
    await receiver?.close();
  });

  it('processes every request once, delivers both callbacks of each in order, shares sessions, survives a SIGKILLed worker', async () => {
    const started = Date.now();
    const [ehr1, ehr2, emdr1, emdr2, worker1, worker2] = await Promise.all([
      start('ehr-1', 'ehr'),
      start('ehr-2', 'ehr'),
      start('emdr-1', 'emdr'),
      start('emdr-2', 'emdr'),
      start('worker-1', 'worker'),
      start('worker-2', 'worker'),
    ]);
    const clinic = await addClinic({ databaseUrl: env.DATABASE_URL!, dataKey: Buffer.from(env.DATA_KEY!, 'hex') }, receiver.url);
    receiver.signingSecret = clinic.signingSecret;
    const apis = [emdr1!, emdr2!];
    const sent = new Map<string, { operation: string; requestId: string }>();
    const send = async (i: number, route: string, body: Record<string, unknown>) => {
      const requestId = `scale-${route.slice(5)}-${i}-${randomUUID().slice(0, 8)}`;
      const api = apis[i % 2]!;
      const answer = await by(api, () => post(api.publicUrl, route, { ...authHeaders(clinic), 'x-request-id': requestId }, body));
      expect(answer.status).toBe(200);
      sent.set(answer.body.queueMessageId as string, { operation: route.slice(5), requestId });
      return answer.body.queueMessageId as string;
    };
    const resultsOf = (name: string) => new Set(receiver.received.filter((callback) => callback.name === name).map((callback) => callback.body.queueMessageId));

    // Documents to demand later, registered through both API processes.
    const seeds = await Promise.all(Array.from({ length: SEED_DOCUMENTS }, (_, i) => send(i, '/api/RegisterDocument', registerBody())));
    await phase('the seed documents registered', () => resultsOf('SendRegisterDocumentResultResponse').size >= SEED_DOCUMENTS);
    const emdrIds = receiver.received
      .filter((callback) => callback.name === 'SendRegisterDocumentResultResponse' && seeds.includes(callback.body.queueMessageId as string))
      .map((callback) => callback.body.emdrId as string);
    expect(new Set(emdrIds).size).toBe(SEED_DOCUMENTS);

    // Interleaved: registrations and demands alternate, and so do the API processes; sessions go on meanwhile.
    const burst = Promise.all(
      Array.from({ length: BURST_REGISTRATIONS + BURST_DEMANDS }, (_, i) =>
        i % 2 === 0
          ? send(i, '/api/RegisterDocument', registerBody())
          : send(i, '/api/DemandContent', { emdrId: emdrIds[i % SEED_DOCUMENTS], clientMessageId: randomUUID() }),
      ),
    );
    const sessions = Promise.all(
      Array.from({ length: USERS }, async () => {
        const cred = { user: unique('user'), token: unique('token') };
        const exchangeToken = unique('exchange');
        // Stored through one ehr process, used through the other.
        const saved = await by(ehr1!, () =>
          rpc(
            ehr1!.internalUrl,
            'embedded_storage.save_exchange_token',
            { exchangeToken, authInfo: { ...cred, ttl: 3600, phone: '+79161234567' } },
            { user: INTERNAL_USER, token: sha1hex(INTERNAL_PASSWORD + exchangeToken) },
          ),
        );
        expect(saved.error).toBeUndefined();
        const authenticated = await by(ehr2!, () => rpc(ehr2!.publicUrl, 'embedded_storage.authenticate', { exchangeToken, patientProperties: MARIA }));
        expect(authenticated.error).toBeUndefined();
        for (const ehr of [ehr1!, ehr2!])
          expect((await by(ehr, () => rpc(ehr.publicUrl, 'patient.get_patient', {}, cred))).result).toMatchObject({ patient: { id: 'demo-1' } });
        expect((await by(ehr2!, () => rpc(ehr2!.publicUrl, 'embedded_storage.remove_auth_info', {}, cred))).result).toEqual({ success: true });
        expect((await by(ehr1!, () => rpc(ehr1!.publicUrl, 'patient.get_patient', {}, cred))).error?.code).toBe(-33000);
      }),
    );
    const burstCallbacks = () => receiver.received.filter((callback) => !seeds.includes(callback.body.queueMessageId as string)).length;
    const total = BURST_REGISTRATIONS + BURST_DEMANDS;
    await phase("the burst's first callbacks", () => burstCallbacks() >= total);
    worker1!.child.kill('SIGKILL');
    await exitOf(worker1!.child);
    expect(worker1!.child.signalCode).toBe('SIGKILL');
    const killedAt = burstCallbacks();
    await Promise.all([burst, sessions]);

    const expected = (SEED_DOCUMENTS + total) * 2;
    const distinct = () => new Set(receiver.received.map((callback) => callback.headers['webhook-id'])).size;
    await phase('every callback after the kill', () => distinct() >= expected);
    const elapsedSeconds = (Date.now() - started) / 1000;

    // Every request: exactly two webhook-ids, acceptance then result, each carrying the request's x-request-id.
    const byRequest = new Map<string, typeof receiver.received>();
    for (const callback of receiver.received)
      byRequest.set(callback.body.queueMessageId as string, [...(byRequest.get(callback.body.queueMessageId as string) ?? []), callback]);
    expect(byRequest.size).toBe(sent.size);
    for (const [queueMessageId, callbacks] of byRequest) {
      const request = sent.get(queueMessageId)!;
      const names =
        request.operation === 'RegisterDocument'
          ? ['SendRegisterDocumentResponse', 'SendRegisterDocumentResultResponse']
          : ['SendDemandContentResponse', 'SendDocumentFileResultResponse'];
      const ids = [...new Set(callbacks.map((callback) => callback.headers['webhook-id']))];
      expect(ids).toHaveLength(2);
      const firstOf = (name: string) => callbacks.findIndex((callback) => callback.name === name);
      expect(firstOf(names[0]!)).toBeGreaterThanOrEqual(0);
      expect(firstOf(names[0]!)).toBeLessThan(firstOf(names[1]!));
      for (const callback of callbacks) {
        expect(callback.signatureValid).toBe(true);
        expect(callback.headers['x-request-id']).toBe(request.requestId);
        expect(callback.body.status).toBe('success');
      }
    }
    // A duplicate is a redelivery: the same webhook-id with the same body.
    const firstBody = new Map<string, string>();
    let duplicates = 0;
    for (const callback of receiver.received) {
      const id = callback.headers['webhook-id'] as string;
      if (firstBody.has(id)) {
        duplicates += 1;
        expect(JSON.stringify(callback.body)).toBe(firstBody.get(id));
      } else firstBody.set(id, JSON.stringify(callback.body));
    }

    const sql = openSql(env.DATABASE_URL!);
    try {
      expect(await sql.rows(COUNT_STATES)).toEqual([
        { operation: 'DemandContent', state: 'completed', n: BURST_DEMANDS },
        { operation: 'RegisterDocument', state: 'completed', n: SEED_DOCUMENTS + BURST_REGISTRATIONS },
      ]);
      // The receiver may have a callback whose attempt the killed worker never recorded: the survivor records it after JOB_EXPIRY.
      const callbackStates = await until(
        'every callback recorded delivered',
        () => sql.rows<{ state: string; n: number }>(COUNT_CALLBACKS),
        (rows) => rows.length === 1 && rows[0]!.state === 'delivered',
        30_000,
      );
      expect(callbackStates).toEqual([{ state: 'delivered', n: expected }]);
      // Registered once each, however often a worker took the request.
      expect(await sql.row(COUNT_REGISTERED)).toEqual({ n: SEED_DOCUMENTS + BURST_REGISTRATIONS, local_uids: SEED_DOCUMENTS + BURST_REGISTRATIONS });
    } finally {
      await sql.pool.end();
    }
    expect(receiver.schemaViolations).toEqual([]);
    // The surviving processes say nothing above warn about lost work.
    for (const role of [ehr1!, ehr2!, emdr1!, emdr2!, worker2!]) expect(role.output()).not.toMatch(/"level":(50|60)/);
    console.log(
      `scale-out: ${sent.size} interface B requests sent (${SEED_DOCUMENTS + BURST_REGISTRATIONS} RegisterDocument, ${BURST_DEMANDS} DemandContent) through 2 emdr processes, ` +
        `${sent.size} processed, ${expected} callbacks delivered (${receiver.received.length} received, ${duplicates} redeliveries), ${USERS} sessions across 2 ehr processes, ` +
        `worker-1 SIGKILLed after ${killedAt} of the burst's ${total * 2} callbacks, ${elapsedSeconds.toFixed(1)} s`,
    );
  }, 1_200_000);
});
