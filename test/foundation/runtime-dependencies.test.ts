import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../support/cli.js';
import { packagesLoadedBy } from '../support/import-trace.js';

/** Packages that production never needs: @open-rpc/server-js's transports and mock data generator. */
const NEVER_IN_THE_SERVICE = ['@open-rpc/server-js', 'node-ipc', 'ws', 'connect', 'cors', 'json-schema-faker'];

describe('runtime dependencies', () => {
  it('loads no transport or mock-data package when the service is imported', async () => {
    const loaded = await packagesLoadedBy(path.join(repoRoot, 'src/service.ts'), repoRoot);
    // The trace itself works: the service's own framework is in it.
    expect(loaded).toEqual(expect.arrayContaining(['express', 'knex', 'pg']));
    expect(loaded.filter((name) => NEVER_IN_THE_SERVICE.includes(name))).toEqual([]);
  });

  it('loads no OpenTelemetry SDK unless tracing is on (only @opentelemetry/api, which prom-client requires)', async () => {
    const sdk = (names: string[]) => names.filter((name) => name.startsWith('@opentelemetry/') && name !== '@opentelemetry/api');
    expect(sdk(await packagesLoadedBy(path.join(repoRoot, 'src/service.ts'), repoRoot))).toEqual([]);
    // The trace sees the SDK where it is loaded: the module startTracing imports when OTEL_EXPORTER_OTLP_ENDPOINT is set.
    expect(sdk(await packagesLoadedBy(path.join(repoRoot, 'src/tracing/otel.ts'), repoRoot))).toEqual(
      expect.arrayContaining(['@opentelemetry/sdk-trace', '@opentelemetry/exporter-trace-otlp-http', '@opentelemetry/context-async-hooks']),
    );
  });
});
