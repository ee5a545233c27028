import express from 'express';
import { ConfigError, type Config } from './config/config.js';
import { openApiSpecPath } from './config/paths.js';
import { isReady, migrateToLatest, openDatabase, type Database } from './db/database.js';
import { Notifier } from './db/notify.js';
import { MIGRATIONS } from './migrations.js';
import { startRetention, type Retention } from './db/retention.js';
import { ehrPurgeSteps } from './ehr/retention.js';
import { ehrRoutes, rpcHotPath, type RpcAdmission } from './ehr/http.js';
import { REFUSAL_PACING, RefusalPacer } from './http/refusal-pacing.js';
import type { RpcEnvelope } from './ehr/rpc/envelope.js';
import { consoleRoutes } from './console/routes.js';
import { docsRoutes } from './docs/routes.js';
import type { Workers } from './emdr/pipeline/workers.js';
import { WORK, WORK_CHANNEL } from './emdr/pipeline/work-channel.js';
import { EgressPolicy } from './callbacks/egress.js';
import type { RegistryPort } from './emdr/registry/port.js';
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
import type { Role } from './roles.js';

// Each role's own modules (interface A's methods and OpenRPC document, interface B's intake and
// schemas, the workers' pipeline and signature checks) are imported by the step that starts the
// role: a process of one role (`serve --only`, the chart's deployments) holds only its own.

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
async function signatureTrustAnchors(config: Config): Promise<Uint8Array[] | undefined> {
  if (config.signatureTrustStore === undefined) return undefined;
  const { loadTrustStore, TrustStoreError } = await import('./emdr/signatures/trust-store.js');
  try {
    return loadTrustStore(config.signatureTrustStore);
  } catch (error) {
    if (error instanceof TrustStoreError) throw new ConfigError('SIGNATURE_TRUST_STORE', error.message);
    throw error;
  }
}

/** What every role of a process shares: the database's readiness, metrics, the audit trail, the limits' counters. */
interface Shared {
  config: Config;
  logger: Logger;
  database: Database;
  metrics: Metrics;
  audit: AuditTrail;
  counters: CounterStore;
  /** Interface B's registry (the emdr and worker roles). */
  registry: RegistryPort | undefined;
  /** Callbacks never reach this service's own listeners (the configured ports now, the bound ones once listening). */
  callbackEgress: EgressPolicy;
}

/** The worker role: the retention's purges and interface B's pipeline. */
async function startWorkerRole(shared: Shared, trustAnchors: Uint8Array[] | undefined): Promise<{ retention: Retention; workers: Workers }> {
  const { config, database, metrics, logger } = shared;
  const [{ startWorkers }, { trustStoreSummary }] = await Promise.all([import('./emdr/pipeline/workers.js'), import('./emdr/signatures/trust-store.js')]);
  metrics.trustStore(trustAnchors && trustStoreSummary(trustAnchors));
  const retention = startRetention(database.sql, {
    retentionMs: config.retentionMs,
    steps: [...emdrPurgeSteps, ...ehrPurgeSteps, auditPurgeStep(config.auditRetentionMs), ...accountPurgeSteps],
    logger,
  });
  try {
    const workers = await startWorkers({
      sql: database.sql,
      databaseUrl: database.url,
      registry: shared.registry!,
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
      callbackEgress: shared.callbackEgress,
      ...(trustAnchors ? { signatureTrustAnchors: trustAnchors } : {}),
    });
    return { retention, workers };
  } catch (error) {
    await retention.stop();
    throw error;
  }
}

/** The ehr role's interface A: its OpenRPC document's versions and the envelope that runs its methods. */
async function ehrInterface(shared: Shared): Promise<{ version: string; versions: string[]; envelope: RpcEnvelope }> {
  const { config, database, logger, audit, metrics } = shared;
  const [{ loadOpenRpcDocument, servedVersions }, { RpcEnvelope }, { createEhrHandlers }, { createRecordHandlers }] = await Promise.all([
    import('./ehr/spec.js'),
    import('./ehr/rpc/envelope.js'),
    import('./ehr/methods.js'),
    import('./ehr/medical-record/record-methods.js'),
  ]);
  const document = await loadOpenRpcDocument();
  const envelope = new RpcEnvelope(
    document,
    {
      ...(await createEhrHandlers({ sql: database.sql, config, logger, audit })),
      ...createRecordHandlers({ sql: database.sql, config, audit, version: document.info.version }),
    },
    logger,
    metrics,
  );
  return { version: document.info.version, versions: servedVersions(document), envelope };
}

