import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Sql, type Queryable, type Statement } from '../../src/db/sql.js';
import type { ClaimedCallback } from '../../src/emdr/pipeline/lifecycle/callback-rows.js';
import type { PipelineContext } from '../../src/emdr/pipeline/lifecycle/requests.js';
import { AcceptanceStage } from '../../src/emdr/pipeline/stages/acceptance.js';
import { DeliveryStage } from '../../src/emdr/pipeline/stages/delivery.js';
import { OutcomeRecorder } from '../../src/emdr/pipeline/stages/outcome.js';
import { SubmissionStage } from '../../src/emdr/pipeline/stages/submission.js';
import { DocumentCheckPool } from '../../src/emdr/pipeline/document-check/document-check.js';
import { BuiltInRegistry } from '../../src/emdr/registry/built-in.js';
import { createLogger } from '../../src/logging/logger.js';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { addClinic, authHeaders, openKnex, post, registerBody } from '../support/emdr.js';
import { openSql } from '../support/database.js';
import { startTestService, type TestService } from '../support/service.js';
import { until } from '../support/until.js';

/**
 * Issue 24 (statements per document at a steady rate): a delivered callback releases the one held
 * behind it (`waiting`, the registry answered before the acceptance callback was delivered) with a
 * statement of its own only when one is held. The settle that holds a callback marks the one before
 * it, so a delivery recorded at the same time learns of it even when its statement began before that
 * settle committed. The test drives the stages itself (interface B without workers) and records the
 * acceptance callback's delivery while the registry's answer is being settled.
 */

const FOLLOW_UP = 'emdr_callbacks_follow_up';

/** An Sql whose statements on the pool are counted by name. */
class CountingSql extends Sql {
  constructor(
    pool: Sql['pool'],
    private readonly counted: Map<string, number>,
  ) {
    super(pool);
  }

  private count(statement: Statement): void {
    this.counted.set(statement.name, (this.counted.get(statement.name) ?? 0) + 1);
  }

  override rows<R>(statement: Statement, values?: readonly unknown[]): Promise<R[]> {
    this.count(statement);
    return super.rows<R>(statement, values);
  }

  override row<R>(statement: Statement, values?: readonly unknown[]): Promise<R | undefined> {
    this.count(statement);
    return super.row<R>(statement, values);
  }

  override run(statement: Statement, values?: readonly unknown[]): Promise<number> {
    this.count(statement);
    return super.run(statement, values);
  }
}

