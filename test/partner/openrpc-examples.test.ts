import fs from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openRpcSpecPath } from '../../src/config/paths.js';
import { exitOf, runCli } from '../support/cli.js';
import { spawnTsProgram } from '../support/processes.js';
import { startTestService, type TestService } from '../support/service.js';

/** open-rpc-test-coverage (console reporter) runs every OpenRPC example against the live interface A. */
describe('the OpenRPC examples against the live interface A', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ INTERNAL_USERS: 'demo-auth:demo-auth-password' }, ['ehr']);
    expect((await runCli(['seed-demo', '--force'], service.env)).code).toBe(0);
  });

  afterAll(async () => {
    await service?.stop();
  });

  it('all pass, every example of every method run', async () => {
    const coverage = spawnTsProgram('scripts/rpc-example-coverage.ts', ['--public-url', service.publicUrl, '--internal-url', service.internalUrl]);
    let output = '';
    coverage.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    coverage.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await exitOf(coverage, 60_000);
    const plain = output.replace(/\u001b\[[0-9;]*m/g, '');
    const document = JSON.parse(await fs.readFile(openRpcSpecPath, 'utf8')) as { methods: Array<{ examples: unknown[] }> };
    const examples = document.methods.reduce((count, method) => count + method.examples.length, 0);
    expect(plain).toContain(`Success:  ${examples}`);
    expect(plain).toContain('Errors:  0');
    expect(code).toBe(0);
  });
});