/** The emdr role's interface B on the public listener: the intake's router, its limits and handlers. */
async function emdrHotPath(shared: Shared, workers: Workers | undefined): Promise<HotPath> {
  const { config, database, logger, metrics } = shared;
  const [{ createEmdrRouter, SMALL_BODY_LIMIT_BYTES }, { clinicSecurityHandlers, emdrHandlers }, { clinicMessageHandlers }, limits] = await Promise.all([
    import('./emdr/intake/router.js'),
    import('./emdr/intake/handlers.js'),
    import('./emdr/clinic-messages.js'),
    import('./emdr/intake/admission/limits.js'),
  ]);
  const notifier = new Notifier(database.sql.pool, WORK_CHANNEL, logger, WORK.requests);
  const intakeSlots = new limits.IntakeSlots({
    perClinic: limits.INTAKE_SLOTS_PER_CLINIC,
    queue: limits.INTAKE_QUEUE_PER_CLINIC,
    clinicBytes: config.bodyBytesInFlight.perClinic,
    processBytes: config.bodyBytesInFlight.perProcess,
  });
  metrics.intakeRequests(() => intakeSlots.totals());
  const clientShares =
    config.clientRequestsInProgress === 0 ? undefined : new ClientShares({ perClient: config.clientRequestsInProgress, activeForMs: CLIENT_ACTIVE_FOR_MS });
  if (clientShares) metrics.clientShareWaiting(() => clientShares.waiting);
  // A clinic's held refusals spread over 1-1.5 s, so that its connections do not come back as one burst.
  const refusalPacer = new RefusalPacer({ ...REFUSAL_PACING, spread: 0.5 });
  const bodyKib =
    config.byteQuotaPerMinute === 0
      ? undefined
      : new SharedAllowance(shared.counters, {
          name: 'clinic-body-kib',
          perWindow: Math.floor(config.byteQuotaPerMinute / limits.QUOTA_UNIT_BYTES),
          windowMs: LIMIT_WINDOW_MS,
        });
  return createEmdrRouter({
    definition: openApiSpecPath,
    handlers: {
      ...emdrHandlers({
        sql: database.sql,
        registry: shared.registry!,
        audit: shared.audit,
        ...(workers ? { requestStored: workers.requestsStored } : { requestStored: () => notifier.notify(), notificationWithStore: () => notifier.takeTurn() }),
      }),
      ...clinicMessageHandlers({ sql: database.sql }),
    },
    securityHandlers: clinicSecurityHandlers(database.sql),
    beforeBody: limits.clinicRateLimit(
      new SharedAllowance(shared.counters, { name: 'clinic-requests', perWindow: config.rateLimitPerMinute, windowMs: LIMIT_WINDOW_MS }),
      refusalPacer,
    ),
    admitBody: limits.clinicBodyAdmission(bodyKib, intakeSlots, refusalPacer, new LoopTurns()),
    // RegisterDocument carries the document; every other body is a few fields.
    bodyLimits: { default: SMALL_BODY_LIMIT_BYTES, byOperation: { RegisterDocument: config.bodyLimitBytes } },
    base64Members: { RegisterDocument: 'document' },
    logger,
    metrics,
    clientShares,
  });
}

type EhrInterface = Awaited<ReturnType<typeof ehrInterface>>;

/** A listener's connection limits, error body and trusted proxies, as configured. */
function listenerOptions(config: Config, fallback: ReturnType<typeof fallbackBody>): ListenerOptions {
  return { limits: config.connectionLimits, errorBody: fallback, trustedProxies: config.trustedProxies };
}

/** Every role's internal listener: health and /metrics; with the ehr role, interface A's internal channel too. */
async function startInternalListener(shared: Shared, ehr: EhrInterface | undefined, fallback: ReturnType<typeof fallbackBody>, ready: () => Promise<boolean>) {
  const { config, logger } = shared;
  // The internal listener serves the authorization server (and monitoring), a few clients that may each need many connections.
  const options = { ...listenerOptions(config, fallback), limits: { ...config.connectionLimits, maxConnectionsPerClient: 0 } };
  const hotPaths = ehr ? [rpcHotPath(ehr.envelope, 'internal', ehr.versions, logger)] : [];
  const fallbacks = internalListenerFallbacks(fallback, ehr?.version);
  const routers = [
    healthRoutes(ready, fallback),
    metricsRoutes(shared.metrics, fallback),
    fallbacks.elsewhere,
    ...(ehr ? [ehrRoutes(ehr.envelope, 'internal', ehr.versions)] : []),
  ];
  const app = restApp(routers, logger, fallback, fallbacks.notFoundMessage);
  return listen(
    withAccessLog(withRequestSpan(withHotPaths(hotPaths, app), 'internal'), logger, 'internal'),
    config.internalHost,
    config.internalPort,
    'INTERNAL_PORT',
    options,
  );
}

/** The public listener of the ehr and emdr roles: interface A, interface B, /docs and /console. */
async function startPublicListener(
  shared: Shared,
  ehr: EhrInterface | undefined,
  emdr: HotPath | undefined,
  fallback: ReturnType<typeof fallbackBody>,
  ready: () => Promise<boolean>,
  internalPort: number,
): Promise<Listener> {
  const { config, logger } = shared;
  const hotPaths: HotPath[] = emdr ? [emdr] : [];
  const routers: express.RequestHandler[] = [healthRoutes(ready, fallback), docsRoutes(fallback, () => internalPort), consoleRoutes(fallback)];
  if (ehr) {
    // The public listener's calls are limited per client address; the internal channel has its failure limit.
    const admit = rpcAdmission(config, shared.counters);
    hotPaths.push(rpcHotPath(ehr.envelope, 'public', ehr.versions, logger, admit));
    routers.push(ehrRoutes(ehr.envelope, 'public', ehr.versions, admit));
  }
  return listen(
    withAccessLog(withRequestSpan(withHotPaths(hotPaths, restApp(routers, logger, fallback)), 'public'), logger, 'public'),
    config.host,
    config.port,
    'PORT',
    listenerOptions(config, fallback),
  );
}

