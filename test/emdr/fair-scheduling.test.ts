import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../src/callbacks/circuit-breaker.js';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { DocumentCheckPool } from '../../src/emdr/pipeline/document-check/document-check.js';
import { startCallbackReceiver, SUCCESS, type CallbackReceiver } from '../support/callback-receiver.js';
import { addClinic, authHeaders, FIXTURE_XML, largeXml, openKnex, post, registerBody } from '../support/emdr.js';
import { scrapeOne } from '../support/metrics.js';
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

/** Clinic B's documents, sent together once clinic A has a backlog. */
const HONEST_DOCUMENTS = 10;

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
    // Documents as expensive as a request may make them: each signature carries CAs named like its
    // signer's issuer (each a candidate tried with a GOST-512 verification) until the document's
    // budget of verifications is spent. (A container of many signers no longer costs: it is refused
    // from its structure.)
    pki = new TestPki({ gost: true });
    const root = pki.issue({ algorithm: 'gost2012_512', commonName: 'Fair Root CA', ca: true });
    const intermediate = pki.issue({ algorithm: 'gost2012_512', commonName: 'Fair Intermediate CA', ca: true, issuer: root });
    const signer = pki.issue({ algorithm: 'gost2012_512', commonName: 'Fair Signer', issuer: intermediate });
    const decoys = Array.from({ length: 3 }, () => pki.issue({ algorithm: 'gost2012_512', commonName: 'Fair Intermediate CA', ca: true }));
    heavySignature = pki.sign(FIXTURE_XML, signer, [...decoys, intermediate]).toString('base64');
    receiver = await startCallbackReceiver();
    receiver.reply = () => SUCCESS;
    // One loop: 32 places, at most 16 of one clinic.
    service = await startTestService({ WORKER_CONCURRENCY: '1', SIGNATURE_TRUST_STORE: pki.trustStore([root]) });
    knex = openKnex(service.databaseUrl);
  }, 120_000);

  afterAll(async () => {
    await knex?.destroy();
    await service?.stop();
    await receiver?.close();
    pki?.remove();
  });

  it("checks clinic B's documents while clinic A's backlog of expensive documents waits, each of B's without waiting for one of A's", async () => {
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
    const honestIds = await Promise.all(Array.from({ length: HONEST_DOCUMENTS }, () => ack(service, honest, registerBody())));
    const waitingWhenSent = Number((await knex('emdr_requests').whereIn('queue_message_id', backlog).where({ state: 'received' }).count({ n: '*' }))[0]!.n);
    expect(waitingWhenSent, 'clinic A has a backlog when clinic B sends').toBeGreaterThanOrEqual(2 * HONEST_DOCUMENTS);
    await until(
      'every request decided',
      () =>
        knex('emdr_requests')
          .whereIn('queue_message_id', [...backlog, ...honestIds])
          .where({ state: 'received' })
          .count({ n: '*' }),
      (rows) => Number(rows[0]!.n) === 0,
      300_000,
    );
    // When each request came, and when its acceptance was decided: the insert of its first callback
    // (updated_at would tell its latest transition, and A's earlier ones go on to the registry meanwhile).
    const timeline: { queue_message_id: string; received: Date; decided: Date }[] = await knex('emdr_requests as r')
      .join('emdr_callbacks as c', (on) => on.on('c.queue_message_id', 'r.queue_message_id').andOn('c.sequence', knex.raw('1')))
      .whereIn('r.queue_message_id', [...backlog, ...honestIds])
      .select('r.queue_message_id', 'r.created_at as received', 'c.created_at as decided');
    expect(timeline).toHaveLength(backlog.length + HONEST_DOCUMENTS);
    const honestRows = timeline.filter((row) => honestIds.includes(row.queue_message_id));
    const honestCame = Math.min(...honestRows.map((row) => row.received.getTime()));
    const honestDone = Math.max(...honestRows.map((row) => row.decided.getTime()));
    const heavyMeanwhile = timeline.filter(
      (row) => backlog.includes(row.queue_message_id) && row.decided.getTime() > honestCame && row.decided.getTime() <= honestDone,
    ).length;
    // B's documents wait for the first of A's checks to end, then have that worker. In turns by
    // document, each of B's waited for one of A's (about HONEST_DOCUMENTS of A's decided meanwhile);
    // in one FIFO, for A's whole backlog.
    const story = `${waitingWhenSent} of A's documents waited when B's came; B's took ${honestDone - honestCame} ms from the first received to the last decided`;
    expect(heavyMeanwhile, story).toBeLessThanOrEqual(HONEST_DOCUMENTS / 2);
  }, 400_000);
});

