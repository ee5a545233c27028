import knexFactory, { type Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationSource } from '../../src/db/migrations/index.js';
import { KEPT_DOCUMENT } from '../../src/emdr/pipeline/stages/kept-files.js';
import { MIGRATIONS } from '../../src/migrations.js';
import { createTestDatabase } from '../support/database.js';

/**
 * emdr_0011 dropped emdr_requests_awaiting_registry: the registry's getDocumentFile lookup reads
 * emdr_requests_local_uid instead, which must stay (without it, every pull of a document would scan
 * the table of requests).
 */
describe('emdr_0011_one_local_uid_index', () => {
  let knex: Knex;

  beforeAll(async () => {
    knex = knexFactory({
      client: 'pg',
      connection: await createTestDatabase(),
      migrations: { migrationSource: migrationSource(MIGRATIONS), tableName: 'knex_migrations' },
    });
    await knex.migrate.latest();
  });

  afterAll(async () => {
    await knex?.destroy();
  });

  it('leaves one index on local_uid, which the kept-document lookup uses', async () => {
    const indexes = await knex('pg_indexes').where({ tablename: 'emdr_requests' }).pluck('indexname');
    expect(indexes).toContain('emdr_requests_local_uid');
    expect(indexes).not.toContain('emdr_requests_awaiting_registry');
    // On an empty table the planner would scan it whatever the indexes: the scan made too dear, the plan says which index serves.
    const plan = await knex.transaction(async (trx) => {
      await trx.raw('set local enable_seqscan = off');
      const text = KEPT_DOCUMENT.text.replace('$1', "'6f9619ff-8b86-d011-b42d-00c04fc964ff'").replace('$2', "'1.2.643.5.1.13'");
      return (await trx.raw(`explain ${text}`)).rows.map((row: { 'QUERY PLAN': string }) => row['QUERY PLAN']).join('\n');
    });
    expect(plan).toContain('emdr_requests_local_uid');
  });
});
