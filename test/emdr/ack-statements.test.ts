import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { addClinic, authHeaders, post, registerBody } from '../support/emdr.js';
import { WORK, WORK_CHANNEL } from '../../src/emdr/pipeline/work-channel.js';
import { startTestService, type TestService } from '../support/service.js';
import { until } from '../support/until.js';

/**
 * What one RegisterDocument acknowledgement asks of PostgreSQL, counted in the driver (issue 24:
 * round trips as few as the bench baseline's, which looks the clinic up and inserts): the clinic's
 * account before the body is read (credentials before bodies), then one insert of the request with
 * its audit row, answering the queue message id (and whether it woke the workers) alone. The
 * acceptance stage's wake-up (NOTIFY) is coalesced, at most one per acknowledgement and far fewer
 * under load; the first after a quiet spell goes with the insert itself, not in a statement of its own.
 */

interface Counted {
  names: Map<string, number>;
  /** The columns each insert answered with. */
  insertColumns: string[][];
}

const counted: Counted = { names: new Map(), insertColumns: [] };
const query = pg.Client.prototype.query;

/** Counts every statement this process's node-postgres clients send, by name (or text), and the insert's answer's columns. */
function countStatements(): void {
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const config = args[0] as string | { name?: string; text?: string };
    const name = typeof config === 'string' ? config : (config.name ?? config.text ?? '');
    counted.names.set(name, (counted.names.get(name) ?? 0) + 1);
    if (name === 'emdr_insert_request') {
      const at = args.findIndex((arg) => typeof arg === 'function');
      if (at >= 0) {
        const callback = args[at] as (error: unknown, result?: pg.QueryResult) => void;
        args[at] = (error: unknown, result?: pg.QueryResult) => {
          if (result) counted.insertColumns.push(result.fields.map((field) => field.name));
          callback(error, result);
        };
      }
    }
    return (query as (...rest: unknown[]) => unknown).apply(this, args);
  } as typeof query;
}

describe('RegisterDocument acknowledgement: statements per acknowledgement', () => {
  let service: TestService;
  let clinic: CreatedClinicAccount;
  /** The workers' wake-ups heard on WORK_CHANNEL, as a worker of another process hears them. */
  const heard: string[] = [];
  let listener: pg.Client | undefined;

  beforeAll(async () => {
    service = await startTestService({}, ['emdr']);
    clinic = await addClinic(service, 'http://127.0.0.1:9');
    listener = new pg.Client({ connectionString: service.databaseUrl });
    await listener.connect();
    listener.on('notification', (message) => heard.push(message.payload ?? ''));
    await listener.query(`listen ${WORK_CHANNEL}`);
    countStatements();
  });

  afterAll(async () => {
    pg.Client.prototype.query = query;
    await listener?.end();
    await service?.stop();
  });

  it("wakes the workers with the insert's own commit for the first acknowledgement after a quiet spell: no statement of its own", async () => {
    // The service's first acknowledgement: no notification went before it.
    counted.names.clear();
    const answer = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody());
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    await until(
      'the workers hear of the stored request',
      async () => heard.length,
      (count) => count >= 1,
    );
    expect(heard).toEqual([WORK.requests]);
    const statements = Object.fromEntries(counted.names);
    expect(statements.emdr_insert_request, JSON.stringify(statements)).toBe(1);
    // Before, a statement of its own after the commit: `select pg_notify($1, $2)`.
    expect(statements.notify_work ?? 0, JSON.stringify(statements)).toBe(0);
    // Its audit row went with the insert: no second one, as an identical retry would have.
    expect(statements.audit_insert_events ?? 0, JSON.stringify(statements)).toBe(0);
  });

  it('is one account lookup and one insert answering the queue message id, each a round trip, for each of 20 acknowledgements', async () => {
    const acknowledgements = 20;
    counted.names.clear();
    counted.insertColumns.length = 0;
    for (let sent = 0; sent < acknowledgements; sent += 1) {
      const answer = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody());
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    }
    const statements = Object.fromEntries(counted.names);
    expect(statements.emdr_clinic_account, JSON.stringify(statements)).toBe(acknowledgements);
    expect(statements.emdr_insert_request, JSON.stringify(statements)).toBe(acknowledgements);
    expect(statements.emdr_existing_request ?? 0).toBe(0);
    expect(statements.notify_work ?? 0).toBeLessThanOrEqual(acknowledgements);
    // The metadata was also sent back by each insert (a jsonb printed and parsed per acknowledgement) before.
    expect(counted.insertColumns).toHaveLength(acknowledgements);
    // The queue message id and whether the insert sent the workers' wake-up (an integer).
    for (const columns of counted.insertColumns) expect(columns).toEqual(['queue_message_id', 'notified']);
  });

  it('reads the stored request back only for an identical retry, which is answered with the same queue message id', async () => {
    const body = registerBody();
    const first = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), body);
    counted.names.clear();
    const retry = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), body);
    expect(retry.status).toBe(200);
    expect(retry.body.queueMessageId).toBe(first.body.queueMessageId);
    expect(counted.names.get('emdr_insert_request')).toBe(1);
    expect(counted.names.get('emdr_existing_request')).toBe(1);
  });
});
