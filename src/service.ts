import express from 'express';
import type { Config } from './config/config.js';
import { openApiSpecPath } from './config/paths.js';
import { isReady, migrateToLatest, openDatabase, type Database } from './db/database.js';
import { startRetention, type Retention } from './db/retention.js';
import { ehrPurgeSteps } from './ehr/retention.js';
import { ehrRoutes } from './ehr/http.js';
import { createEhrHandlers } from './ehr/methods.js';
import { RpcEnvelope } from './ehr/rpc/envelope.js';
import { loadOpenRpcDocument } from './ehr/spec.js';
import type PgBoss from 'pg-boss';
import { clinicSecurityHandlers, emdrHandlers } from './emdr/handlers.js';
import { docsRoutes } from './docs/routes.js';
import { createEmdrRouter } from './emdr/http.js';
import { startWorkers } from './emdr/pipeline.js';
import { startBoss } from './emdr/queue.js';
import { BuiltInRegistry } from './emdr/registry/built-in.js';
import { emdrPurgeSteps } from './emdr/retention.js';
import { healthRoutes } from './http/health.js';
import { startListener, type Listener } from './http/listener.js';
import type { Logger } from './logging/logger.js';

export const ROLES = ['ehr', 'emdr', 'worker'] as const;
export type Role = (typeof ROLES)[number];

export interface RunningService {
  /** Bound public port (interface A and B), when an HTTP role runs. */
  publicPort: number | undefined;
  /** Bound internal-channel port, when the ehr role runs. */
  internalPort: number | undefined;
  /** Stops listening, finishes in-flight work, closes the database. */
  stop(): Promise<void>;
}

/** Starts the given roles over one database: `serve` runs all three, `serve --only X` one. */
export async function startService(config: Config, logger: Logger, roles: ReadonlySet<Role>): Promise<RunningService> {
  const database = await openDatabase(config, logger, { adopt: true });
  const listeners: Listener[] = [];
  let boss: PgBoss | undefined;
  let retention: Retention | undefined;
  try {
    const applied = await migrateToLatest(database);
    if (applied.length > 0) logger.info({ applied }, 'migrations applied');

    const ready = () => isReady(database.knex);
    let publicPort: number | undefined;
    let internalPort: number | undefined;

    const registry = new BuiltInRegistry(database.knex, { latencyMs: config.registryLatencyMs, fail: config.registryFail });
    if (roles.has('emdr') || roles.has('worker')) {
      boss = await startBoss(database.url, config, logger, { supervise: roles.has('worker') });
    }
    if (roles.has('worker')) {
      retention = startRetention(database.knex, { retentionMs: config.retentionMs, steps: [...emdrPurgeSteps, ...ehrPurgeSteps], logger });
      await startWorkers({ knex: database.knex, boss: boss!, registry, retryScheduleMs: config.callbackRetryScheduleMs, logger, dataKey: await database.dataKey(), xmlCheckTimeoutMs: config.xmlCheckTimeoutMs });
    }

    if (roles.has('ehr') || roles.has('emdr')) {
      const publicApp = express();
      publicApp.disable('x-powered-by');
      publicApp.use(healthRoutes(ready));
      publicApp.use(docsRoutes());
      if (roles.has('emdr')) {
        const handlers = emdrHandlers({ knex: database.knex, boss: boss!, registry, rateLimitPerMinute: config.rateLimitPerMinute, byteQuotaPerMinute: config.byteQuotaPerMinute });
        const securityHandlers = clinicSecurityHandlers(database.knex);
        publicApp.use('/api', await createEmdrRouter({ definition: openApiSpecPath, handlers, securityHandlers, bodyLimitBytes: config.bodyLimitBytes, base64Members: { RegisterDocument: 'document' }, logger }));
      }
      if (roles.has('ehr')) {
        const document = await loadOpenRpcDocument();
        const envelope = new RpcEnvelope(document, await createEhrHandlers({ knex: database.knex, config, logger }), logger);
        publicApp.use(ehrRoutes(envelope, 'public', document.info.version));

        const internalApp = express();
        internalApp.disable('x-powered-by');
        internalApp.use(healthRoutes(ready));
        internalApp.use(ehrRoutes(envelope, 'internal', document.info.version));
        const internal = await startListener(internalApp, config.internalHost, config.internalPort);
        listeners.push(internal);
        internalPort = internal.port;
      }
      const publicListener = await startListener(publicApp, config.host, config.port);
      listeners.push(publicListener);
      publicPort = publicListener.port;
    }
    logger.info({ roles: [...roles], publicPort, internalPort }, 'ehr-gateway started');

    return {
      publicPort,
      internalPort,
      async stop() {
        await Promise.all(listeners.map((listener) => listener.stop()));
        await retention?.stop();
        // Finishes the jobs in flight; an unfinished one comes back to another worker after JOB_EXPIRY.
        await boss?.stop({ graceful: true, wait: true, timeout: 20_000 });
        await database.close();
        logger.info('ehr-gateway stopped');
      },
    };
  } catch (error) {
    await Promise.all(listeners.map((listener) => listener.stop(0)));
    await retention?.stop();
    await boss?.stop({ graceful: false, wait: true });
    await database.close();
    throw error;
  }
}
