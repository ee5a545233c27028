import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../src/callbacks/circuit-breaker.js';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { startCallbackReceiver, SUCCESS, type CallbackReceiver } from '../support/callback-receiver.js';
import { addClinic, authHeaders, FIXTURE_XML, openKnex, post, registerBody } from '../support/emdr.js';
import { startTestService, type TestService } from '../support/service.js';
import { TestPki } from '../support/signing.js';
import { until } from '../support/until.js';

/**
 * Issue 21, M2 and M3: one clinic's backlog of expensive documents, or its receiver that never
 * answers, delays only that clinic. The acceptance stage claims by clinic in turn and the document
 * checks take turns by clinic; the delivery stage claims by receiver origin in turn and settles each
 * attempt on its own; a receiver origin that keeps leaving attempts unanswered has its circuit
 * opened, and its callbacks are postponed by the retry schedule without being sent.
 */

async function ack(service: TestService, clinic: CreatedClinicAccount, body: Record<string, unknown>): Promise<string> {
  const { status, body: answer } = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), body);
  expect(status).toBe(200);
  return answer.queueMessageId as string;
}

describe('acceptance checks shared by clinic', () => {
  let service: TestService;
  let receiver: CallbackReceiver;
  let knex: Knex;
  let pki: TestPki;
  let heavySignature: string;

  beforeAll(async () => {
    // M2's documents: signatures of 16 signers each with fresh GOST-512 keys, 21 of them per request (the verification budget stops at 64 per document).
    pki = new TestPki({ gost: true });
    const signers = Array.from({ length: 16 }, (_, index) => pki.issue({ algorithm: 'gost2012_512', commonName: `Signer ${index}` }));
    heavySignature = pki.signByAll(FIXTURE_XML, signers).toString('base64');
    receiver = await startCallbackReceiver();
    receiver.reply = () => SUCCESS;
    // One loop: 32 places, at most 16 of one clinic.
    service = await startTestService({ WORKER_CONCURRENCY: '1' });
    knex = openKnex(service.databaseUrl);
  }, 120_000);

  afterAll(async () => {
    await knex?.destroy();
    await service?.stop();
    await receiver?.close();
    pki?.remove();
  });

  it("checks clinic B's single document while clinic A's backlog of expensive documents waits", async () => {
    const heavy = await addClinic(service, receiver.url);
    const honest = await addClinic(service, receiver.url);
    const heavyBody = () =>
      registerBody({
        personalSignatures: Array.from({ length: 20 }, (_, index) => ({
          signer: { snils: '08765432102', role: String((index % 9) + 1) },
          signature: heavySignature,
        })),
        signature: heavySignature,
      });
    const backlog = await Promise.all(Array.from({ length: 40 }, () => ack(service, heavy, heavyBody())));
    const honestId = await ack(service, honest, registerBody());
    const waitingWhenSent = Number((await knex('emdr_requests').whereIn('queue_message_id', backlog).where({ state: 'received' }).count({ n: '*' }))[0]!.n);
    expect(waitingWhenSent, 'clinic A has a backlog when clinic B sends').toBeGreaterThanOrEqual(8);
    await until(
      'every request decided',
      () =>
        knex('emdr_requests')
          .whereIn('queue_message_id', [...backlog, honestId])
          .where({ state: 'received' })
          .count({ n: '*' }),
      (rows) => Number(rows[0]!.n) === 0,
      300_000,
    );
    const decided = await knex('emdr_requests')
      .whereIn('queue_message_id', [...backlog, honestId])
      .select('queue_message_id', 'updated_at');
    const honestAt = decided.find((row) => row.queue_message_id === honestId)!.updated_at as Date;
    const heavyAfter = decided.filter((row) => row.queue_message_id !== honestId && (row.updated_at as Date) > honestAt).length;
    // In turn by clinic, B's document waits for at most a document of A's per check worker; one FIFO made it wait for A's whole backlog (0 of A's decided after it).
    expect(heavyAfter, `${waitingWhenSent} of A's documents waited when B's came`).toBeGreaterThanOrEqual(Math.floor(waitingWhenSent / 2));
  }, 400_000);
});

describe('callback deliveries shared by receiver origin', () => {
  let service: TestService;
  let hanging: CallbackReceiver;
  let answering: CallbackReceiver;
  let knex: Knex;

  beforeAll(async () => {
    hanging = await startCallbackReceiver();
    hanging.reply = () => 'hang';
    answering = await startCallbackReceiver();
    answering.reply = () => SUCCESS;
    // The breaker off: this is about places, not about postponing. A's attempts must not end while the
    // test runs (the assertion counts ended ones), however slow a loaded machine makes it.
    service = await startTestService({ CALLBACK_TIMEOUT: '10m', CALLBACK_CIRCUIT_FAILURES: '0' });
    knex = openKnex(service.databaseUrl);
  });

  afterAll(async () => {
    await knex?.destroy();
    // The hanging answers cut first: the service's stop then need not wait for them.
    await hanging?.close();
    await service?.stop();
    await answering?.close();
  });

  it("delivers clinic B's callback while clinic A's receiver holds every attempt unanswered", async () => {
    const dead = await addClinic(service, hanging.url);
    const honest = await addClinic(service, answering.url);
    const stuck = await Promise.all(Array.from({ length: 40 }, () => ack(service, dead, registerBody())));
    await hanging.waitFor((received) => received.length >= 20, 180_000);
    const honestId = await ack(service, honest, registerBody());
    await answering.waitFor((received) => received.some((callback) => callback.body.queueMessageId === honestId), 180_000);
    // No attempt of A's has ended yet (they end at CALLBACK_TIMEOUT): B's callback did not wait for them.
    const ended = await knex('emdr_callback_attempts as a')
      .join('emdr_callbacks as c', 'c.id', 'a.callback_id')
      .whereIn('c.queue_message_id', stuck)
      .count({ n: '*' });
    expect(Number(ended[0]!.n)).toBe(0);
  }, 400_000);
});

