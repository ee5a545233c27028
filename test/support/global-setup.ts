import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { EmbeddedPostgres } from '../../src/db/embedded-postgres.js';
import { createLogger } from '../../src/logging/logger.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** postgres://user:password@host:port of the server the tests create their databases on. */
    postgresServerUrl: string;
  }
}

/**
 * One PostgreSQL server for the whole run: DATABASE_URL's when set, otherwise an embedded one in
 * a temporary DATA_DIR. Each test file creates fresh databases on it (test/support/database.ts).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (process.env.DATABASE_URL) {
    const url = new URL(process.env.DATABASE_URL);
    url.pathname = '';
    project.provide('postgresServerUrl', url.toString().replace(/\/$/, ''));
    return async () => {};
  }
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ehr-gateway-test-pg-'));
  const embedded = new EmbeddedPostgres(dataDir, createLogger('warn', process.stderr));
  const databaseUrl = await embedded.start({ adopt: true, throwaway: true });
  project.provide('postgresServerUrl', databaseUrl.slice(0, databaseUrl.lastIndexOf('/')));
  return async () => {
    await embedded.stop();
    await fs.rm(dataDir, { recursive: true, force: true });
  };
}
