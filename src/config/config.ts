import net from 'node:net';
import path from 'node:path';
import { DEFAULT_CONNECTION_LIMITS, type ConnectionLimits } from '../http/listener.js';
import { parseNetworks, type Networks } from '../http/networks.js';
import type { TracingConfig } from '../tracing/tracer.js';

/** Everything the service reads from its environment, validated once at start. */
export interface Config {
  /** Public listener: interface A at /<version>/, interface B at /api/*. */
  port: number;
  /** Internal channel listener: the only one that answers the internal methods. */
  internalPort: number;
  /** Address the public listener binds to. */
  host: string;
  /** Address the internal listener binds to: loopback unless an operator exposes it. */
  internalHost: string;
  /** The liveness listener's port (GET /healthz from a thread of its own, on internalHost); undefined: none. */
  healthPort: number | undefined;
  /** External PostgreSQL; undefined means the embedded one under dataDir. */
  databaseUrl: string | undefined;
  dataDir: string;
  /** The authorization server's internal accounts: name → password. */
  internalUsers: ReadonlyMap<string, string>;
  exchangeTokenTtlMs: number;
  callbackRetryScheduleMs: readonly number[];
  /** Time a receiver has to answer a callback attempt (CALLBACK_TIMEOUT). */
  callbackTimeoutMs: number;
  /** The circuit breaker per receiver origin: attempts in a row without an answer that open it (0: never), and how long it stays open first. */
  callbackCircuit: { failures: number; cooldownMs: number };
  authTtlUnit: 'seconds' | 'minutes';
  /** IANA time zone in which an instant sent as a birth date is read as a calendar date. */
  birthDateTimeZone: string;
  /** Internal credential failures per internal account and client address before its calls are refused. */
  internalAuthMaxFailures: number;
  /** How long failures count, from the first one; refused calls wait for its end. */
  internalAuthFailureWindowMs: number;
  /** Key (32 bytes) that encrypts secrets at rest (user_sign, clinic callback secrets); undefined: see resolveDataKey. */
  dataKey: Buffer | undefined;
  /** The key DATA_KEY replaces, during a rotation: secrets are opened with either, sealed with DATA_KEY only. */
  dataKeyPrevious: Buffer | undefined;
  /** Largest request body interface B accepts. */
  bodyLimitBytes: number;
  /** What one client may hold of a listener: header and request timeouts, minimum body rate, connection cap. */
  connectionLimits: ConnectionLimits;
  /** Requests per clinic account per minute on interface B, across all processes; 0 turns the limit off. */
  rateLimitPerMinute: number;
  /** Bytes of request bodies per clinic account per minute on interface B, across all processes; 0 turns the quota off. */
  byteQuotaPerMinute: number;
  /** Interface A calls per client address per minute on the public listener, across all processes; 0 turns the limit off. */
  rpcRateLimitPerMinute: number;
  /** Interface B requests of one client address in progress at once while other addresses are served too; 0 turns the share off. */
  clientRequestsInProgress: number;
  /** Interface B body bytes taken in (read, parsed, stored) at once in this process, per clinic account and for all together; more wait unread. */
  bodyBytesInFlight: { perClinic: number; perProcess: number };
  /** Proxies whose X-Forwarded-For names the client (TRUSTED_PROXIES); their own connections are not capped per client. */
  trustedProxies: Networks;
  /** Networks callbacks may reach although loopback, link-local or private (CALLBACK_ALLOWED_NETWORKS). */
  callbackAllowedNetworks: Networks;
  /** Whether save_exchange_token must carry authInfo.phone (EXCHANGE_TOKEN_PHONE=required, the default). */
  exchangeTokenPhoneRequired: boolean;
  /** How long ended requests, expired sessions and exchange tokens are kept before the worker role purges them. */
  retentionMs: number;
  /** How long the audit trail's rows are kept (AUDIT_RETENTION): its own period, by default a year. */
  auditRetentionMs: number;
  /** Connections of each process's runtime pool (DATABASE_POOL_SIZE). */
  databasePoolSize: number;
  /** Loops per stage of the worker role, each with one batch in hand (WORKER_CONCURRENCY). */
  workerConcurrency: number;
  /** How long a worker holds the rows it claimed before another worker may take them (a killed worker's work comes back). */
  jobExpiryMs: number;
  /** Time budget of the checks (XML and signatures) of one RegisterDocument's document: beyond it, acceptance errors. At most half of jobExpiryMs. */
  xmlCheckTimeoutMs: number;
  /** Folder of PEM roots and intermediates the signers' certificates must chain to; undefined: chains are not checked. */
  signatureTrustStore: string | undefined;
  /** Which registry interface B works with: the built-in one in the same database, or the federal РЭМД over SOAP. */
  registry: 'builtin' | 'remd';
  /** How long a submitted request waits for the registry's answer before it ends with ASYNC_RESPONSE_TIMEOUT. */
  registryDeadlineMs: number;
  /** Simulated latency of each call to the built-in registry. */
  registryLatencyMs: number;
  /** How long after a submission the built-in registry answers. */
  registryAnswerDelayMs: number;
  /** Test switch: the built-in registry refuses every registration and file request. */
  registryFail: boolean;
  /** РЭМД's address and the gateway's inbound listener for its answers (REGISTRY=remd only). */
  remd: RemdConfig | undefined;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Where spans go over OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT); undefined: tracing is off and its SDK never loaded. */
  tracing: TracingConfig | undefined;
}

