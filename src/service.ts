import express from 'express';
import { ConfigError, type Config } from './config/config.js';
import { openApiSpecPath } from './config/paths.js';
import { isReady, migrateToLatest, openDatabase } from './db/database.js';
import { Notifier } from './db/notify.js';
import { MIGRATIONS } from './migrations.js';
import { startRetention, type Retention } from './db/retention.js';
import { ehrPurgeSteps } from './ehr/retention.js';
import { ehrRoutes, rpcHotPath, type RpcAdmission } from './ehr/http.js';
import { REFUSAL_PACING, RefusalPacer } from './http/refusal-pacing.js';
import { createEhrHandlers } from './ehr/methods.js';
import { RpcEnvelope } from './ehr/rpc/envelope.js';
import { createRecordHandlers } from './ehr/medical-record/record-methods.js';
import { loadOpenRpcDocument, servedVersions } from './ehr/spec.js';
import { clinicMessageHandlers } from './emdr/clinic-messages.js';
import { clinicSecurityHandlers, emdrHandlers } from './emdr/intake/handlers.js';
import {
  clinicBodyAdmission,
  clinicRateLimit,
  INTAKE_QUEUE_PER_CLINIC,
  INTAKE_SLOTS_PER_CLINIC,
  IntakeSlots,
  QUOTA_UNIT_BYTES,
} from './emdr/intake/admission/limits.js';
import { consoleRoutes } from './console/routes.js';
import { docsRoutes } from './docs/routes.js';
import { createEmdrRouter, SMALL_BODY_LIMIT_BYTES } from './emdr/intake/router.js';
import { startWorkers, WORK, WORK_CHANNEL, type Workers } from './emdr/pipeline/workers.js';
import { EgressPolicy } from './callbacks/egress.js';
import { createRegistry } from './emdr/registry/registries.js';
import { loadTrustStore, TrustStoreError, trustStoreSummary } from './emdr/signatures/trust-store.js';
import { errorHandler, fallbackBody, notFound, onAnotherListener } from './http/fallback.js';
import { emdrPurgeSteps } from './emdr/retention.js';
import { accountPurgeSteps } from './emdr/accounts/rotation.js';
import { healthRoutes } from './http/health.js';
import { metricsRoutes } from './http/metrics-route.js';
import { Metrics } from './metrics/metrics.js';
import { AuditTrail, auditPurgeStep } from './audit/trail.js';
import { emdrQueueDepths } from './emdr/queues.js';
import { startListener, type Listener, type ListenerOptions } from './http/listener.js';
import { startLiveness } from './http/liveness.js';
import { withAccessLog } from './http/access-log.js';
import { withRequestSpan } from './http/request-span.js';
import { startTracing } from './tracing/tracing.js';
import { withHotPaths, type HotPath } from './http/respond.js';
import { clientKey } from './http/client-address.js';
import { SharedAllowance } from './limits/allowance.js';
import type { CounterStore } from './limits/counters.js';
import type { Logger } from './logging/logger.js';
import type { RequestListener } from 'node:http';
import { tuneCollectorForServing } from './memory/garbage.js';
import { ClientShares, CLIENT_ACTIVE_FOR_MS } from './limits/client-shares.js';
import { LoopTurns } from './work/loop-turns.js';

export const ROLES = ['ehr', 'emdr', 'worker'] as const;
export type Role = (typeof ROLES)[number];

export interface RunningService {
  /** Bound public port (interface A and B), when an HTTP role runs. */
  publicPort: number | undefined;
  /** Bound internal listener port (health, /metrics; the internal channel when the ehr role runs). */
  internalPort: number;
  /** Bound liveness listener port (HEALTH_PORT), when it is set. */
  healthPort: number | undefined;
  /** Stops listening, finishes in-flight work, closes the database. */
  stop(): Promise<void>;
}

/** startListener, failing with one line that names the variable when the port cannot be had. */
async function listen(handler: RequestListener, host: string, port: number, variable: string, options: ListenerOptions): Promise<Listener> {
  return namingThePort(() => startListener(handler, host, port, options), host, port, variable);
}

/** A listener's start, failing with one line that names the variable when the port cannot be had. */
async function namingThePort<T>(start: () => Promise<T>, host: string, port: number, variable: string): Promise<T> {
  try {
    return await start();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw new Error(`${variable}: ${host}:${port} is already in use (another ehr-gateway serve?)`);
    if (code === 'EACCES' || code === 'EADDRNOTAVAIL') throw new Error(`${variable}: cannot listen on ${host}:${port} (${code})`);
    throw error;
  }
}