describe('a delivered callback and the one held behind it', () => {
  let api: TestService;
  let knex: Knex;
  let sql: Sql;
  let clinic: CreatedClinicAccount;
  const documents = new DocumentCheckPool(1);
  const logger = createLogger('silent');
  const counted = new Map<string, number>();

  beforeAll(async () => {
    // Interface B without workers: the test runs the stages itself. The callbacks are never sent (the test records their outcomes).
    api = await startTestService({}, ['emdr']);
    knex = openKnex(api.databaseUrl);
    sql = openSql(api.databaseUrl);
    clinic = await addClinic(api, 'http://127.0.0.1:9');
  });

  afterAll(async () => {
    await documents.close();
    await sql?.pool.end();
    await knex?.destroy();
    await api?.stop();
  });

  const context = (on: Sql) => ({
    sql: on,
    registry: new BuiltInRegistry(on, { latencyMs: 0, fail: false, logger }),
    retryScheduleMs: [0],
    logger,
    dataKey: api.dataKey,
    xmlCheckTimeoutMs: 10_000,
    leaseMs: 30_000,
    deadlineMs: 60_000,
  });

  /** A RegisterDocument accepted and submitted to the built-in registry; its acceptance callback pending. */
  async function submitted(): Promise<{ queueMessageId: string; acceptanceCallback: ClaimedCallback }> {
    const { body: ack } = await post(api.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody());
    const acceptance = new AcceptanceStage(context(sql), documents);
    const checked = await Promise.all((await acceptance.claim(10, new Map(), 10, [])).map(acceptance.check));
    await acceptance.settle(checked);
    const submission = new SubmissionStage(context(sql));
    await submission.process(await submission.claim(10));
    expect(await knex('emdr_requests').where({ queue_message_id: ack.queueMessageId }).first('state')).toEqual({ state: 'submitted' });
    const callback = await knex('emdr_callbacks').where({ queue_message_id: ack.queueMessageId, sequence: 1 }).first('id', 'name', 'sequence', 'state');
    expect(callback.state).toBe('pending');
    const acceptanceCallback = { ...callback, queue_message_id: ack.queueMessageId, operation: 'RegisterDocument' } as unknown as ClaimedCallback;
    return { queueMessageId: ack.queueMessageId, acceptanceCallback };
  }

  /** The registry's answer to the request, as the built-in registry would hand it over. */
  const registered = (queueMessageId: string) => [
    { messageId: queueMessageId, ok: true as const, registration: { emdrId: '26.11.000000042', registrationDateTime: new Date().toISOString() } },
  ];

  /** The acceptance callback delivered, recorded by the delivery stage (on statements counted in `counted`). */
  const delivered = (callback: ClaimedCallback) =>
    new DeliveryStage(
      { ...context(new CountingSql(sql.pool, counted)), metrics: undefined } as unknown as PipelineContext,
      undefined as never,
      undefined as never,
    ).settle([{ row: callback, outcome: { id: callback.id, delivered: true, httpStatus: 200, at: new Date(), durationMs: 1, retryInMs: null } }]);

  const callbackStates = async (queueMessageId: string) =>
    (await knex('emdr_callbacks').where({ queue_message_id: queueMessageId }).orderBy('sequence').select('state')).map((row) => row.state);

  it('sends no release statement when nothing is held behind it (the answer has not come)', async () => {
    const { queueMessageId, acceptanceCallback } = await submitted();
    counted.clear();
    expect(await delivered(acceptanceCallback)).toEqual({ released: 0, retries: [] });
    // Before, every delivered acceptance callback was followed by a release statement, held callback or not.
    expect(counted.get(FOLLOW_UP) ?? 0).toBe(0);
    expect(await callbackStates(queueMessageId)).toEqual(['delivered']);
    // The answer comes after: its result callback is due at once.
    await new OutcomeRecorder(context(sql), () => undefined).record(registered(queueMessageId));
    expect(await callbackStates(queueMessageId)).toEqual(['delivered', 'pending']);
  });

  it('releases the held result when the delivery is recorded while the answer that held it is being settled', async () => {
    const { queueMessageId, acceptanceCallback } = await submitted();
    counted.clear();
    let recording: ReturnType<typeof delivered> | undefined;
    // The registry's answer, settled in a transaction held open until the delivery waits for it: the result callback is
    // held behind the acceptance callback.
    const answering = sql.transaction(async (trx: Queryable) => {
      await new OutcomeRecorder({ sql: trx as Sql, logger }, () => undefined).record(registered(queueMessageId));
      // The delivery's statement begins now, before this commits, and waits for the acceptance callback's lock.
      recording = delivered(acceptanceCallback);
      await until(
        "the delivery's statement waits for the settle's lock",
        // The recording statement by its opening (pg_stat_activity keeps a statement's first 1,024 bytes).
        () => knex.raw(`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query like '%unnest($1::text[], $2::bool[]%'`),
        (result: { rows: Array<{ n: number }> }) => result.rows[0]!.n > 0,
      );
    });
    await answering;
    // The delivery read the acceptance callback's newest version (marked by the settle), though the held result was not
    // yet committed when its statement began: the release statement went and released it.
    expect(await recording).toEqual({ released: 1, retries: [] });
    expect(counted.get(FOLLOW_UP)).toBe(1);
    expect(await callbackStates(queueMessageId)).toEqual(['delivered', 'pending']);
  });
});