/** The database migrated, and what every role of the process shares. */
async function prepareShared(config: Config, logger: Logger, roles: ReadonlySet<Role>, database: Database): Promise<Shared> {
  const applied = await migrateToLatest(database, MIGRATIONS);
  if (applied.length > 0) logger.info({ applied }, 'migrations applied');
  const shared: Shared = {
    config,
    logger,
    database,
    metrics: new Metrics({ pool: database.sql.pool, queues: () => emdrQueueDepths(database.sql) }),
    audit: new AuditTrail(database.sql),
    // RATE_LIMIT, BYTE_QUOTA and RPC_RATE_LIMIT count across every process of the database (the internal failure limit too, in its own table).
    counters: { pool: database.sql.pool },
    registry:
      roles.has('emdr') || roles.has('worker') ? (await import('./emdr/registry/registries.js')).createRegistry(config, database.sql, logger) : undefined,
    callbackEgress: new EgressPolicy(config.callbackAllowedNetworks),
  };
  for (const port of [config.port, config.internalPort]) if (port !== 0) shared.callbackEgress.ownPorts.add(port);
  return shared;
}

/** The process's listeners, each added to `listeners` as it starts (so that a failed start stops those before it); their ports. */
async function startListeners(
  shared: Shared,
  roles: ReadonlySet<Role>,
  ehr: EhrInterface | undefined,
  workers: Workers | undefined,
  listeners: Listener[],
): Promise<{ publicPort: number | undefined; internalPort: number; healthPort: number | undefined }> {
  const { config, database } = shared;
  const ready = () => isReady(database.knex, MIGRATIONS);
  const fallback = fallbackBody(ehr?.versions ?? []);
  const started = (listener: Listener) => {
    listeners.push(listener);
    shared.callbackEgress.ownPorts.add(listener.port);
    return listener.port;
  };
  const internalPort = started(await startInternalListener(shared, ehr, fallback, ready));
  const healthPort =
    config.healthPort === undefined
      ? undefined
      : started(await namingThePort(() => startLiveness(config.internalHost, config.healthPort!), config.internalHost, config.healthPort, 'HEALTH_PORT'));
  let publicPort: number | undefined;
  if (roles.has('ehr') || roles.has('emdr')) {
    const emdr = roles.has('emdr') ? await emdrHotPath(shared, workers) : undefined;
    publicPort = started(await startPublicListener(shared, ehr, emdr, fallback, ready, internalPort));
  }
  return { publicPort, internalPort, healthPort };
}

/** Starts the given roles over one database: `serve` runs all three, `serve --only X` one. */
export async function startService(config: Config, logger: Logger, roles: ReadonlySet<Role>): Promise<RunningService> {
  tuneCollectorForServing();
  const trustAnchors = roles.has('worker') ? await signatureTrustAnchors(config) : undefined;
  // First on, last off: the spans of the last work in hand are exported at stop.
  const tracing = await startTracing(config.tracing, logger);
  let database: Database;
  try {
    database = await openDatabase(config, logger, { adopt: true });
  } catch (error) {
    await tracing.stop();
    throw error;
  }
  const listeners: Listener[] = [];
  let shared: Shared | undefined;
  let worker: { retention: Retention; workers: Workers } | undefined;
  const stopWork = async () => {
    // The refusals still counted are written.
    await shared?.audit.stop();
    await worker?.retention.stop();
    // Finishes the batches in hand; an unfinished one comes back to another worker after JOB_EXPIRY.
    await worker?.workers.stop();
  };
  try {
    shared = await prepareShared(config, logger, roles, database);
    // Workers first, so that requests stored by this process wake them directly; other processes hear a NOTIFY.
    if (roles.has('worker')) worker = await startWorkerRole(shared, trustAnchors);
    const ehr = roles.has('ehr') ? await ehrInterface(shared) : undefined;
    const ports = await startListeners(shared, roles, ehr, worker?.workers, listeners);
    const urls = {
      publicUrl: ports.publicPort === undefined ? undefined : listenerUrl(config.host, ports.publicPort),
      internalUrl: listenerUrl(config.internalHost, ports.internalPort),
      ...(ports.healthPort === undefined ? {} : { healthUrl: listenerUrl(config.internalHost, ports.healthPort) }),
    };
    logger.info({ roles: [...roles], ...ports, ...urls }, startLine(urls, ehr?.version, roles));

    return {
      ...ports,
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
