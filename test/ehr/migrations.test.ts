import knexFactory from 'knex';
import { describe, expect, it } from 'vitest';
import { migrationSource } from '../../src/db/migrations/index.js';
import { MIGRATIONS } from '../../src/migrations.js';
import { createTestDatabase } from '../support/database.js';

describe('interface A migrations', () => {
  it('ehr_003 moves stored genders from 0..3 (male, female, other, unknown) to the peer SDK enum 1..4', async () => {
    const knex = knexFactory({
      client: 'pg',
      connection: await createTestDatabase(),
      migrations: { migrationSource: migrationSource(MIGRATIONS), tableName: 'knex_migrations' },
    });
    try {
      // Interface A's first two migrations: the database as 1.0.0-alpha left it.
      await knex.migrate.up();
      await knex.migrate.up();
      expect((await knex('knex_migrations').pluck('name')) as string[]).toEqual(['ehr_001_patients', 'ehr_002_sessions']);
      const patient = (id: string, gender: number) => ({ id, surname: 'S', name: 'N', birth_date: '2000-01-01', gender, surname_key: 's', name_key: 'n' });
      await knex('ehr_patients').insert([patient('male', 0), patient('female', 1), patient('other', 2), patient('unknown', 3)]);

      await knex.migrate.latest();
      const genders = Object.fromEntries(
        (await knex('ehr_patients').select('id', 'gender')).map((row: { id: string; gender: number }) => [row.id, row.gender]),
      );
      expect(genders).toEqual({ male: 1, female: 2, other: 3, unknown: 4 });
      const refused = await knex('ehr_patients')
        .insert(patient('old-enum', 0))
        .catch((error: { code?: string }) => error);
      expect((refused as { code?: string }).code).toBe('23514');
    } finally {
      await knex.destroy();
    }
  });
});
