import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseDuration, parseSize } from '../../src/config/config.js';

/** What REGISTRY=remd needs, valid. */
const REMD = {
  REGISTRY: 'remd',
  REMD_URL: 'https://remd.example/port/emdr',
  REMD_CLIENT_ENTITY_ID: '17c74e63-dc38-438d-a27a-a1aa063ee7b8',
  REMD_ALLOWED_SOURCES: '10.1.2.3, 10.2.0.0/16, 2001:db8::/32',
};

describe('config', () => {
  it('uses the built-in registry by default, answering at once, with a 14-day deadline; REGISTRY=remd reads the REMD_* variables', () => {
    expect(loadConfig({})).toMatchObject({ registry: 'builtin', registryDeadlineMs: 14 * 86_400_000, registryAnswerDelayMs: 0, remd: undefined });
    expect(loadConfig(REMD).remd).toEqual({
      url: 'https://remd.example/port/emdr',
      clientEntityId: '17c74e63-dc38-438d-a27a-a1aa063ee7b8',
      callbackHost: '127.0.0.1',
      callbackPort: 8082,
      allowedSources: [
        { address: '10.1.2.3', prefix: 32, family: 'ipv4' },
        { address: '10.2.0.0', prefix: 16, family: 'ipv4' },
        { address: '2001:db8::', prefix: 32, family: 'ipv6' },
      ],
    });
    // The REMD_* variables matter only with REGISTRY=remd.
    expect(loadConfig({ REMD_URL: 'nonsense' }).remd).toBeUndefined();
  });

  it('has the documented defaults', () => {
    const config = loadConfig({});
    expect(config.port).toBe(8080);
    expect(config.internalPort).toBe(8081);
    expect(config.databaseUrl).toBeUndefined();
    expect(config.dataDir).toMatch(/\.data$/);
    expect(config.exchangeTokenTtlMs).toBe(600_000);
    expect(config.callbackRetryScheduleMs).toEqual([0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
    expect(config.authTtlUnit).toBe('seconds');
    expect(config.bodyLimitBytes).toBe(32 * 1024 * 1024);
    expect(config.internalUsers.size).toBe(0);
  });

  it('bounds slow and greedy clients by default, and names the variable of a bad limit', () => {
    expect(loadConfig({}).connectionLimits).toEqual({
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 900_000,
      bodyMinBytesPerSecond: 1024,
      maxConnections: 512,
      maxConnectionsPerClient: 64,
      keepAliveTimeoutMs: 5_000,
      maxRequestsPerConnection: 1_000,
    });
    expect(
      loadConfig({
        HEADERS_TIMEOUT: '3s',
        REQUEST_TIMEOUT: '1m',
        BODY_MIN_RATE: '0',
        MAX_CONNECTIONS: '50',
        MAX_CONNECTIONS_PER_CLIENT: '0',
        KEEP_ALIVE_TIMEOUT: '2s',
        MAX_REQUESTS_PER_CONNECTION: '0',
      }).connectionLimits,
    ).toEqual({
      headersTimeoutMs: 3000,
      requestTimeoutMs: 60_000,
      bodyMinBytesPerSecond: 0,
      maxConnections: 50,
      maxConnectionsPerClient: 0,
      keepAliveTimeoutMs: 2000,
      maxRequestsPerConnection: 0,
    });
    for (const [variable, value] of [
      ['HEADERS_TIMEOUT', '0'],
      ['REQUEST_TIMEOUT', '5s'],
      ['BODY_MIN_RATE', 'fast'],
      ['MAX_CONNECTIONS', '0'],
      ['MAX_CONNECTIONS_PER_CLIENT', 'many'],
      ['KEEP_ALIVE_TIMEOUT', '0'],
      ['MAX_REQUESTS_PER_CONNECTION', '-1'],
    ] as const) {
      expect(() => loadConfig({ [variable]: value })).toThrow(new RegExp(`^${variable}: `));
    }
  });

  it('has the documented defaults of the limits of issue 21, and names the variable of a bad one', () => {
    const config = loadConfig({});
    expect(config.rpcRateLimitPerMinute).toBe(1200);
    expect(config.bodyBytesInFlight).toEqual({ perClinic: 64 * 1024 * 1024, perProcess: 256 * 1024 * 1024 });
    expect(config.exchangeTokenPhoneRequired).toBe(true);
    expect(config.trustedProxies.text).toBe('');
    expect(config.callbackAllowedNetworks.includes('127.0.0.1')).toBe(false);
    const set = loadConfig({
      RPC_RATE_LIMIT: '0',
      EXCHANGE_TOKEN_PHONE: 'optional',
      TRUSTED_PROXIES: '10.0.0.0/8, 192.0.2.7',
      CALLBACK_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128',
    });
    expect(set.rpcRateLimitPerMinute).toBe(0);
    expect(set.exchangeTokenPhoneRequired).toBe(false);
    expect(set.trustedProxies.includes('10.1.2.3')).toBe(true);
    expect(set.trustedProxies.includes('192.0.2.8')).toBe(false);
    expect(set.callbackAllowedNetworks.includes('::1')).toBe(true);
    // The body budgets follow BODY_LIMIT unless set.
    expect(loadConfig({ BODY_LIMIT: '100mb' }).bodyBytesInFlight).toEqual({ perClinic: 200 * 1024 * 1024, perProcess: 800 * 1024 * 1024 });
    expect(loadConfig({ BODY_BYTES_IN_FLIGHT_PER_CLINIC: '48mb', BODY_BYTES_IN_FLIGHT_PER_PROCESS: '48mb' }).bodyBytesInFlight).toEqual({
      perClinic: 48 * 1024 * 1024,
      perProcess: 48 * 1024 * 1024,
    });
    for (const [variable, value] of [
      ['RPC_RATE_LIMIT', 'lots'],
      ['BODY_BYTES_IN_FLIGHT_PER_CLINIC', 'x'],
      // Below the largest body, which could then never be read.
      ['BODY_BYTES_IN_FLIGHT_PER_CLINIC', '16mb'],
      ['BODY_BYTES_IN_FLIGHT_PER_PROCESS', '32mb'],
      // The counts the byte budgets replaced: refused, not silently ignored.
      ['LARGE_BODIES_PER_CLINIC', '4'],
      ['LARGE_BODIES_PER_PROCESS', '16'],
      ['EXCHANGE_TOKEN_PHONE', 'sometimes'],
      ['TRUSTED_PROXIES', '10.0.0.0/33'],
      ['CALLBACK_ALLOWED_NETWORKS', 'localhost'],
    ] as const) {
      expect(() => loadConfig({ [variable]: value })).toThrow(new RegExp(`^${variable}: `));
    }
  });

  it('keeps the internal channel on loopback and limits internal credential failures by default', () => {
    const config = loadConfig({});
    expect(config.host).toBe('0.0.0.0');
    expect(config.internalHost).toBe('127.0.0.1');
    expect(config.internalAuthMaxFailures).toBe(10);
    expect(config.internalAuthFailureWindowMs).toBe(60_000);
    expect(loadConfig({ HOST: '10.0.0.5' }).internalHost).toBe('127.0.0.1');
  });

  it('reads birth dates in Europe/Moscow unless BIRTHDATE_TIME_ZONE names another IANA zone', () => {
    expect(loadConfig({}).birthDateTimeZone).toBe('Europe/Moscow');
    expect(loadConfig({ BIRTHDATE_TIME_ZONE: 'Asia/Yekaterinburg' }).birthDateTimeZone).toBe('Asia/Yekaterinburg');
    expect(loadConfig({ BIRTHDATE_TIME_ZONE: 'UTC' }).birthDateTimeZone).toBe('UTC');
  });

  it('parses durations and sizes', () => {
    expect(parseDuration('0')).toBe(0);
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('5s')).toBe(5000);
    expect(parseDuration('10m')).toBe(600_000);
    expect(parseDuration('2h')).toBe(7_200_000);
    expect(parseDuration('10')).toBeUndefined();
    expect(parseDuration('ten minutes')).toBeUndefined();
    expect(parseSize('32mb')).toBe(33_554_432);
    expect(parseSize('512kb')).toBe(524_288);
    expect(parseSize('lots')).toBeUndefined();
  });

  it('reads internal users', () => {
    const config = loadConfig({ INTERNAL_USERS: 'auth:s3cret, backup:p:w' });
    expect([...config.internalUsers]).toEqual([
      ['auth', 's3cret'],
      ['backup', 'p:w'],
    ]);
  });

  it('has the documented defaults and bounds of the retention, byte quota and XML check', () => {
    const config = loadConfig({});
    expect(config.retentionMs).toBe(30 * 86_400_000);
    expect(config.byteQuotaPerMinute).toBe(256 * 1024 * 1024);
    expect(config.xmlCheckTimeoutMs).toBe(10_000);
    expect(loadConfig({ JOB_EXPIRY: '4s' }).xmlCheckTimeoutMs).toBe(2_000);
    expect(loadConfig({ BYTE_QUOTA: '0' }).byteQuotaPerMinute).toBe(0);
    for (const [env, variable] of [
      [{ RETENTION: '0' }, 'RETENTION'],
      [{ RETENTION: 'forever' }, 'RETENTION'],
      [{ BYTE_QUOTA: '1mb' }, 'BYTE_QUOTA'],
      [{ BYTE_QUOTA: 'lots' }, 'BYTE_QUOTA'],
      [{ XML_CHECK_TIMEOUT: '20s' }, 'XML_CHECK_TIMEOUT'],
      [{ XML_CHECK_TIMEOUT: '0' }, 'XML_CHECK_TIMEOUT'],
    ] as const) {
      expect(() => loadConfig(env)).toThrow(new RegExp(`^${variable}: `));
    }
  });

  it.each([
    [{ EXCHANGE_TOKEN_TTL: 'soon' }, 'EXCHANGE_TOKEN_TTL'],
    [{ CALLBACK_RETRY_SCHEDULE: '0,5s,later' }, 'CALLBACK_RETRY_SCHEDULE'],
    [{ AUTH_TTL_UNIT: 'hours' }, 'AUTH_TTL_UNIT'],
    [{ PORT: '99999' }, 'PORT'],
    [{ INTERNAL_PORT: 'eighty' }, 'INTERNAL_PORT'],
    [{ DATABASE_URL: 'not a url' }, 'DATABASE_URL'],
    [{ DATABASE_URL: 'mysql://u:p@localhost/db' }, 'DATABASE_URL'],
    [{ DATABASE_URL: 'postgres://u:p@localhost:5432' }, 'DATABASE_URL'],
    [{ INTERNAL_USERS: 'nopassword' }, 'INTERNAL_USERS'],
    [{ INTERNAL_USERS: 'a:1,a:2' }, 'INTERNAL_USERS'],
    [{ BODY_LIMIT: 'huge' }, 'BODY_LIMIT'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ BIRTHDATE_TIME_ZONE: 'Europe/Moskva' }, 'BIRTHDATE_TIME_ZONE'],
    [{ BIRTHDATE_TIME_ZONE: '+03:00' }, 'BIRTHDATE_TIME_ZONE'],
    [{ INTERNAL_AUTH_MAX_FAILURES: '0' }, 'INTERNAL_AUTH_MAX_FAILURES'],
    [{ INTERNAL_AUTH_MAX_FAILURES: 'ten' }, 'INTERNAL_AUTH_MAX_FAILURES'],
    [{ INTERNAL_AUTH_FAILURE_WINDOW: '500ms' }, 'INTERNAL_AUTH_FAILURE_WINDOW'],
    [{ REGISTRY: 'federal' }, 'REGISTRY'],
    [{ REGISTRY_DEADLINE: '500ms' }, 'REGISTRY_DEADLINE'],
    [{ REGISTRY_ANSWER_DELAY: 'later' }, 'REGISTRY_ANSWER_DELAY'],
    [{ ...REMD, REMD_URL: undefined }, 'REMD_URL'],
    [{ ...REMD, REMD_URL: 'ftp://registry.example/port/emdr' }, 'REMD_URL'],
    [{ ...REMD, REMD_CLIENT_ENTITY_ID: 'gateway' }, 'REMD_CLIENT_ENTITY_ID'],
    [{ ...REMD, REMD_ALLOWED_SOURCES: undefined }, 'REMD_ALLOWED_SOURCES'],
    [{ ...REMD, REMD_ALLOWED_SOURCES: '10.0.0.0/33' }, 'REMD_ALLOWED_SOURCES'],
    [{ ...REMD, REMD_ALLOWED_SOURCES: 'registry.example' }, 'REMD_ALLOWED_SOURCES'],
    [{ ...REMD, REMD_CALLBACK_PORT: '70000' }, 'REMD_CALLBACK_PORT'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, 'OTEL_EXPORTER_OTLP_ENDPOINT'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'grpc://collector:4317' }, 'OTEL_EXPORTER_OTLP_ENDPOINT'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/?x=1' }, 'OTEL_EXPORTER_OTLP_ENDPOINT'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_HEADERS: 'authorization' }, 'OTEL_EXPORTER_OTLP_HEADERS'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_HEADERS: 'x-key=%zz' }, 'OTEL_EXPORTER_OTLP_HEADERS'],
  ])('rejects %o naming %s', (env, variable) => {
    let thrown: unknown;
    try {
      loadConfig(env);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as ConfigError).variable).toBe(variable);
    expect((thrown as Error).message.startsWith(`${variable}: `)).toBe(true);
    expect((thrown as Error).message).not.toContain('\n');
  });

  it('never echoes a password from DATABASE_URL or INTERNAL_USERS in its errors', () => {
    expect(() => loadConfig({ DATABASE_URL: 'mysql://u:hunter2@localhost/db' })).toThrow(/^((?!hunter2).)*$/);
    expect(() => loadConfig({ INTERNAL_USERS: 'a:hunter2,a:hunter2' })).toThrow(/^((?!hunter2).)*$/);
  });

  it('traces only when OTEL_EXPORTER_OTLP_ENDPOINT is set: OTLP/HTTP to <it>/v1/traces, with its headers and service name', () => {
    expect(loadConfig({}).tracing).toBeUndefined();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: '' }).tracing).toBeUndefined();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).tracing).toEqual({
      tracesUrl: 'http://collector:4318/v1/traces',
      headers: {},
      serviceName: 'ehr-gateway',
    });
    expect(
      loadConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example/base/',
        OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20s3cret, x-tenant=clinic',
        OTEL_SERVICE_NAME: 'gw-msk',
      }).tracing,
    ).toEqual({ tracesUrl: 'https://otel.example/base/v1/traces', headers: { authorization: 'Bearer s3cret', 'x-tenant': 'clinic' }, serviceName: 'gw-msk' });
    // A header's value is a credential: never in the error.
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_HEADERS: 'x-key=s3cret%' })).toThrow(/^((?!s3cret).)*$/);
  });

  it('lets tests override values after validation', () => {
    expect(loadConfig({}, { exchangeTokenTtlMs: 50 }).exchangeTokenTtlMs).toBe(50);
  });
});
