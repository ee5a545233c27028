import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { ensureDatabase } from '../../src/db/embedded-postgres.js';

/** A new, empty database on the test server; returns its connection URL. */
export async function createTestDatabase(): Promise<string> {
  const serverUrl = inject('postgresServerUrl');
  const name = `test_${randomBytes(6).toString('hex')}`;
  await ensureDatabase(serverUrl, name);
  return `${serverUrl}/${name}`;
}
