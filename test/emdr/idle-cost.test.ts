import fs from 'node:fs/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCallbackReceiver } from '../support/callback-receiver.js';
import { createTestDatabase } from '../support/database.js';
import { addClinic, authHeaders, post, registerBody } from '../support/emdr.js';
import { statementCounter } from '../support/pg-wire.js';
import { startServeProcess } from '../support/processes.js';
import { startTcpProxy } from '../support/tcp-proxy.js';
import { until } from '../support/until.js';

/**
 * Issue 24: an idle service costs what its wake-ups cost, every second, whether documents come or
 * not. `serve` (every role in one process) reaches PostgreSQL through a TCP proxy that counts the
 * statements it sends; with nothing to do, it is left alone for a window, and what it did in that
 * window is counted, not timed: statements sent, and its main thread's wake-ups (voluntary context
 * switches: each time the event loop slept and was woken). A busy machine makes these fewer, never
 * more. Before issue 24's change an idle `serve` sent 4 statements a second (each idle stage
 * polling every second, every loop of a stage on its own) and woke about 110 times a second (a
 * 10 ms event-loop delay sampler among them).
 */

const WINDOW_MS = 20_000;
/** The stages' idle polls (every 10 s with the default JOB_EXPIRY of 30 s, one loop per stage) and a few more: startup work that lands in the window. */
const MAX_STATEMENTS = 20;
/**
 * About 13 a second remain: the event-loop delay sampler (10), Node's check of each listener's
 * header and request timeouts (1 a second each, two listeners) and the liveness heartbeat (1);
 * room for as much again. 2,005 before, without the liveness listener (the sampler at 100 a
 * second; the heartbeat, at 10 a second then, would have added 200).
 */
const MAX_MAIN_THREAD_WAKEUPS = 600;
/** Documents sent one at a time, each after the last one's callbacks. */
const TRICKLE_DOCUMENTS = 8;

/** Voluntary context switches of a process's main thread so far. */
async function mainThreadWakeups(pid: number): Promise<number> {
  const status = await fs.readFile(`/proc/${pid}/task/${pid}/status`, 'utf8');
  return Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)![1]);
}

/** `serve` (every role) reaching PostgreSQL through a proxy that counts the statements it sends, with a clinic's receiver. */
async function startCountedServe(extraEnv: Record<string, string> = {}) {
  const receiver = await startCallbackReceiver();
  const databaseUrl = await createTestDatabase();
  const direct = new URL(databaseUrl);
  const counter = statementCounter();
  const proxy = await startTcpProxy(direct.hostname, Number(direct.port), () => counter.connection());
  const proxied = new URL(databaseUrl);
  proxied.port = String(proxy.port);
  // With the liveness listener, as the chart runs it: its heartbeat is one of the loop's timers.
  const serve = await startServeProcess({ DATABASE_URL: proxied.toString(), HEALTH_PORT: '0', ...extraEnv });
  return {
    receiver,
    databaseUrl,
    counter,
    serve,
    async stop() {
      await serve.stop();
      await proxy.close();
      await receiver.close();
    },
  };
}
type CountedServe = Awaited<ReturnType<typeof startCountedServe>>;

/** TRICKLE_DOCUMENTS sent one at a time, each after both callbacks of the one before: the statements sent meanwhile. */
async function trickle({ serve, receiver, counter, databaseUrl }: CountedServe): Promise<string[]> {
  const clinic = await addClinic({ databaseUrl, dataKey: Buffer.from(serve.env.DATA_KEY!, 'hex') }, receiver.url);
  receiver.signingSecret = clinic.signingSecret;
  const before = counter.count;
  for (let i = 1; i <= TRICKLE_DOCUMENTS; i += 1) {
    const answer = await post(serve.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody());
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    // Both callbacks of this document in, so that each document finds the stages idle.
    await receiver.waitFor((received) => received.length >= 2 * i, 60_000);
  }
  return counter.sent.slice(before, counter.count);
}