describe('the circuit breaker of a receiver origin', () => {
  it('opens after the threshold of unanswered attempts, postpones, lets one probe through when half-open, and closes on an answer', () => {
    let now = 0;
    const circuits = new CircuitBreaker({ threshold: 3, cooldownMs: 1000, now: () => now });
    const origin = 'http://clinic.example:8080';
    for (let attempt = 0; attempt < 2; attempt += 1) {
      expect(circuits.admit(origin)).toEqual({ send: true, probe: false });
      circuits.record(origin, false, false);
    }
    expect(circuits.state(origin)).toBe('closed');
    circuits.record(origin, false, false);
    expect(circuits.state(origin)).toBe('open');
    expect(circuits.opened).toBe(1);
    expect(circuits.admit(origin)).toMatchObject({ send: false, reason: expect.stringContaining('circuit open') });
    expect(circuits.admit('http://other.example')).toEqual({ send: true, probe: false });
    now = 1000;
    expect(circuits.state(origin)).toBe('half-open');
    expect(circuits.admit(origin)).toEqual({ send: true, probe: true });
    // One probe at a time.
    expect(circuits.admit(origin).send).toBe(false);
    circuits.record(origin, false, true);
    // Unanswered: open again, twice as long.
    now = 2999;
    expect(circuits.state(origin)).toBe('open');
    now = 3000;
    expect(circuits.admit(origin)).toEqual({ send: true, probe: true });
    circuits.record(origin, true, true);
    expect(circuits.state(origin)).toBe('closed');
    expect(circuits.opened).toBe(0);
  });

  describe('in the service', () => {
    let service: TestService;
    let receiver: CallbackReceiver;
    let knex: Knex;

    beforeAll(async () => {
      receiver = await startCallbackReceiver();
      receiver.reply = () => 'hang';
      service = await startTestService({
        CALLBACK_TIMEOUT: '1s',
        CALLBACK_CIRCUIT_FAILURES: '3',
        CALLBACK_CIRCUIT_COOLDOWN: '1s',
        // Enough attempts that the schedule outlasts a loaded machine's slowest run of this test.
        CALLBACK_RETRY_SCHEDULE: ['0', ...Array.from({ length: 400 }, () => '500ms')].join(','),
      });
      knex = openKnex(service.databaseUrl);
    });

    afterAll(async () => {
      await knex?.destroy();
      await receiver?.close();
      await service?.stop();
    });

    const attemptsOf = (ids: string[]) =>
      knex('emdr_callback_attempts as a')
        .join('emdr_callbacks as c', 'c.id', 'a.callback_id')
        .whereIn('c.queue_message_id', ids)
        .select('a.error', 'a.http_status', 'a.duration_ms');
    const openCircuits = async () =>
      Number(/^ehr_gateway_callback_circuits_open (\d+)$/m.exec(await (await fetch(`${service.internalUrl}/metrics`)).text())?.[1]);

    it('postpones the callbacks of a receiver that stopped answering without sending them, then delivers them once a probe is answered', async () => {
      const clinic = await addClinic(service, receiver.url);
      const ids = await Promise.all(Array.from({ length: 6 }, () => ack(service, clinic, registerBody())));
      const postponed = <R extends { error: string | null }>(rows: R[]) => rows.filter((row) => row.error?.includes('circuit open'));
      const attempts = await until(
        'attempts postponed',
        () => attemptsOf(ids),
        (rows) => postponed(rows).length >= 6,
        180_000,
      );
      expect(postponed(attempts).every((row) => row.http_status === null && row.duration_ms === 0)).toBe(true);
      // What reached the receiver: the attempts made, not the postponed ones.
      expect(receiver.received.length).toBeLessThanOrEqual(attempts.length - postponed(attempts).length + 6);
      expect(await openCircuits()).toBe(1);

      receiver.reply = () => SUCCESS;
      await until(
        'every callback delivered',
        () => knex('emdr_callbacks').whereIn('queue_message_id', ids).select('state'),
        (rows) => rows.length === 12 && rows.every((row) => row.state === 'delivered'),
        180_000,
      );
      expect(await openCircuits()).toBe(0);
    }, 400_000);
  });
});