/** Where a listener bound to `host` is reached from this machine: a wildcard address by localhost. */
function listenerUrl(host: string, port: number): string {
  const reachable = host === '0.0.0.0' || host === '::' || host === '' ? 'localhost' : host.includes(':') ? `[${host}]` : host;
  return `http://${reachable}:${port}`;
}

/** The start line, for the terminal of `make run`: both URLs and what each serves. */
function startLine(
  urls: { publicUrl: string | undefined; internalUrl: string; healthUrl?: string },
  version: string | undefined,
  roles: ReadonlySet<Role>,
): string {
  const publicServes = [...(version ? [`interface A at /${version}/`] : []), ...(roles.has('emdr') ? ['interface B at /api/*'] : []), '/docs', '/console'];
  const internalServes = [...(version ? ['the internal methods of interface A'] : []), '/metrics'];
  const publicPart = urls.publicUrl ? `${urls.publicUrl} (public: ${publicServes.join(', ')}), ` : '';
  const healthPart = urls.healthUrl ? `, ${urls.healthUrl} (liveness: /healthz)` : '';
  return `ehr-gateway started: ${publicPart}${urls.internalUrl} (internal: ${internalServes.join(', ')})${healthPart}`;
}

/** An Express app for what is not a hot path: health, docs, and the fallback answers (`notFoundMessage`: what else this listener answers). */
function restApp(routers: express.RequestHandler[], logger: Logger, fallback: ReturnType<typeof fallbackBody>, notFoundMessage?: string): express.Express {
  const app = express();
  app.disable('x-powered-by');
  for (const router of routers) app.use(router);
  app.use(notFound(fallback, notFoundMessage), errorHandler(logger, fallback));
  return app;
}

/** The limits' windows: RATE_LIMIT, BYTE_QUOTA and RPC_RATE_LIMIT are per minute. */
const LIMIT_WINDOW_MS = 60_000;

/**
 * RPC_RATE_LIMIT: calls per client address (an IPv6 client by its /64), shared by all processes;
 * undefined when off. A refusal to an address that keeps calling regardless is held before it is
 * answered (http/refusal-pacing.ts).
 */
function rpcAdmission(config: Config, counters: CounterStore): RpcAdmission | undefined {
  if (config.rpcRateLimitPerMinute === 0) return undefined;
  const calls = new SharedAllowance(counters, { name: 'rpc-calls', perWindow: config.rpcRateLimitPerMinute, windowMs: LIMIT_WINDOW_MS });
  const pacer = new RefusalPacer();
  return async (clientAddress, count) => {
    const key = clientKey(clientAddress);
    const waitMs = await calls.take(key, count);
    if (waitMs === undefined) return undefined;
    await pacer.pace(key);
    return Math.max(1, Math.ceil(waitMs / 1000));
  };
}

/** The internal listener's answers to paths of the public one: the listener was wrong, not the path. */
function internalListenerFallbacks(
  fallback: ReturnType<typeof fallbackBody>,
  version: string | undefined,
): { elsewhere: express.RequestHandler; notFoundMessage: string } {
  const served = [...(version ? [`interface A's internal methods at /${version}/`] : []), '/healthz', '/readyz', '/metrics'];
  return {
    elsewhere: onAnotherListener(
      ['/api', '/docs', '/console'],
      'this is the internal listener (INTERNAL_PORT); interface B (/api/*), /docs and /console answer on the public listener (PORT)',
      fallback,
    ),
    notFoundMessage: `no such path on the internal listener (INTERNAL_PORT); it answers ${served.join(', ')}`,
  };
}

/** SIGNATURE_TRUST_STORE's certificates (DER), read and checked once, at start; undefined when it is not set. */
function signatureTrustAnchors(config: Config): Uint8Array[] | undefined {
  if (config.signatureTrustStore === undefined) return undefined;
  try {
    return loadTrustStore(config.signatureTrustStore);
  } catch (error) {
    if (error instanceof TrustStoreError) throw new ConfigError('SIGNATURE_TRUST_STORE', error.message);
    throw error;
  }
}