/** An address or a network (CIDR) that may call the gateway's inbound listener for РЭМД. */
export interface AddressRange {
  address: string;
  prefix: number;
  family: 'ipv4' | 'ipv6';
}

export interface RemdConfig {
  /** The registry's SOAP endpoint (REMD_URL). */
  url: string;
  /** The GUID of the gateway as a system registered in the registry (REMD_CLIENT_ENTITY_ID), sent in every message's transportHeader. */
  clientEntityId: string;
  /** The inbound listener for the registry's answers and file requests (POST /emdr/callback). */
  callbackHost: string;
  callbackPort: number;
  /** Who may call the inbound listener (REMD_ALLOWED_SOURCES). */
  allowedSources: readonly AddressRange[];
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`${variable}: ${problem}`);
    this.name = 'ConfigError';
  }
}

const DURATION_UNITS_MS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/** Parses `0`, `500ms`, `5s`, `10m`, `2h`, `1d`; returns milliseconds or undefined when malformed. */
export function parseDuration(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(text.trim());
  if (!match) return undefined;
  const amount = Number(match[1]);
  const unit = match[2];
  if (unit === undefined) return amount === 0 ? 0 : undefined;
  return Math.round(amount * DURATION_UNITS_MS[unit]!);
}

const SIZE_UNITS: Record<string, number> = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 };

/** Parses `1048576`, `512kb`, `32mb`; returns bytes or undefined when malformed. */
export function parseSize(text: string): number | undefined {
  const match = /^(\d+)\s*(b|kb|mb|gb)?$/i.exec(text.trim());
  if (!match) return undefined;
  return Number(match[1]) * SIZE_UNITS[(match[2] ?? 'b').toLowerCase()]!;
}

type Env = Readonly<Record<string, string | undefined>>;

function readPort(env: Env, variable: string, fallback: number): number {
  const raw = env[variable];
  if (raw === undefined || raw === '') return fallback;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(variable, `"${raw}" is not a TCP port (0-65535)`);
  }
  return port;
}

function readDuration(env: Env, variable: string, fallback: string): number {
  const raw = env[variable] || fallback;
  const ms = parseDuration(raw);
  if (ms === undefined) {
    throw new ConfigError(variable, `"${raw}" is not a duration (use e.g. 500ms, 5s, 10m, 2h, 1d)`);
  }
  return ms;
}

function readDatabaseUrl(env: Env): string | undefined {
  const raw = env.DATABASE_URL;
  if (raw === undefined || raw === '') return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('DATABASE_URL', 'is not a URL (expected postgres://user:password@host:port/database)');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new ConfigError('DATABASE_URL', `scheme "${url.protocol}" is not postgres: or postgresql:`);
  }
  if (url.pathname.length <= 1) {
    throw new ConfigError('DATABASE_URL', 'names no database (expected postgres://user:password@host:port/database)');
  }
  return raw;
}

function readInternalUsers(env: Env): Map<string, string> {
  const users = new Map<string, string>();
  const raw = env.INTERNAL_USERS ?? '';
  for (const entry of raw
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)) {
    const colon = entry.indexOf(':');
    const name = colon > 0 ? entry.slice(0, colon) : '';
    const password = colon > 0 ? entry.slice(colon + 1) : '';
    if (!name || !password) {
      throw new ConfigError('INTERNAL_USERS', 'expected name:password[,name:password] with non-empty names and passwords');
    }
    if (users.has(name)) throw new ConfigError('INTERNAL_USERS', `user "${name}" is listed twice`);
    users.set(name, password);
  }
  return users;
}

function parseKey(env: Env, variable: string): Buffer | undefined {
  const raw = env[variable]?.trim();
  if (!raw) return undefined;
  const key = /^[0-9a-fA-F]{64}$/.test(raw) ? Buffer.from(raw, 'hex') : /^[A-Za-z0-9+/_-]{43}=?$/.test(raw) ? Buffer.from(raw, 'base64') : undefined;
  if (key?.length !== 32) throw new ConfigError(variable, 'must be 32 bytes written as 64 hex characters or as base64');
  return key;
}

const seconds = (ms: number) => `${ms / 1000}s`;

