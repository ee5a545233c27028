import { createHmac, randomBytes } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchContext } from '../../scripts/bench/lib/scenario.js';
import { startReceiver, type Receiver } from '../../scripts/bench/lib/service.js';
import { waitForCallbacks } from '../../scripts/bench/scenarios/pipeline.js';
import { repoRoot } from '../support/cli.js';

/**
 * The pipeline benchmarks wait for both callbacks of every document. A rejected document gets one
 * (its acceptance callback says "status": "error"), so the wait used to last its whole timeout (for
 * 2,000 documents, 33 minutes) and then report an incomplete run. The bench's receiver (its own
 * process, as the benches start it) counts such callbacks, and the wait fails at once, saying why.
 */
describe("the pipeline benches' wait for callbacks", () => {
  const secret = randomBytes(24);
  let receiver: Receiver;

  beforeAll(async () => {
    receiver = await startReceiver({ benchDir: path.join(repoRoot, 'scripts/bench') } as BenchContext);
    await receiver.configure(`whsec_${secret.toString('base64')}`);
  });

  afterAll(async () => {
    await receiver?.stop();
  });

  const send = async (name: string, body: Record<string, unknown>) => {
    const text = JSON.stringify(body);
    const id = `msg_${randomBytes(8).toString('hex')}`;
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = createHmac('sha256', secret).update(`${id}.${timestamp}.`).update(text).digest('base64');
    const answer = await fetch(`${receiver.url}/api/${name}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${signature}` },
      body: text,
    });
    expect(answer.status).toBe(200);
  };

  it('waits while callbacks succeed, and fails at once, naming the callback, when one says "status": "error"', async () => {
    await send('SendRegisterDocumentResponse', { queueMessageId: 'a', status: 'success' });
    expect(await waitForCallbacks(receiver, 1, 5000, 10)).toBe(true);
    expect(await waitForCallbacks(receiver, 2, 200, 10)).toBe(false);

    await send('SendRegisterDocumentResponse', { queueMessageId: 'b', status: 'error', errors: [{ code: 'SIGNATURE_INVALID', message: 'no' }] });
    const started = Date.now();
    await expect(waitForCallbacks(receiver, 4, 60_000, 10)).rejects.toThrow(
      /1 callbacks said "status": "error".*SendRegisterDocumentResponse.*SIGNATURE_INVALID/,
    );
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(await receiver.stats()).toMatchObject({ received: 2, errors: 1 });
  });
});