describe('the document-check workers shared by clinic', () => {
  const pool = new DocumentCheckPool(2);
  afterAll(() => pool.close());

  it("checks clinic B's stream of cheap documents on a worker of its own while clinic A's expensive ones hold the other", async () => {
    pool.start();
    // A's documents take a worker for a while each (an XML of 8 MiB); B's take a few milliseconds.
    const expensive = largeXml(8 * 1024 * 1024);
    const done: string[] = [];
    const checked = (name: string, turnOf: string, document: Buffer) =>
      pool.check(document, { timeoutMs: 600_000, turnOf }).then((outcome) => {
        expect(outcome.xmlFailure).toBeUndefined();
        done.push(name);
      });
    // A's first two take both workers at once; the other six wait, then B's six come.
    const a = Array.from({ length: 8 }, (_, index) => checked(`A${index}`, 'A', Buffer.from(expensive)));
    const b = Array.from({ length: 6 }, (_, index) => checked(`B${index}`, 'B', Buffer.from(FIXTURE_XML)));
    await Promise.all([...a, ...b]);
    const aBeforeLastB = done.slice(0, done.lastIndexOf('B5')).filter((name) => name.startsWith('A'));
    // B has the spare worker while A keeps both others (or, before the spare is up, the first of A's to end): at most
    // both of A's first two are done before B's last. In turns by document, each of B's waited for one of A's (7 done before B's last).
    expect(aBeforeLastB.length, `in the order done: ${done.join(' ')}`).toBeLessThanOrEqual(2);
  }, 600_000);

  it("checks a clinic with no check under way on the spare worker while another clinic's checks hold every other, and only one of its checks", async () => {
    const single = new DocumentCheckPool(1);
    // A's check holds its worker until the test sends the rest of A's document.
    let sendRest!: () => void;
    const rest = new Promise<void>((resolve) => (sendRest = resolve));
    async function* heldDocument() {
      yield Buffer.from('<?xml version="1.0"?><ClinicalDocument>');
      await rest;
      yield Buffer.from('</ClinicalDocument>');
    }
    const done: string[] = [];
    const checked = (name: string, turnOf: string, document: Buffer | AsyncIterable<Uint8Array>) =>
      single.check(document, { timeoutMs: 600_000, turnOf }).then((outcome) => {
        expect(outcome.xmlFailure).toBeUndefined();
        done.push(name);
      });
    try {
      const a1 = checked('A1', 'A', heldDocument());
      const a2 = checked('A2', 'A', Buffer.from(FIXTURE_XML));
      const b1 = checked('B1', 'B', Buffer.from(FIXTURE_XML));
      const b2 = checked('B2', 'B', Buffer.from(FIXTURE_XML));
      // B's checks go on the spare, one at a time, while A's first holds the worker and A's second waits for it.
      await until(
        'both of B’s checked',
        async () => done.filter((name) => name.startsWith('B')).length,
        (count) => count === 2,
        120_000,
      );
      expect(done).toEqual(['B1', 'B2']);
      sendRest();
      await Promise.all([a1, a2, b1, b2]);
      expect(done.slice(2)).toEqual(['A1', 'A2']);
    } finally {
      sendRest();
      await single.close();
    }
  }, 300_000);
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
    const openCircuits = () => scrapeOne(service.internalUrl, 'ehr_gateway_callback_circuits_open');

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