/** HEADERS_TIMEOUT, REQUEST_TIMEOUT, BODY_MIN_RATE, MAX_CONNECTIONS (see ConnectionLimits). */
function readConnectionLimits(env: Env): ConnectionLimits {
  const headersTimeoutMs = readDuration(env, 'HEADERS_TIMEOUT', seconds(DEFAULT_CONNECTION_LIMITS.headersTimeoutMs));
  if (headersTimeoutMs < 1000) throw new ConfigError('HEADERS_TIMEOUT', 'must be at least 1s');
  const requestTimeoutMs = readDuration(env, 'REQUEST_TIMEOUT', seconds(DEFAULT_CONNECTION_LIMITS.requestTimeoutMs));
  if (requestTimeoutMs < headersTimeoutMs) throw new ConfigError('REQUEST_TIMEOUT', 'must be at least HEADERS_TIMEOUT');
  const minRateRaw = env.BODY_MIN_RATE || String(DEFAULT_CONNECTION_LIMITS.bodyMinBytesPerSecond);
  const bodyMinBytesPerSecond = parseSize(minRateRaw);
  if (bodyMinBytesPerSecond === undefined)
    throw new ConfigError('BODY_MIN_RATE', `"${minRateRaw}" is not a size per second (use e.g. 1kb; 0 turns the check off)`);
  const maxConnections = readPositiveInteger(
    env,
    'MAX_CONNECTIONS',
    String(DEFAULT_CONNECTION_LIMITS.maxConnections),
    'a whole number of connections, at least 1',
  );
  const maxConnectionsPerClient = readCount(
    env,
    'MAX_CONNECTIONS_PER_CLIENT',
    DEFAULT_CONNECTION_LIMITS.maxConnectionsPerClient,
    'connections (0 turns the cap off)',
  );
  const keepAliveTimeoutMs = readDuration(env, 'KEEP_ALIVE_TIMEOUT', seconds(DEFAULT_CONNECTION_LIMITS.keepAliveTimeoutMs));
  if (keepAliveTimeoutMs < 100) throw new ConfigError('KEEP_ALIVE_TIMEOUT', 'must be at least 100ms');
  const maxRequestsPerConnection = readCount(
    env,
    'MAX_REQUESTS_PER_CONNECTION',
    DEFAULT_CONNECTION_LIMITS.maxRequestsPerConnection,
    'requests (0 turns the cap off)',
  );
  return { headersTimeoutMs, requestTimeoutMs, bodyMinBytesPerSecond, maxConnections, maxConnectionsPerClient, keepAliveTimeoutMs, maxRequestsPerConnection };
}

/** DATA_KEY, or USER_SIGN_KEY (its name when it only encrypted user_sign): 32 bytes as hex or base64; never echoed in errors. */
function readDataKey(env: Env): Buffer | undefined {
  const key = parseKey(env, 'DATA_KEY');
  const oldKey = parseKey(env, 'USER_SIGN_KEY');
  if (key && oldKey && !key.equals(oldKey)) throw new ConfigError('DATA_KEY', 'differs from USER_SIGN_KEY, its old name; set DATA_KEY only');
  return key ?? oldKey;
}

/** DATA_KEY_PREVIOUS: read besides DATA_KEY while `ehr-gateway data-key rotate` re-seals everything under DATA_KEY. */
function readPreviousDataKey(env: Env, dataKey: Buffer | undefined): Buffer | undefined {
  const previous = parseKey(env, 'DATA_KEY_PREVIOUS');
  if (previous && dataKey?.equals(previous)) throw new ConfigError('DATA_KEY_PREVIOUS', 'is the same key as DATA_KEY');
  return previous;
}

function readPositiveInteger(env: Env, variable: string, fallback: string, meaning: string): number {
  const raw = env[variable] || fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(value) || value < 1) throw new ConfigError(variable, `"${raw}" is not ${meaning}`);
  return value;
}

/** A whole number, 0 included (which turns its limit off). */
function readCount(env: Env, variable: string, fallback: number, meaning: string): number {
  const raw = env[variable] || String(fallback);
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(value)) throw new ConfigError(variable, `"${raw}" is not a whole number of ${meaning}`);
  return value;
}

/** Largest bodies a clinic, and the process, take in at once by default (BODY_BYTES_IN_FLIGHT_PER_*): 64 and 256 MiB with the default BODY_LIMIT. */
const CLINIC_BODIES_IN_FLIGHT = 2;
const PROCESS_BODIES_IN_FLIGHT = 8;

/**
 * BODY_BYTES_IN_FLIGHT_PER_CLINIC (at least BODY_LIMIT, so a largest body always fits) and
 * _PER_PROCESS (at least the clinic's), by default 2 and 8 largest bodies. LARGE_BODIES_PER_*, the
 * counts they replace, are refused rather than ignored: a limit an operator set must not vanish.
 */
function readBodyBytesInFlight(env: Env, bodyLimitBytes: number): { perClinic: number; perProcess: number } {
  for (const replaced of ['LARGE_BODIES_PER_CLINIC', 'LARGE_BODIES_PER_PROCESS']) {
    if (env[replaced])
      throw new ConfigError(replaced, 'replaced by BODY_BYTES_IN_FLIGHT_PER_CLINIC and BODY_BYTES_IN_FLIGHT_PER_PROCESS (bytes, not bodies); unset it');
  }
  const read = (variable: string, fallback: number, atLeast: number, atLeastName: string) => {
    const raw = env[variable];
    if (raw === undefined || raw === '') return fallback;
    const bytes = parseSize(raw);
    if (bytes === undefined || bytes < atLeast) throw new ConfigError(variable, `"${raw}" is not a size of at least ${atLeastName} (use e.g. 64mb)`);
    return bytes;
  };
  const perClinic = read('BODY_BYTES_IN_FLIGHT_PER_CLINIC', CLINIC_BODIES_IN_FLIGHT * bodyLimitBytes, bodyLimitBytes, 'BODY_LIMIT');
  const perProcess = read(
    'BODY_BYTES_IN_FLIGHT_PER_PROCESS',
    Math.max(perClinic, PROCESS_BODIES_IN_FLIGHT * bodyLimitBytes),
    perClinic,
    'BODY_BYTES_IN_FLIGHT_PER_CLINIC',
  );
  return { perClinic, perProcess };
}

