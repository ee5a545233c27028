import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sql } from '../../src/db/sql.js';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { DocumentCheckPool } from '../../src/emdr/pipeline/document-check/document-check.js';
import { AcceptanceStage } from '../../src/emdr/pipeline/stages/acceptance.js';
import { BuiltInRegistry } from '../../src/emdr/registry/built-in.js';
import { createLogger, type Logger } from '../../src/logging/logger.js';
import { openSql } from '../support/database.js';
import { addClinic, authHeaders, post, registerBody } from '../support/emdr.js';
import { startTestService, type TestService } from '../support/service.js';

/**
 * Issue 21 M2: what an acceptance claim carries onto the event loop. A claim takes up to 32
 * requests, which wait in the process for a check worker; a request's signatures come with it only
 * when they are small, and larger ones are read when a worker takes the request, so one clinic's
 * requests of 21 large signatures do not bring megabytes of text to parse and hold per claim. The
 * service runs without its worker role, so the requests wait, received, for this test's claims.
 */
describe('the acceptance claim', () => {
  let service: TestService;
  let clinic: CreatedClinicAccount;
  let sql: Sql;
  let documents: DocumentCheckPool;

  beforeAll(async () => {
    service = await startTestService({ RATE_LIMIT: '10000' }, ['emdr']);
    clinic = await addClinic(service, 'http://127.0.0.1:9');
    sql = openSql(service.databaseUrl);
    documents = new DocumentCheckPool(1);
  }, 120_000);

  /** The acceptance stage on `stageSql`, as a worker runs it (a registry only where the test checks documents). */
  const acceptanceStage = (stageSql: Sql, registry?: (logger: Logger) => BuiltInRegistry) => {
    const logger = createLogger('silent');
    const context = {
      sql: stageSql,
      registry: registry?.(logger) as BuiltInRegistry,
      retryScheduleMs: [0],
      logger,
      dataKey: service.dataKey,
      xmlCheckTimeoutMs: 30_000,
      leaseMs: 60_000,
      deadlineMs: 60_000,
    };
    return new AcceptanceStage(context, documents);
  };

  afterAll(async () => {
    await documents?.close();
    await sql?.pool.end();
    await service?.stop();
  });

  it('brings small signatures along, leaves large ones in the database, and the check reads those when it begins', async () => {
    const small = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody());
    // 20 personal signatures of 8 KiB each (random bytes, which no compression shrinks): some 220 KB of base64 stored.
    const personalSignatures = Array.from({ length: 20 }, (_, index) => ({
      signer: { snils: '08765432102', role: String((index % 9) + 1) },
      signature: randomBytes(8 * 1024).toString('base64'),
    }));
    const large = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody({ personalSignatures }));
    expect([small.status, large.status]).toEqual([200, 200]);

    const acceptance = acceptanceStage(sql, (logger) => new BuiltInRegistry(sql, { latencyMs: 0, fail: false, logger }));
    const claimed = await acceptance.claim(32, new Map(), 32, []);
    const byId = new Map(claimed.map((request) => [request.queue_message_id, request]));
    const smallRow = byId.get(small.body.queueMessageId)!;
    const largeRow = byId.get(large.body.queueMessageId)!;
    expect({ signature: largeRow.signature, personal: largeRow.personal_signatures }, 'the large request carries no signature').toEqual({
      signature: null,
      personal: null,
    });
    expect(largeRow.signatures_inline).toBe(false);
    expect(smallRow.signatures_inline).toBe(true);
    expect(smallRow.signature?.length).toBeGreaterThan(0);

    // The large request's check reads its signatures: each personal one is found not to be a signature at all.
    const checked = await acceptance.check(largeRow);
    if (!('decided' in checked)) throw new Error('the check of the large request failed to run');
    const messages = (checked.decided.errors ?? []).map((error) => `${error.code} ${error.message}`);
    for (let index = 0; index < personalSignatures.length; index += 1)
      expect(messages.some((message) => message.startsWith(`SIGNATURE_DECODING_ERROR personalSignatures/${index}/signature`))).toBe(true);
    // The small one's, which came along, verify.
    const smallChecked = await acceptance.check(smallRow);
    expect('decided' in smallChecked && smallChecked.decided.state).toBe('accepted');
  }, 120_000);

  /**
   * Issue 24: a claim's cost follows what it takes, not the backlog. The claim locks the rows it
   * chose by their ids; given the stage's conditions to check there too, the planner could lock through
   * the stage's partial index instead, whenever the table's statistics say the stage holds few rows
   * (a backlog that grew since the last ANALYZE, as in every burst): then every claim read the whole
   * backlog (make bench's pipeline: 633 heap pages and 2.5 ms of a 4.3 ms claim of 32). The
   * conditions are now computed on the locked rows instead, and only the ids select them.
   */
  it('locks the rows it takes by their ids, reading no more of a backlog of 300 than the 32 rows it claims', async () => {
    const backlog = 300;
    for (let sent = 0; sent < backlog; sent += 10) {
      const answers = await Promise.all(
        Array.from({ length: 10 }, () => post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody())),
      );
      expect(answers.map((answer) => answer.status)).toEqual(Array(10).fill(200));
    }
    const claims: Array<{ text: string; values: readonly unknown[] }> = [];
    const recording = {
      rows: async (statement: { text: string }, values: readonly unknown[]) => {
        claims.push({ text: statement.text, values });
        return [];
      },
    };
    await acceptanceStage(recording as unknown as Sql).claim(32, new Map(), 32, []);
    const [claim] = claims;

    // The claim run for real (and undone), with the planner's account of each step.
    const client = await sql.pool.connect();
    let plan: PlanNode;
    try {
      await client.query('begin');
      const explained = await client.query({ text: `explain (analyze, buffers, format json) ${claim!.text}`, values: claim!.values as unknown[] });
      plan = (explained.rows[0]['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0]!.Plan;
      await client.query('rollback');
    } finally {
      client.release();
    }
    expect(plan['Actual Rows'], 'the claim takes 32 requests').toBe(32);
    const lock = findNodes(plan, (node) => node['Node Type'] === 'LockRows');
    expect(lock, 'one step locks the rows taken').toHaveLength(1);
    // The rows it locks come from its outer plan; what chose them (the offer) is an InitPlan below it, not counted here.
    const lockedScans = findNodes(
      lock[0]!,
      (node) => node['Relation Name'] === 'emdr_requests',
      (child) => child['Parent Relationship'] !== 'InitPlan',
    );
    expect(lockedScans.map((node) => node['Index Name'] ?? node['Node Type'])).toEqual(
      lockedScans.map(() => expect.stringMatching(/^(emdr_requests_pkey|Bitmap Heap Scan)$/)),
    );
    const read = lockedScans.reduce(
      (rows, node) => rows + node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0),
      0,
    );
    expect(read, 'rows the lock step read').toBeLessThanOrEqual(32);
  }, 120_000);
});

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  'Parent Relationship'?: string;
  Plans?: PlanNode[];
}

/** The nodes of a plan (itself included) that match, below it through the children `follow` accepts. */
function findNodes(node: PlanNode, matches: (node: PlanNode) => boolean, follow: (child: PlanNode) => boolean = () => true): PlanNode[] {
  return [...(matches(node) ? [node] : []), ...(node.Plans ?? []).filter(follow).flatMap((child) => findNodes(child, matches, follow))];
}
