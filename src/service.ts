import express from 'express';
import { ConfigError, type Config } from './config/config.js';
import { openApiSpecPath } from './config/paths.js';
import { isReady, migrateToLatest, openDatabase, type Database } from './db/database.js';
import { startRetention, type Retention } from './db/retention.js';
import { ehrPurgeSteps } from './ehr/retention.js';
import { ehrRoutes } from './ehr/http.js';
import { createEhrHandlers } from './ehr/methods.js';
import { RpcEnvelope } from './ehr/rpc/envelope.js';
import { loadOpenRpcDocument } from './ehr/spec.js';
import type PgBoss from 'pg-boss';
import { clinicMessageHandlers } from './emdr/clinic-messages.js';
import { clinicRateLimit, clinicSecurityHandlers, emdrHandlers } from './emdr/handlers.js';
import { consoleRoutes } from './console/routes.js';
import { docsRoutes } from './docs/routes.js';
import { createEmdrRouter, SMALL_BODY_LIMIT_BYTES } from './emdr/http.js';
import { ACCEPT_CONCURRENCY, startWorkers } from './emdr/pipeline.js';
import { loadTrustStore, TrustStoreError } from './emdr/signatures/trust-store.js';
import { SignatureVerifier } from './emdr/signatures/verifier.js';
import { startBoss } from './emdr/queue.js';
import { BuiltInRegistry } from './emdr/registry/built-in.js';
import { errorHandler, fallbackBody, notFound } from './http/fallback.js';
import { emdrPurgeSteps } from './emdr/retention.js';
import { healthRoutes } from './http/health.js';
import { startListener, type Listener, type ListenerOptions } from './http/listener.js';
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

/** startListener, failing with one line that names the variable when the port cannot be had. */
async function listen(app: express.Express, host: string, port: number, variable: string, options: ListenerOptions): Promise<Listener> {
  try {
    return await startListener(app, host, port, options);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw new Error(`${variable}: ${host}:${port} is already in use (another ehr-gateway serve?)`);
    if (code === 'EACCES' || code === 'EADDRNOTAVAIL') throw new Error(`${variable}: cannot listen on ${host}:${port} (${code})`);
    throw error;
  }
}

/** The worker role's signature verifier, with SIGNATURE_TRUST_STORE read and checked once, here. */
function signatureVerifierFor(config: Config): SignatureVerifier {
  let trustAnchors: Uint8Array[] | undefined;
  if (config.signatureTrustStore !== undefined) {
    try {
      trustAnchors = loadTrustStore(config.signatureTrustStore);
    } catch (error) {
      if (error instanceof TrustStoreError) throw new ConfigError('SIGNATURE_TRUST_STORE', error.message);
      throw error;
    }
  }
  return new SignatureVerifier({ workers: ACCEPT_CONCURRENCY, timeoutMs: config.xmlCheckTimeoutMs, ...(trustAnchors ? { trustAnchors } : {}) });
}

/** Starts the given roles over one database: `serve` runs all three, `serve --only X` one. */
export async function startService(config: Config, logger: Logger, roles: ReadonlySet<Role>): Promise<RunningService> {
  const signatureVerifier = roles.has('worker') ? signatureVerifierFor(config) : undefined;
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

    if (roles.has('ehr') || roles.has('emdr')) {
      const document = roles.has('ehr') ? await loadOpenRpcDocument() : undefined;
      const fallback = fallbackBody(document ? [document.info.version] : []);
      const listenerOptions = { limits: config.connectionLimits, errorBody: fallback };
      const publicApp = express();
      publicApp.disable('x-powered-by');
      publicApp.use(healthRoutes(ready, fallback));
      publicApp.use(docsRoutes(fallback, () => internalPort));
      publicApp.use(consoleRoutes(fallback));
      if (roles.has('emdr')) {
        publicApp.use(
          '/api',
          await createEmdrRouter({
            definition: openApiSpecPath,
            handlers: {
              ...emdrHandlers({ knex: database.knex, boss: boss!, registry, byteQuotaPerMinute: config.byteQuotaPerMinute }),
              ...clinicMessageHandlers({ knex: database.knex, boss: boss!, registry, retryScheduleMs: config.callbackRetryScheduleMs }),
            },
            securityHandlers: clinicSecurityHandlers(database.knex),
            beforeBody: clinicRateLimit(config.rateLimitPerMinute),
            // RegisterDocument carries the document; every other body is a few fields.
            bodyLimits: { default: SMALL_BODY_LIMIT_BYTES, byOperation: { RegisterDocument: config.bodyLimitBytes } },
            base64Members: { RegisterDocument: 'document' },
            logger,
          }),
        );
      }
      if (document) {
        const envelope = new RpcEnvelope(document, await createEhrHandlers({ knex: database.knex, config, logger }), logger);
        publicApp.use(ehrRoutes(envelope, 'public', document.info.version));

        const internalApp = express();
        internalApp.disable('x-powered-by');
        internalApp.use(healthRoutes(ready, fallback));
        internalApp.use(ehrRoutes(envelope, 'internal', document.info.version));
        internalApp.use(notFound(fallback), errorHandler(logger, fallback));
        const internal = await listen(internalApp, config.internalHost, config.internalPort, 'INTERNAL_PORT', listenerOptions);
        listeners.push(internal);
        internalPort = internal.port;
      }
      publicApp.use(notFound(fallback), errorHandler(logger, fallback));
      const publicListener = await listen(publicApp, config.host, config.port, 'PORT', listenerOptions);
      listeners.push(publicListener);
      publicPort = publicListener.port;
    }
    // Workers last: a port already in use then fails `serve` before any worker polls (pg-boss's
    // worker clean-up can poll for ever after a stop that races a worker's first fetch).
    if (roles.has('worker')) {
      retention = startRetention(database.knex, { retentionMs: config.retentionMs, steps: [...emdrPurgeSteps, ...ehrPurgeSteps], logger });
      await startWorkers({
        knex: database.knex,
        boss: boss!,
        registry,
        retryScheduleMs: config.callbackRetryScheduleMs,
        logger, dataKey: await database.dataKey(),
        xmlCheckTimeoutMs: config.xmlCheckTimeoutMs,
        signatureVerifier: signatureVerifier!,
      });
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
        await signatureVerifier?.stop();
        await database.close();
        logger.info('ehr-gateway stopped');
      },
    };
  } catch (error) {
    await Promise.all(listeners.map((listener) => listener.stop(0)));
    await retention?.stop();
    await boss?.stop({ graceful: false, wait: true });
    await signatureVerifier?.stop();
    await database.close();
    throw error;
  }
}