function readNetworks(env: Env, variable: string): Networks {
  try {
    return parseNetworks(env[variable] ?? '');
  } catch (error) {
    throw new ConfigError(variable, (error as Error).message);
  }
}

/** An IANA time zone name the runtime knows (Europe/Moscow, UTC); not a bare offset such as +03:00. */
function readTimeZone(env: Env, variable: string, fallback: string): string {
  const raw = env[variable] || fallback;
  try {
    if (/^[A-Za-z]/.test(raw)) return new Intl.DateTimeFormat('en-US', { timeZone: raw }).resolvedOptions().timeZone;
  } catch {
    // Unknown to the runtime's time zone database: reported below.
  }
  throw new ConfigError(variable, `"${raw}" is not an IANA time zone name (e.g. Europe/Moscow, UTC)`);
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** `10.1.2.3`, `10.1.0.0/16`, `2001:db8::/32`, comma-separated; undefined for a malformed entry. */
export function parseAddressRanges(text: string): AddressRange[] | undefined {
  const ranges: AddressRange[] = [];
  for (const entry of text
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)) {
    const [address, prefixText, ...rest] = entry.split('/');
    const version = net.isIP(address ?? '');
    if (version === 0 || rest.length > 0) return undefined;
    const bits = version === 4 ? 32 : 128;
    const prefix = prefixText === undefined ? bits : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
    if (!(prefix >= 0 && prefix <= bits)) return undefined;
    ranges.push({ address: address!, prefix, family: version === 4 ? 'ipv4' : 'ipv6' });
  }
  return ranges;
}

/** `text` as an http: or https: URL; undefined when it is not one. */
function httpUrl(text: string): URL | undefined {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined;
  } catch {
    return undefined;
  }
}

/** REMD_*: required with REGISTRY=remd, each checked. */
function readRemd(env: Env): RemdConfig {
  const url = env.REMD_URL ?? '';
  if (!httpUrl(url)) throw new ConfigError('REMD_URL', "must be the http(s) URL of the registry's SOAP endpoint (required with REGISTRY=remd)");
  const clientEntityId = env.REMD_CLIENT_ENTITY_ID ?? '';
  if (!GUID.test(clientEntityId))
    throw new ConfigError('REMD_CLIENT_ENTITY_ID', 'must be the GUID the registry gave this system (required with REGISTRY=remd)');
  const sourcesText = env.REMD_ALLOWED_SOURCES ?? '';
  const allowedSources = parseAddressRanges(sourcesText);
  if (!allowedSources || allowedSources.length === 0) {
    throw new ConfigError(
      'REMD_ALLOWED_SOURCES',
      'must list the addresses or networks (e.g. 10.1.2.3,10.2.0.0/16) that may call the inbound listener (required with REGISTRY=remd)',
    );
  }
  return { url, clientEntityId, callbackHost: env.REMD_CALLBACK_HOST || '127.0.0.1', callbackPort: readPort(env, 'REMD_CALLBACK_PORT', 8082), allowedSources };
}

/**
 * OTEL_EXPORTER_OTLP_ENDPOINT (an http(s) base URL, as OpenTelemetry's specification defines it:
 * traces go to `<it>/v1/traces`), OTEL_EXPORTER_OTLP_HEADERS (`name=value` pairs, comma-separated,
 * values percent-encoded) and OTEL_SERVICE_NAME. Unset endpoint: tracing is off.
 */
function readTracing(env: Env): TracingConfig | undefined {
  const endpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!endpoint) return undefined;
  const url = httpUrl(endpoint);
  if (!url) throw new ConfigError('OTEL_EXPORTER_OTLP_ENDPOINT', 'must be the http(s) base URL of an OTLP/HTTP collector (e.g. http://collector:4318)');
  if (url.search || url.hash) throw new ConfigError('OTEL_EXPORTER_OTLP_ENDPOINT', 'must have no query string or fragment (traces go to <it>/v1/traces)');
  const headers: Record<string, string> = {};
  for (const pair of (env.OTEL_EXPORTER_OTLP_HEADERS ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)) {
    const equals = pair.indexOf('=');
    const name = equals > 0 ? pair.slice(0, equals).trim() : '';
    let value: string | undefined;
    try {
      value = equals > 0 ? decodeURIComponent(pair.slice(equals + 1).trim()) : undefined;
    } catch {
      value = undefined;
    }
    // Never echoed: a header is usually a collector's credential.
    if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(name) || value === undefined || /[\r\n]/.test(value)) {
      throw new ConfigError('OTEL_EXPORTER_OTLP_HEADERS', 'expected name=value[,name=value] with header names and percent-encoded values');
    }
    headers[name] = value;
  }
  const serviceName = env.OTEL_SERVICE_NAME?.trim() || 'ehr-gateway';
  if (serviceName.length > 100) throw new ConfigError('OTEL_SERVICE_NAME', 'is longer than 100 characters');
  return { tracesUrl: `${url.href.replace(/\/+$/, '')}/v1/traces`, headers, serviceName };
}

