import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { addClinic, authHeaders, post, registerBody } from '../support/emdr.js';
import { startTestService, type TestService } from '../support/service.js';

/**
 * What one RegisterDocument acknowledgement asks of PostgreSQL, counted in the driver (issue 24:
 * round trips as few as the bench baseline's, which looks the clinic up and inserts): the clinic's
 * account before the body is read (credentials before bodies), then one insert of the request with
 * its audit row, answering the queue message id alone. The acceptance stage's wake-up (NOTIFY) is
 * coalesced, at most one per acknowledgement and far fewer under load.
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

  beforeAll(async () => {
    service = await startTestService({}, ['emdr']);
    clinic = await addClinic(service, 'http://127.0.0.1:9');
    countStatements();
  });

  afterAll(async () => {
    pg.Client.prototype.query = query;
    await service?.stop();
  });

  it('is one account lookup and one insert answering the queue message id alone, each a round trip, for each of 20 acknowledgements', async () => {
    const acknowledgements = 20;
    counted.names.clear();
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
    for (const columns of counted.insertColumns) expect(columns).toEqual(['queue_message_id']);
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
