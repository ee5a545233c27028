import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { Sql } from '../../src/db/sql.js';
import { ensureDatabase } from '../../src/db/embedded-postgres.js';

/** A new, empty database on the test server; returns its connection URL. */
export async function createTestDatabase(): Promise<string> {
  const serverUrl = inject('postgresServerUrl');
  const name = `test_${randomBytes(6).toString('hex')}`;
  await ensureDatabase(serverUrl, name);
  return `${serverUrl}/${name}`;
}

/** The runtime's database access (node-postgres, prepared statements) on a test database; close with `sql.pool.end()`. */
export function openSql(databaseUrl: string): Sql {
  return new Sql(new pg.Pool({ connectionString: databaseUrl, max: 4 }));
}