/**
 * Reads and validates the configuration. Throws ConfigError naming the first bad variable.
 * Tests pass their own env and overrides instead of touching process.env.
 */
export function loadConfig(env: Env = process.env, overrides: Partial<Config> = {}): Config {
  const schedule = (env.CALLBACK_RETRY_SCHEDULE || '0,5s,5m,30m,2h,5h,10h,10h').split(',').map((part) => {
    const ms = parseDuration(part);
    if (ms === undefined) {
      throw new ConfigError('CALLBACK_RETRY_SCHEDULE', `"${part}" is not a duration (use a comma-separated list like 0,5s,5m,30m)`);
    }
    return ms;
  });

  const callbackTimeoutMs = readDuration(env, 'CALLBACK_TIMEOUT', '15s');
  if (callbackTimeoutMs < 100) throw new ConfigError('CALLBACK_TIMEOUT', 'must be at least 100ms');
  const circuitCooldownMs = readDuration(env, 'CALLBACK_CIRCUIT_COOLDOWN', '30s');
  if (circuitCooldownMs < 100) throw new ConfigError('CALLBACK_CIRCUIT_COOLDOWN', 'must be at least 100ms');

  const authTtlUnit = env.AUTH_TTL_UNIT || 'seconds';
  if (authTtlUnit !== 'seconds' && authTtlUnit !== 'minutes') {
    throw new ConfigError('AUTH_TTL_UNIT', `"${authTtlUnit}" is neither seconds nor minutes`);
  }

  const bodyLimitRaw = env.BODY_LIMIT || '32mb';
  const bodyLimitBytes = parseSize(bodyLimitRaw);
  if (bodyLimitBytes === undefined || bodyLimitBytes <= 0) {
    throw new ConfigError('BODY_LIMIT', `"${bodyLimitRaw}" is not a size (use e.g. 32mb, 512kb)`);
  }

  const rateLimitRaw = env.RATE_LIMIT || '600';
  const rateLimitPerMinute = Number(rateLimitRaw);
  if (!Number.isInteger(rateLimitPerMinute) || rateLimitPerMinute < 0) {
    throw new ConfigError('RATE_LIMIT', `"${rateLimitRaw}" is not a whole number of requests per minute (0 turns the limit off)`);
  }

  const connectionLimits = readConnectionLimits(env);
  const byteQuotaRaw = env.BYTE_QUOTA || '256mb';
  const byteQuotaPerMinute = byteQuotaRaw === '0' ? 0 : parseSize(byteQuotaRaw);
  if (byteQuotaPerMinute === undefined || (byteQuotaPerMinute > 0 && byteQuotaPerMinute < bodyLimitBytes)) {
    throw new ConfigError('BYTE_QUOTA', `"${byteQuotaRaw}" is not a size of at least BODY_LIMIT (use e.g. 256mb; 0 turns the quota off)`);
  }

  const exchangeTokenPhone = env.EXCHANGE_TOKEN_PHONE || 'required';
  if (exchangeTokenPhone !== 'required' && exchangeTokenPhone !== 'optional') {
    throw new ConfigError('EXCHANGE_TOKEN_PHONE', `"${exchangeTokenPhone}" is neither required nor optional`);
  }

  const retentionMs = readDuration(env, 'RETENTION', '30d');
  if (retentionMs < 1000) throw new ConfigError('RETENTION', 'must be at least 1s');

  const auditRetentionMs = readDuration(env, 'AUDIT_RETENTION', '365d');
  if (auditRetentionMs < 1000) throw new ConfigError('AUDIT_RETENTION', 'must be at least 1s');

  const jobExpiryMs = readDuration(env, 'JOB_EXPIRY', '30s');
  if (jobExpiryMs < 1000) throw new ConfigError('JOB_EXPIRY', 'must be at least 1s');
  // The check must end well inside JOB_EXPIRY, or another worker takes the same job meanwhile.
  const xmlCheckTimeoutMs = readDuration(env, 'XML_CHECK_TIMEOUT', `${Math.min(10_000, jobExpiryMs / 2)}ms`);
  if (xmlCheckTimeoutMs <= 0 || xmlCheckTimeoutMs > jobExpiryMs / 2)
    throw new ConfigError('XML_CHECK_TIMEOUT', 'must be above 0 and at most half of JOB_EXPIRY');

  const internalAuthFailureWindowMs = readDuration(env, 'INTERNAL_AUTH_FAILURE_WINDOW', '1m');
  if (internalAuthFailureWindowMs < 1000) throw new ConfigError('INTERNAL_AUTH_FAILURE_WINDOW', 'must be at least 1s');

  const registryFailRaw = (env.REGISTRY_FAIL || 'false').toLowerCase();
  if (!['true', 'false', '1', '0'].includes(registryFailRaw)) {
    throw new ConfigError('REGISTRY_FAIL', `"${env.REGISTRY_FAIL}" is neither true nor false`);
  }

  const registry = env.REGISTRY || 'builtin';
  if (registry !== 'builtin' && registry !== 'remd') throw new ConfigError('REGISTRY', `"${registry}" is neither builtin nor remd`);
  const registryDeadlineMs = readDuration(env, 'REGISTRY_DEADLINE', '14d');
  if (registryDeadlineMs < 1000) throw new ConfigError('REGISTRY_DEADLINE', 'must be at least 1s');

  const dataKey = readDataKey(env);

  const logLevel = (env.LOG_LEVEL || 'info') as Config['logLevel'];
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `"${logLevel}" is not one of ${LOG_LEVELS.join(', ')}`);
  }

  return {
    port: readPort(env, 'PORT', 8080),
    internalPort: readPort(env, 'INTERNAL_PORT', 8081),
    host: env.HOST || '0.0.0.0',
    internalHost: env.INTERNAL_HOST || '127.0.0.1',
    healthPort: env.HEALTH_PORT === undefined || env.HEALTH_PORT === '' ? undefined : readPort(env, 'HEALTH_PORT', 0),
    databaseUrl: readDatabaseUrl(env),
    dataDir: path.resolve(env.DATA_DIR || './.data'),
    internalUsers: readInternalUsers(env),
    exchangeTokenTtlMs: readDuration(env, 'EXCHANGE_TOKEN_TTL', '10m'),
    callbackRetryScheduleMs: schedule,
    callbackTimeoutMs,
    callbackCircuit: { failures: readCount(env, 'CALLBACK_CIRCUIT_FAILURES', 5, 'attempts (0 turns the circuit breaker off)'), cooldownMs: circuitCooldownMs },
    authTtlUnit,
    birthDateTimeZone: readTimeZone(env, 'BIRTHDATE_TIME_ZONE', 'Europe/Moscow'),
    internalAuthMaxFailures: readPositiveInteger(env, 'INTERNAL_AUTH_MAX_FAILURES', '10', 'a whole number of failures, at least 1'),
    internalAuthFailureWindowMs,
    dataKey,
    dataKeyPrevious: readPreviousDataKey(env, dataKey),
    bodyLimitBytes,
    connectionLimits,
    rateLimitPerMinute,
    byteQuotaPerMinute,
    rpcRateLimitPerMinute: readCount(env, 'RPC_RATE_LIMIT', 1200, 'calls per minute (0 turns the limit off)'),
    clientRequestsInProgress: readCount(env, 'CLIENT_REQUESTS_IN_PROGRESS', 2, 'requests (0 turns the share off)'),
    bodyBytesInFlight: readBodyBytesInFlight(env, bodyLimitBytes),
    trustedProxies: readNetworks(env, 'TRUSTED_PROXIES'),
    callbackAllowedNetworks: readNetworks(env, 'CALLBACK_ALLOWED_NETWORKS'),
    exchangeTokenPhoneRequired: exchangeTokenPhone === 'required',
    retentionMs,
    auditRetentionMs,
    databasePoolSize: readPositiveInteger(env, 'DATABASE_POOL_SIZE', '10', 'a whole number of connections, at least 1'),
    workerConcurrency: readPositiveInteger(env, 'WORKER_CONCURRENCY', '2', 'a whole number of loops per stage, at least 1'),
    jobExpiryMs,
    xmlCheckTimeoutMs,
    signatureTrustStore: env.SIGNATURE_TRUST_STORE ? path.resolve(env.SIGNATURE_TRUST_STORE) : undefined,
    registry,
    registryDeadlineMs,
    registryLatencyMs: readDuration(env, 'REGISTRY_LATENCY', '0'),
    registryAnswerDelayMs: readDuration(env, 'REGISTRY_ANSWER_DELAY', '0'),
    registryFail: registryFailRaw === 'true' || registryFailRaw === '1',
    remd: registry === 'remd' ? readRemd(env) : undefined,
    logLevel,
    tracing: readTracing(env),
    ...overrides,
  };
}