/** Starts the given roles over one database: `serve` runs all three, `serve --only X` one. */
export async function startService(config: Config, logger: Logger, roles: ReadonlySet<Role>): Promise<RunningService> {
  tuneCollectorForServing();
  const trustAnchors = roles.has('worker') ? signatureTrustAnchors(config) : undefined;
  // First on, last off: the spans of the last work in hand are exported at stop.
  const tracing = await startTracing(config.tracing, logger);
  let database: Awaited<ReturnType<typeof openDatabase>>;
  try {
    database = await openDatabase(config, logger, { adopt: true });
  } catch (error) {
    await tracing.stop();
    throw error;
  }
  const listeners: Listener[] = [];
  let retention: Retention | undefined;
  let workers: Workers | undefined;
  let stopAudit: (() => Promise<void>) | undefined;
  const stopWork = async () => {
    // The refusals still counted are written.
    await stopAudit?.();
    await retention?.stop();
    // Finishes the batches in hand; an unfinished one comes back to another worker after JOB_EXPIRY.
    await workers?.stop();
  };
  try {
    const applied = await migrateToLatest(database, MIGRATIONS);
    if (applied.length > 0) logger.info({ applied }, 'migrations applied');

    const ready = () => isReady(database.knex, MIGRATIONS);
    const metrics = new Metrics({ pool: database.sql.pool, queues: () => emdrQueueDepths(database.sql) });
    const audit = new AuditTrail(database.sql);
    stopAudit = () => audit.stop();
    // RATE_LIMIT, BYTE_QUOTA and RPC_RATE_LIMIT count across every process of the database (the internal failure limit too, in its own table).
    const counters: CounterStore = { pool: database.sql.pool };
    let publicPort: number | undefined;
    const registry = createRegistry(config, database.sql, logger);
    // Callbacks never reach this service's own listeners (the configured ports now, the bound ones once listening).
    const callbackEgress = new EgressPolicy(config.callbackAllowedNetworks);
    for (const port of [config.port, config.internalPort]) if (port !== 0) callbackEgress.ownPorts.add(port);
    // Workers first, so that requests stored by this process wake them directly; other processes hear a NOTIFY.
    if (roles.has('worker')) {
      metrics.trustStore(trustAnchors && trustStoreSummary(trustAnchors));
      retention = startRetention(database.sql, {
        retentionMs: config.retentionMs,
        steps: [...emdrPurgeSteps, ...ehrPurgeSteps, auditPurgeStep(config.auditRetentionMs), ...accountPurgeSteps],
        logger,
      });
      workers = await startWorkers({
        sql: database.sql,
        databaseUrl: database.url,
        registry,
        retryScheduleMs: config.callbackRetryScheduleMs,
        callbackTimeoutMs: config.callbackTimeoutMs,
        callbackCircuit: config.callbackCircuit,
        logger,
        dataKey: await database.dataKey(),
        xmlCheckTimeoutMs: config.xmlCheckTimeoutMs,
        leaseMs: config.jobExpiryMs,
        deadlineMs: config.registryDeadlineMs,
        loops: config.workerConcurrency,
        metrics,
        callbackEgress,
        ...(trustAnchors ? { signatureTrustAnchors: trustAnchors } : {}),
      });
    }

    const document = roles.has('ehr') ? await loadOpenRpcDocument() : undefined;
    const versions = document ? servedVersions(document) : [];
    const fallback = fallbackBody(versions);
    const listenerOptions = { limits: config.connectionLimits, errorBody: fallback, trustedProxies: config.trustedProxies };
    // The internal listener serves the authorization server (and monitoring), a few clients that may each need many connections.
    const internalOptions = { ...listenerOptions, limits: { ...config.connectionLimits, maxConnectionsPerClient: 0 } };
    const envelope =
      document &&
      new RpcEnvelope(
        document,
        {
          ...(await createEhrHandlers({ sql: database.sql, config, logger, audit })),
          ...createRecordHandlers({ sql: database.sql, config, audit, version: document.info.version }),
        },
        logger,
        metrics,
      );
    // Every role has the internal listener: health and /metrics; the ehr role also the internal channel of interface A.
    const internalHotPaths = envelope ? [rpcHotPath(envelope, 'internal', versions, logger)] : [];
    const internalFallbacks = internalListenerFallbacks(fallback, document?.info.version);
    const internalRouters = [
      healthRoutes(ready, fallback),
      metricsRoutes(metrics, fallback),
      internalFallbacks.elsewhere,
      ...(envelope ? [ehrRoutes(envelope, 'internal', versions)] : []),
    ];
    const internalApp = restApp(internalRouters, logger, fallback, internalFallbacks.notFoundMessage);
    const internal = await listen(
      withAccessLog(withRequestSpan(withHotPaths(internalHotPaths, internalApp), 'internal'), logger, 'internal'),
      config.internalHost,
      config.internalPort,
      'INTERNAL_PORT',
      internalOptions,
    );
    listeners.push(internal);
    const internalPort = internal.port;
    callbackEgress.ownPorts.add(internalPort);
    let healthPort: number | undefined;
    if (config.healthPort !== undefined) {
      const liveness = await namingThePort(() => startLiveness(config.internalHost, config.healthPort!), config.internalHost, config.healthPort, 'HEALTH_PORT');
      listeners.push(liveness);
      healthPort = liveness.port;
      callbackEgress.ownPorts.add(healthPort);
    }

    if (roles.has('ehr') || roles.has('emdr')) {
      const hotPaths: HotPath[] = [];
      const publicRouters: express.RequestHandler[] = [healthRoutes(ready, fallback), docsRoutes(fallback, () => internalPort), consoleRoutes(fallback)];
      if (roles.has('emdr')) {
        const notifier = new Notifier(database.sql.pool, WORK_CHANNEL, logger, WORK.requests);
        const intakeSlots = new IntakeSlots({
          perClinic: INTAKE_SLOTS_PER_CLINIC,
          queue: INTAKE_QUEUE_PER_CLINIC,
          clinicBytes: config.bodyBytesInFlight.perClinic,
          processBytes: config.bodyBytesInFlight.perProcess,
        });
        metrics.intakeRequests(() => intakeSlots.totals());
        const clientShares =
          config.clientRequestsInProgress === 0
            ? undefined
            : new ClientShares({ perClient: config.clientRequestsInProgress, activeForMs: CLIENT_ACTIVE_FOR_MS });
        if (clientShares) metrics.clientShareWaiting(() => clientShares.waiting);
        // A clinic's held refusals spread over 1-1.5 s, so that its connections do not come back as one burst.
        const refusalPacer = new RefusalPacer({ ...REFUSAL_PACING, spread: 0.5 });
        hotPaths.push(
          await createEmdrRouter({
            definition: openApiSpecPath,
            handlers: {
              ...emdrHandlers({
                sql: database.sql,
                registry,
                audit,
                ...(workers
                  ? { requestStored: workers.requestsStored }
                  : { requestStored: () => notifier.notify(), notificationWithStore: () => notifier.takeTurn() }),
              }),
              ...clinicMessageHandlers({ sql: database.sql }),
            },
            securityHandlers: clinicSecurityHandlers(database.sql),
            beforeBody: clinicRateLimit(
              new SharedAllowance(counters, { name: 'clinic-requests', perWindow: config.rateLimitPerMinute, windowMs: LIMIT_WINDOW_MS }),
              refusalPacer,
            ),
            admitBody: clinicBodyAdmission(
              config.byteQuotaPerMinute === 0
                ? undefined
                : new SharedAllowance(counters, {
                    name: 'clinic-body-kib',
                    perWindow: Math.floor(config.byteQuotaPerMinute / QUOTA_UNIT_BYTES),
                    windowMs: LIMIT_WINDOW_MS,
                  }),
              intakeSlots,
              refusalPacer,
              new LoopTurns(),
            ),
            // RegisterDocument carries the document; every other body is a few fields.
            bodyLimits: { default: SMALL_BODY_LIMIT_BYTES, byOperation: { RegisterDocument: config.bodyLimitBytes } },
            base64Members: { RegisterDocument: 'document' },
            logger,
            metrics,
            clientShares,
          }),
        );
      }
      if (envelope) {
        // The public listener's calls are limited per client address; the internal channel has its failure limit.
        const admit = rpcAdmission(config, counters);
        hotPaths.push(rpcHotPath(envelope, 'public', versions, logger, admit));
        publicRouters.push(ehrRoutes(envelope, 'public', versions, admit));
      }
      const publicListener = await listen(
        withAccessLog(withRequestSpan(withHotPaths(hotPaths, restApp(publicRouters, logger, fallback)), 'public'), logger, 'public'),
        config.host,
        config.port,
        'PORT',
        listenerOptions,
      );
      listeners.push(publicListener);
      publicPort = publicListener.port;
      callbackEgress.ownPorts.add(publicPort);
    }
    const urls = {
      publicUrl: publicPort === undefined ? undefined : listenerUrl(config.host, publicPort),
      internalUrl: listenerUrl(config.internalHost, internalPort),
      ...(healthPort === undefined ? {} : { healthUrl: listenerUrl(config.internalHost, healthPort) }),
    };
    logger.info({ roles: [...roles], publicPort, internalPort, healthPort, ...urls }, startLine(urls, document?.info.version, roles));

    return {
      publicPort,
      internalPort,
      healthPort,
      async stop() {
        await Promise.all(listeners.map((listener) => listener.stop()));
        await stopWork();
        await database.close();
        await tracing.stop();
        logger.info('ehr-gateway stopped');
      },
    };
  } catch (error) {
    await Promise.all(listeners.map((listener) => listener.stop(0)));
    await stopWork();
    await database.close();
    await tracing.stop();
    throw error;
  }
}
