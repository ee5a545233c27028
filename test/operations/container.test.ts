import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { CONFIG_VARIABLES } from '../../src/config/config.js';
import { ROLES } from '../../src/service.js';
import { repoRoot, runCli } from '../support/cli.js';

/** The Dockerfile and compose.yaml cannot be built here: what they name must exist (hadolint lints the Dockerfile in make test). */
describe('Dockerfile and compose.yaml', () => {
  const compose = parseYaml(fs.readFileSync(path.join(repoRoot, 'compose.yaml'), 'utf8'), { merge: true }) as { services: Record<string, { command?: string[]; environment?: Record<string, string> }> };
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
