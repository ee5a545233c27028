import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { REFUSAL_PAUSE_MS, REFUSALS_BEFORE_PAUSE } from '../../src/emdr/intake/admission/refusal-pause.js';
import { addClinic, authHeaders } from '../support/emdr.js';
import { startServeProcess, type ServeProcess } from '../support/processes.js';

/**
 * Issue 21, M4: a clinic that ignores its 429s and sends again at once had them answered at once,
 * 700–900 a second, each a connection accepted, answered and closed with its body's megabytes in
 * the buffers, which took the machine from the other clinics. Past REFUSALS_BEFORE_PAUSE a second,
 * its further refusals wait REFUSAL_PAUSE_MS. Against `serve` as its own process.
 */
describe('interface B: refusals of a clinic that keeps being refused', () => {
  let serve: ServeProcess;
  let abusive: CreatedClinicAccount;
  let other: CreatedClinicAccount;

  beforeAll(async () => {
    serve = await startServeProcess({ RATE_LIMIT: '1' });
    const database = { databaseUrl: serve.env.DATABASE_URL!, dataKey: Buffer.from(serve.env.DATA_KEY!, 'hex') };
    abusive = await addClinic(database, 'http://127.0.0.1:9');
    other = await addClinic(database, 'http://127.0.0.1:9');
  });

  afterAll(async () => {
    await serve?.stop();
  });

  const list = async (clinic: CreatedClinicAccount) => {
    const response = await fetch(`${serve.publicUrl}/api/messages`, { headers: authHeaders(clinic) });
    await response.arrayBuffer();
    return { status: response.status, retryAfter: response.headers.get('retry-after'), at: performance.now() };
  };

  it('answers the first refusals of a second at once and the rest after the pause, while another clinic is answered at once', async () => {
    expect((await list(abusive)).status).toBe(200);
    const sent = 4 * REFUSALS_BEFORE_PAUSE;
    const started = performance.now();
    const refused = Array.from({ length: sent }, () => list(abusive));
    // Another clinic, asked once the abusive clinic's requests are out: not paused with them.
    const first = await Promise.race(refused);
    const otherAnswer = await list(other);
    const answers = await Promise.all(refused);
    expect(first.status).toBe(429);
    expect(otherAnswer.status).toBe(200);
    for (const answer of answers) expect(answer).toMatchObject({ status: 429, retryAfter: expect.stringMatching(/^[1-9]\d*$/) });
    // A pause is at least half of REFUSAL_PAUSE_MS (spread so that a client's connections are not answered together).
    const paused = answers.filter((answer) => answer.at - started >= REFUSAL_PAUSE_MS / 2);
    // All but the first REFUSALS_BEFORE_PAUSE of a second; a slow machine may start a second window among them.
    expect(paused.length).toBeGreaterThanOrEqual(sent - 2 * REFUSALS_BEFORE_PAUSE);
    expect(paused.every((answer) => answer.at > otherAnswer.at)).toBe(true);
  });
});