const times = (sent: readonly string[], name: string) => sent.filter((candidate) => candidate === name).length;

describe('a service with little or nothing to do', () => {
  let counted: CountedServe;

  beforeAll(async () => {
    counted = await startCountedServe();
  });

  afterAll(async () => {
    await counted?.stop();
  });

  it('sends PostgreSQL a statement every few seconds at most, and its event loop sleeps', async () => {
    const { counter, serve } = counted;
    // Started: its stages have claimed once (the proxy saw statements) and sleep.
    await until(
      'statements of the started service',
      async () => counter.count,
      (count) => count > 0,
    );
    const pid = serve.child.pid!;
    const statementsBefore = counter.count;
    const wakeupsBefore = await mainThreadWakeups(pid);
    await new Promise((resolve) => setTimeout(resolve, WINDOW_MS));
    const statements = counter.count - statementsBefore;
    const wakeups = (await mainThreadWakeups(pid)) - wakeupsBefore;
    const sent = counter.sent.slice(statementsBefore, statementsBefore + statements).join(', ');
    const report = `${statements} statements (${sent}) and ${wakeups} main-thread wake-ups in ${WINDOW_MS / 1000} s; serve said: ${serve.output().slice(-2000)}`;
    expect(statements, report).toBeLessThanOrEqual(MAX_STATEMENTS);
    expect(wakeups, report).toBeLessThanOrEqual(MAX_MAIN_THREAD_WAKEUPS);
    expect(serve.child.exitCode, report).toBeNull();
  });

  it("at a steady trickle, hands the registry's answers on without a claim, and seldom reads when the next work falls due", async () => {
    const sent = await trickle(counted);
    expect(times(sent, 'registry_register'), sent.join(', ')).toBe(TRICKLE_DOCUMENTS);
    // The registration leases its answer to this process, which records it: before, the answer loop claimed each answer
    // (a claim a document) and went idle after it, reading when the next work falls due (before issue 24's change, a read
    // a document). A claim may come to delete the answers recorded (a third of JOB_EXPIRY after the first), or as the
    // loop's idle poll, each with a read after it.
    const claims = times(sent, 'registry_claim_answers');
    expect(claims, sent.join(', ')).toBeLessThanOrEqual(2);
    expect(times(sent, 'registry_next_answer'), sent.join(', ')).toBeLessThanOrEqual(1 + claims);
    // The answers recorded are deleted before their leases end (else another worker would claim them and record them again).
    const client = new pg.Client({ connectionString: counted.databaseUrl });
    await client.connect();
    try {
      await until(
        'answers of the built-in registry left in emdr_registry_answers',
        async () => Number((await client.query('select count(*) from emdr_registry_answers')).rows[0].count),
        (left) => left === 0,
        25_000,
      );
    } finally {
      await client.end();
    }
  });
});

/**
 * The settles that make callbacks due lease them on to this process's delivery stage: no claim for
 * them. A result callback is held while its acceptance callback is on its way, and a held one is
 * released by the delivery's follow-up and claimed: with the registry answering at once, which
 * comes first depends on the machine's load (CI: 6 claims of 8 results held). Here the registry
 * answers after REGISTRY_ANSWER_DELAY, long after the acceptance callback reached the local receiver.
 */
describe('a service at a steady trickle, the registry answering later', () => {
  let counted: CountedServe;

  beforeAll(async () => {
    counted = await startCountedServe({ REGISTRY_ANSWER_DELAY: '300ms' });
  });

  afterAll(async () => {
    await counted?.stop();
  });

  it('hands due callbacks to delivery without claims', async () => {
    const sent = await trickle(counted);
    // Two claims a document before the hand-off (16).
    expect(times(sent, 'emdr_claim_callbacks'), sent.join(', ')).toBeLessThanOrEqual(2);
  });
});
