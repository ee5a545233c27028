import { randomBytes } from 'node:crypto';
import { loadConfig, type Config } from '../../src/config/config.js';
import { createLogger } from '../../src/logging/logger.js';
import { ROLES, startService, type Role, type RunningService } from '../../src/service.js';
import { createTestDatabase } from './database.js';

export interface TestService extends RunningService {
  config: Config;
  /** DATABASE_URL and DATA_KEY of this service, for the CLI and for addClinic. */
  env: { DATABASE_URL: string; DATA_KEY: string };
  databaseUrl: string;
  dataKey: Buffer;
  /** http://127.0.0.1:<public port> */
  publicUrl: string;
  /** http://127.0.0.1:<internal port> */
  internalUrl: string;
}

/**
 * The real service, in process, on loopback ports chosen by the OS and a fresh database.
 * `env` is read as the service would read its environment.
 */
export async function startTestService(env: Record<string, string> = {}, roles: readonly Role[] = ROLES): Promise<TestService> {
  const databaseUrl = env.DATABASE_URL ?? (await createTestDatabase());
  // A fresh data key per service: the service requires one whenever DATABASE_URL is set.
  const dataKey = env.DATA_KEY ?? randomBytes(32).toString('hex');
  const config = loadConfig({ LOG_LEVEL: 'silent', ...env, DATA_KEY: dataKey, DATABASE_URL: databaseUrl, PORT: '0', INTERNAL_PORT: '0', HOST: '127.0.0.1' });
  const service = await startService(config, createLogger(config.logLevel), new Set(roles));
  return {
    ...service,
    config,
    env: { DATABASE_URL: databaseUrl, DATA_KEY: dataKey },
    databaseUrl,
    dataKey: config.dataKey!,
    publicUrl: `http://127.0.0.1:${service.publicPort}`,
    internalUrl: `http://127.0.0.1:${service.internalPort}`,
  };
}
