import type { Config } from '../../config/config.js';
import type { Sql } from '../../db/sql.js';
import type { Logger } from '../../logging/logger.js';
import { BuiltInRegistry } from './built-in.js';
import type { RegistryPort } from './port.js';
import { RemdRegistry } from './remd/adapter.js';

/** The registry REGISTRY names: the built-in one (default) or the federal РЭМД. */
export function createRegistry(config: Config, sql: Sql, logger: Logger): RegistryPort {
  if (config.registry === 'remd') {
    return new RemdRegistry({ config: config.remd!, logger, connectionLimits: config.connectionLimits, documentLimitBytes: config.bodyLimitBytes });
  }
  return new BuiltInRegistry(sql, {
    latencyMs: config.registryLatencyMs,
    fail: config.registryFail,
    answerDelayMs: config.registryAnswerDelayMs,
    leaseMs: config.jobExpiryMs,
    logger,
  });
}
