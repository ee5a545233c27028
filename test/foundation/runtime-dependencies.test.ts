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

  // Each role's packages, found by importing the module that brings them in (so the trace is seen to work).
  const ROLE_PACKAGES = [
    { role: 'ehr', module: 'src/ehr/spec.ts', packages: ['@open-rpc/schema-utils-js'] },
    { role: 'emdr', module: 'src/emdr/intake/router.ts', packages: ['openapi-backend', 'ajv', 'yaml'] },
    { role: 'worker', module: 'src/emdr/pipeline/workers.ts', packages: ['undici'] },
    { role: 'worker', module: 'src/emdr/signatures/trust-store.ts', packages: ['@peculiar/asn1-x509'] },
  ];

  it("leaves each role's own packages to the step that starts the role: serve --only X loads no other role's", async () => {
    const service = await packagesLoadedBy(path.join(repoRoot, 'src/service.ts'), repoRoot);
    for (const { role, module, packages } of ROLE_PACKAGES) {
      expect(await packagesLoadedBy(path.join(repoRoot, module), repoRoot), module).toEqual(expect.arrayContaining(packages));
      expect(
        service.filter((name) => packages.includes(name)),
        `the ${role} role's packages, loaded by service.ts itself`,
      ).toEqual([]);
    }
  });

  it('starts the CLI without the database driver, the HTTP framework or any interface: the command that needs them loads them', async () => {
    const loaded = await packagesLoadedBy(path.join(repoRoot, 'src/program.ts'), repoRoot);
    expect(loaded).toContain('commander');
    const heavy = ['knex', 'pg', 'express', ...ROLE_PACKAGES.flatMap((role) => role.packages)];
    expect(loaded.filter((name) => heavy.includes(name))).toEqual([]);
  });
});
