import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { REFUSAL_PACING } from '../../src/http/refusal-pacing.js';
import { addClinic, authHeaders } from '../support/emdr.js';
import { startServeProcess, type ServeProcess } from '../support/processes.js';

/**
 * Issue 21, M4: a clinic that ignores its 429s and sends again at once had them answered at once,
 * 600–900 a second, each a connection accepted, answered and closed with its body's bytes in the
 * buffers, which took the loop from the other clinics. Past REFUSAL_PACING's 20 a second, its
 * further refusals are held (1–1.5 s). Against `serve` as its own process.
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

  it('answers the first refusals of a second at once and holds the rest, while another clinic is answered at once', async () => {
    expect((await list(abusive)).status).toBe(200);
    // Within MAX_CONNECTIONS_PER_CLIENT (64) of this address, with the other clinic's.
    const sent = 3 * REFUSAL_PACING.freePerSecond;
    const started = performance.now();
    const refused = Array.from({ length: sent }, () => list(abusive));
    // Another clinic, asked once the abusive clinic's requests are out: not held with them.
    const first = await Promise.race(refused);
    const otherAnswer = await list(other);
    const answers = await Promise.all(refused);
    expect(first.status).toBe(429);
    expect(otherAnswer.status).toBe(200);
    for (const answer of answers) expect(answer).toMatchObject({ status: 429, retryAfter: expect.stringMatching(/^[1-9]\d*$/) });
    const held = answers.filter((answer) => answer.at - started >= REFUSAL_PACING.holdMs - 10);
    // All but the first 20 of a second; a slow machine may start a second window among them.
    expect(held.length, JSON.stringify(answers.map((answer) => Math.round(answer.at - started)))).toBeGreaterThanOrEqual(
      sent - 2 * REFUSAL_PACING.freePerSecond,
    );
    expect(held.every((answer) => answer.at > otherAnswer.at)).toBe(true);
  });
});