/** The configuration table of the README, kept beside the loader so the two cannot drift apart. */
export const CONFIG_VARIABLES: ReadonlyArray<{ name: string; fallback: string; meaning: string }> = [
  { name: 'PORT', fallback: '8080', meaning: 'public listener: interface A at /<version>/, interface B at /api/*' },
  { name: 'INTERNAL_PORT', fallback: '8081', meaning: 'internal channel for the authorization server' },
  { name: 'HOST', fallback: '0.0.0.0', meaning: 'address the public listener binds to' },
  { name: 'INTERNAL_HOST', fallback: '127.0.0.1', meaning: 'address the internal listener binds to; expose it only to the authorization server' },
  {
    name: 'HEALTH_PORT',
    fallback: '(unset)',
    meaning:
      "liveness listener on INTERNAL_HOST: GET /healthz answered by a thread of its own from the event loop's heartbeat (503 once it is 10 s old), so the probe never waits behind the loop's work; unset: none (/healthz of the other listeners)",
  },
  { name: 'DATABASE_URL', fallback: '(unset)', meaning: 'external PostgreSQL; unset: embedded PostgreSQL under DATA_DIR' },
  { name: 'DATA_DIR', fallback: './.data', meaning: 'where the embedded PostgreSQL keeps its data' },
  { name: 'INTERNAL_USERS', fallback: '(none)', meaning: "the authorization server's accounts, name:password[,name:password]" },
  { name: 'EXCHANGE_TOKEN_TTL', fallback: '10m', meaning: 'lifetime of an exchange token' },
  { name: 'CALLBACK_RETRY_SCHEDULE', fallback: '0,5s,5m,30m,2h,5h,10h,10h', meaning: 'delays between callback attempts' },
  {
    name: 'CALLBACK_TIMEOUT',
    fallback: '15s',
    meaning: 'time a receiver has to answer a callback attempt (at least 100ms); no answer by then fails the attempt',
  },
  {
    name: 'CALLBACK_CIRCUIT_FAILURES',
    fallback: '5',
    meaning:
      'attempts in a row a receiver origin leaves without an answer (timeout, no connection) before its circuit opens: its callbacks are then postponed by the retry schedule without being sent, until a probe is answered (0 turns the breaker off)',
  },
  {
    name: 'CALLBACK_CIRCUIT_COOLDOWN',
    fallback: '30s',
    meaning: 'how long an open circuit waits before one probe attempt; each unanswered probe doubles it, up to 10 minutes',
  },
  { name: 'AUTH_TTL_UNIT', fallback: 'seconds', meaning: 'unit of authInfo.ttl: seconds or minutes' },
  {
    name: 'BIRTHDATE_TIME_ZONE',
    fallback: 'Europe/Moscow',
    meaning: 'IANA time zone in which a birth date sent as an instant (with Z or an offset) is read as a calendar date',
  },
  {
    name: 'INTERNAL_AUTH_MAX_FAILURES',
    fallback: '10',
    meaning:
      'internal credential failures per internal account and client address within INTERNAL_AUTH_FAILURE_WINDOW; beyond, its calls are refused until the window ends',
  },
  { name: 'INTERNAL_AUTH_FAILURE_WINDOW', fallback: '1m', meaning: 'how long internal credential failures count, from the first one (at least 1s)' },
  {
    name: 'DATA_KEY',
    fallback: '(see README)',
    meaning:
      'key encrypting secrets at rest (user_sign, clinic callback token and signing secret), 32 bytes as hex or base64; old name USER_SIGN_KEY; required with DATABASE_URL, else generated once into DATA_DIR/data.key',
  },
  {
    name: 'DATA_KEY_PREVIOUS',
    fallback: '(unset)',
    meaning:
      'during a rotation of DATA_KEY: the key secrets are also opened with (never sealed with) until ehr-gateway data-key rotate has re-sealed them all under DATA_KEY; then unset it (docs/operations.md)',
  },
  { name: 'BODY_LIMIT', fallback: '32mb', meaning: 'largest RegisterDocument body of interface B (its other operations take at most 64 KiB)' },
  {
    name: 'HEADERS_TIMEOUT',
    fallback: '10s',
    meaning: 'time a client has to send the request line and headers (also the limit for a new connection that sends nothing)',
  },
  { name: 'REQUEST_TIMEOUT', fallback: '15m', meaning: 'time a client has to send a whole request, body included' },
  {
    name: 'BODY_MIN_RATE',
    fallback: '1kb',
    meaning: 'slowest body accepted, bytes per second over any 10 s; a slower connection is cut (0 turns the check off)',
  },
  { name: 'MAX_CONNECTIONS', fallback: '512', meaning: 'open connections per listener; more are closed as they arrive' },
  {
    name: 'MAX_CONNECTIONS_PER_CLIENT',
    fallback: '64',
    meaning:
      'open connections per client address (IPv6: per /64) and listener; more are closed as they arrive (0 turns the cap off; TRUSTED_PROXIES are exempt)',
  },
  {
    name: 'CLIENT_REQUESTS_IN_PROGRESS',
    fallback: '2',
    meaning:
      'interface B requests of one client address (IPv6: per /64) handled at once while other addresses are served too; the rest wait, body unread, in order (a client alone is not held; 0 turns the share off)',
  },
  { name: 'KEEP_ALIVE_TIMEOUT', fallback: '5s', meaning: 'an idle keep-alive connection is closed after this' },
  {
    name: 'MAX_REQUESTS_PER_CONNECTION',
    fallback: '1000',
    meaning: 'requests one connection may carry; the last answer says Connection: close (0 turns the cap off)',
  },
  {
    name: 'TRUSTED_PROXIES',
    fallback: '(none)',
    meaning:
      'addresses or CIDR networks of your reverse proxies: from them, the client address of the limits and the audit trail is taken from X-Forwarded-For',
  },
  { name: 'RATE_LIMIT', fallback: '600', meaning: 'interface B requests per clinic account per minute, across all processes; 0 turns the limit off' },
  {
    name: 'BYTE_QUOTA',
    fallback: '256mb',
    meaning:
      'bytes of interface B request bodies per clinic account per minute, across all processes, reserved from Content-Length before a body is read (at least BODY_LIMIT); 0 turns the quota off',
  },
  {
    name: 'BODY_BYTES_IN_FLIGHT_PER_CLINIC',
    fallback: '2 × BODY_LIMIT (64mb)',
    meaning:
      'interface B body bytes of one clinic account read, parsed and stored at once per process (by Content-Length; without one, the largest the operation takes); further requests wait, unread (at least BODY_LIMIT)',
  },
  {
    name: 'BODY_BYTES_IN_FLIGHT_PER_PROCESS',
    fallback: '8 × BODY_LIMIT (256mb)',
    meaning:
      'interface B body bytes of all clinic accounts read, parsed and stored at once per process; a body over 1 MiB beyond it waits, unread (at least BODY_BYTES_IN_FLIGHT_PER_CLINIC)',
  },
  {
    name: 'RPC_RATE_LIMIT',
    fallback: '1200',
    meaning: 'interface A calls per client address per minute on the public listener, across all processes (429 beyond); 0 turns the limit off',
  },
  {
    name: 'EXCHANGE_TOKEN_PHONE',
    fallback: 'required',
    meaning:
      'required: save_exchange_token must carry authInfo.phone, the phone the authorization server verified (closes login fixation); optional: it may omit it',
  },
  {
    name: 'CALLBACK_ALLOWED_NETWORKS',
    fallback: '(none)',
    meaning:
      "CIDR networks callbacks may reach although loopback, link-local or private (e.g. 127.0.0.0/8,::1/128 for a receiver on this host); the service's own listeners never",
  },
  { name: 'RETENTION', fallback: '30d', meaning: 'how long ended requests (with their callbacks), expired sessions and exchange tokens are kept' },
  {
    name: 'AUDIT_RETENTION',
    fallback: '365d',
    meaning: 'how long the audit trail (ehr-gateway audit) keeps its rows; its own period, independent of RETENTION',
  },
  { name: 'DATABASE_POOL_SIZE', fallback: '10', meaning: "connections of each process's database pool (see the README's connection budget)" },
  {
    name: 'WORKER_CONCURRENCY',
    fallback: '2',
    meaning:
      'batches each stage of the worker role has in hand at once; acceptance and delivery hold as many items (64 and 128 at 2), at most half for one clinic or receiver origin, each settled on its own',
  },
  { name: 'JOB_EXPIRY', fallback: '30s', meaning: "how long a background job may run before another worker takes it over (a killed worker's jobs come back)" },
  {
    name: 'XML_CHECK_TIMEOUT',
    fallback: '10s (at most half of JOB_EXPIRY)',
    meaning:
      "time budget of the checks of one RegisterDocument's document, the XML check and the signature check together (one worker thread runs both); beyond it, DOCUMENT_CHECK_LIMIT",
  },
  {
    name: 'SIGNATURE_TRUST_STORE',
    fallback: '(unset)',
    meaning:
      "folder of PEM certificates (roots and intermediates, read once at start): each signer's certificate must chain to one of them; unset: chains are not checked and the acceptance callback carries a CERTIFICATE_CHAIN_NOT_CHECKED warning",
  },
  {
    name: 'REGISTRY',
    fallback: 'builtin',
    meaning: 'the registry of interface B: builtin (in the same database) or remd (the federal РЭМД over SOAP 1.2, with the REMD_* variables)',
  },
  {
    name: 'REGISTRY_DEADLINE',
    fallback: '14d',
    meaning: 'how long a request submitted to the registry waits for its answer; then it fails with ASYNC_RESPONSE_TIMEOUT (at least 1s)',
  },
  { name: 'REGISTRY_LATENCY', fallback: '0', meaning: 'simulated latency of each call to the built-in registry' },
  {
    name: 'REGISTRY_ANSWER_DELAY',
    fallback: '0',
    meaning: "how long after a submission the built-in registry answers (its answers are asynchronous, as the federal registry's)",
  },
  { name: 'REGISTRY_FAIL', fallback: 'false', meaning: 'test switch: the built-in registry refuses every registration and file request' },
  { name: 'REMD_URL', fallback: '(unset)', meaning: "REGISTRY=remd: the registry's SOAP endpoint, http(s)" },
  {
    name: 'REMD_CLIENT_ENTITY_ID',
    fallback: '(unset)',
    meaning: 'REGISTRY=remd: the GUID the registry gave this system (transportHeader/authInfo/clientEntityId)',
  },
  {
    name: 'REMD_CALLBACK_HOST',
    fallback: '127.0.0.1',
    meaning: "REGISTRY=remd: address of the inbound listener for the registry's answers and file requests (POST /emdr/callback, worker role)",
  },
  { name: 'REMD_CALLBACK_PORT', fallback: '8082', meaning: 'REGISTRY=remd: port of that inbound listener' },
  {
    name: 'REMD_ALLOWED_SOURCES',
    fallback: '(unset)',
    meaning: 'REGISTRY=remd: the addresses or networks (CIDR) that may call the inbound listener, comma-separated; required',
  },
  { name: 'LOG_LEVEL', fallback: 'info', meaning: 'fatal, error, warn, info, debug, trace or silent' },
  {
    name: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    fallback: '(unset)',
    meaning:
      "OpenTelemetry collector's base URL (OTLP/HTTP, e.g. http://collector:4318): spans of each request, pipeline stage and callback attempt go to <it>/v1/traces; unset: tracing off, its SDK not loaded",
  },
  {
    name: 'OTEL_EXPORTER_OTLP_HEADERS',
    fallback: '(none)',
    meaning: "headers of each export, name=value[,name=value] with values percent-encoded (a collector's credentials)",
  },
  { name: 'OTEL_SERVICE_NAME', fallback: 'ehr-gateway', meaning: "the spans' service.name" },
];
