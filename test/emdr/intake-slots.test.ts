import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { INTAKE_QUEUE_PER_CLINIC, INTAKE_SLOTS_PER_CLINIC } from '../../src/emdr/intake/admission/limits.js';
import { addClinic, authHeaders, heldRegisterDocument as heldRequest, registerBody } from '../support/emdr.js';
import { scrapeOne } from '../support/metrics.js';
import { startServeProcess, type ServeProcess } from '../support/processes.js';
import { postHead, rawExchange, type RawAnswer } from '../support/raw-http.js';
import { until } from '../support/until.js';

/**
 * Per clinic account, INTAKE_SLOTS_PER_CLINIC requests are read and handled at once in a process;
 * up to INTAKE_QUEUE_PER_CLINIC more wait, unread; beyond, 429 at once. Another clinic is not
 * held by any of it. Against serve as its own process, on raw connections.
 */
describe('interface B: the intake slots of a clinic account', () => {
  let serve: ServeProcess;
  let busy: CreatedClinicAccount;
  let other: CreatedClinicAccount;
  let port: number;

  /** Requests of the serve process in `state` (ehr_gateway_intake_requests on its /metrics). */
  const intakeRequests = (state: 'reading' | 'waiting'): Promise<number> => scrapeOne(serve.internalUrl, `ehr_gateway_intake_requests{state="${state}"}`);

  beforeAll(async () => {
    // The queue takes what one address may have open by default; the test's burst comes from one address, so its cap is raised past the burst.
    serve = await startServeProcess({ RATE_LIMIT: '10000', MAX_CONNECTIONS_PER_CLIENT: '256' });
    const database = { databaseUrl: serve.env.DATABASE_URL!, dataKey: Buffer.from(serve.env.DATA_KEY!, 'hex') };
    busy = await addClinic(database, 'http://127.0.0.1:9');
    other = await addClinic(database, 'http://127.0.0.1:9');
    port = Number(new URL(serve.publicUrl).port);
  });

  afterAll(async () => {
    await serve?.stop();
  });

  it('queues a clinic’s requests beyond its slots unread, refuses past its queue with 429 without reading the body, and leaves another clinic alone', async () => {
    const sendOther = async () => {
      const body = Buffer.from(JSON.stringify(registerBody()));
      return rawExchange(port, postHead('/api/RegisterDocument', authHeaders(other), body.length), body, { waitMs: 60_000 });
    };
    const held = Array.from({ length: INTAKE_SLOTS_PER_CLINIC }, () => heldRequest(port, busy));
    // The held requests hold the busy clinic's slots before anything else is sent (on a loaded machine
    // their authentication may take a while; the burst would otherwise take the slots and finish).
    await until(
      'the held requests in their slots',
      () => intakeRequests('reading'),
      (reading) => reading === INTAKE_SLOTS_PER_CLINIC,
      120_000,
    );
    // Another clinic's request is taken in while the busy clinic's slots are held.
    expect((await sendOther()).status).toBe(200);
    const burst = INTAKE_QUEUE_PER_CLINIC + 8;
    const full = Array.from({ length: burst }, () => {
      const body = Buffer.from(JSON.stringify(registerBody()));
      return rawExchange(port, postHead('/api/RegisterDocument', authHeaders(busy), body.length), body, { waitMs: 120_000 });
    });
    const outcomes: Array<RawAnswer | undefined> = Array.from({ length: burst });
    full.forEach((answer, index) => void answer.then((settled) => (outcomes[index] = settled)));
    // With the slots held by bodies that do not come, the burst overflows the queue: refused at once.
    const refused = await until(
      'refusals of the burst',
      async () => outcomes.filter((outcome) => outcome?.status === 429),
      (found) => found.length > 0,
      60_000,
    );
    expect(refused[0]!.headers['retry-after']).toBe('1');
    expect(JSON.parse(refused[0]!.body)).toMatchObject({ errors: [{ code: 'RATE_LIMIT' }] });
    expect(await intakeRequests('waiting')).toBe(INTAKE_QUEUE_PER_CLINIC);
    // Nothing of the busy clinic was taken in meanwhile; the other clinic still is.
    expect(outcomes.filter((outcome) => outcome?.status === 200)).toEqual([]);
    expect((await sendOther()).status).toBe(200);
    // The held bodies arrive: every request of the burst not refused is taken in, in turn.
    for (const request of held) request.finish();
    const answers = await Promise.all(full);
    for (const answer of answers) expect([200, 429]).toContain(answer.status);
    expect(answers.filter((answer) => answer.status === 200).length).toBeGreaterThanOrEqual(INTAKE_QUEUE_PER_CLINIC);
    for (const answer of await Promise.all(held.map((request) => request.answer))) expect(answer.status).toBe(200);
  });
});
