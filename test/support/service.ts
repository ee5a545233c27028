import { randomBytes } from 'node:crypto';
import { loadConfig, type Config } from '../../src/config/config.js';
import { createLogger } from '../../src/logging/logger.js';
import { ROLES, type Role } from '../../src/roles.js';
import { startService, type RunningService } from '../../src/service.js';
import { createTestDatabase } from './database.js';

/** The tests' callback receivers listen on loopback, which the egress policy refuses unless allowed (as `make run` allows it). */
export const LOOPBACK_CALLBACKS = { CALLBACK_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128' } as const;

export interface TestService extends RunningService {
  config: Config;
  /** DATABASE_URL and DATA_KEY of this service, for the CLI and for addClinic. */
  env: { DATABASE_URL: string; DATA_KEY: string; CALLBACK_ALLOWED_NETWORKS: string };
  databaseUrl: string;
  dataKey: Buffer;
  /** http://<HOST>:<public port> */
  publicUrl: string;
  /** http://<INTERNAL_HOST>:<internal port> */
  internalUrl: string;
}

/**
 * The real service, in process, on loopback ports chosen by the OS and a fresh database.
 * `env` is read as the service would read its environment (HOST and INTERNAL_HOST default to
 * 127.0.0.1); `logDestination` receives the log lines (LOG_LEVEL defaults to silent).
 */
export async function startTestService(
  env: Record<string, string> = {},
  roles: readonly Role[] = ROLES,
  logDestination?: NodeJS.WritableStream,
): Promise<TestService> {
  const databaseUrl = env.DATABASE_URL ?? (await createTestDatabase());
  // A fresh data key per service (unless the test brings one): the service requires one whenever DATABASE_URL is set.
  const dataKey = env.DATA_KEY ?? env.USER_SIGN_KEY ?? randomBytes(32).toString('hex');
  const effective = {
    LOG_LEVEL: 'silent',
    HOST: '127.0.0.1',
    INTERNAL_HOST: '127.0.0.1',
    ...LOOPBACK_CALLBACKS,
    ...env,
    DATA_KEY: dataKey,
    DATABASE_URL: databaseUrl,
    PORT: '0',
    INTERNAL_PORT: '0',
  };
  const config = loadConfig(effective);
  const service = await startService(config, createLogger(config.logLevel, logDestination), new Set(roles));
  return {
    ...service,
    config,
    // What a worker or a CLI beside this service needs: its database, its data key, and its egress policy.
    env: { DATABASE_URL: databaseUrl, DATA_KEY: dataKey, CALLBACK_ALLOWED_NETWORKS: effective.CALLBACK_ALLOWED_NETWORKS },
    databaseUrl,
    dataKey: config.dataKey!,
    publicUrl: `http://${effective.HOST}:${service.publicPort}`,
    internalUrl: `http://${effective.INTERNAL_HOST}:${service.internalPort}`,
  };
}
