import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { openApiSpecPath } from '../../src/config/paths.js';
import { startCallbackReceiver, type CallbackReceiver } from '../support/callback-receiver.js';
import { addClinic } from '../support/emdr.js';
import { runVenvProgram } from '../support/python.js';
import { startTestService, type TestService } from '../support/service.js';

/** `make contract` sets CONTRACT_EXAMPLES for a long run with a fresh seed; make test runs a short, reproducible one. */
const longRun = process.env.CONTRACT_EXAMPLES !== undefined;
const maxExamples = longRun ? Number(process.env.CONTRACT_EXAMPLES) : 40;

/**
 * Schemathesis with all its default checks against the live interface B, as a valid clinic
 * account: zero failures means every response it provoked is one specs/openapi.yaml documents.
 */
describe('Schemathesis against the live interface B', () => {
  let service: TestService;
  let receiver: CallbackReceiver;
  let clinic: CreatedClinicAccount;
  let workDir: string;

  beforeAll(async () => {
    workDir = await fs.mkdtemp(path.join(os.tmpdir(), 'schemathesis-'));
    receiver = await startCallbackReceiver();
    // Schemathesis sends thousands of requests a minute as one clinic account: no rate limit.
    service = await startTestService({ RATE_LIMIT: '0' });
    clinic = await addClinic(service, receiver.url);
    receiver.signingSecret = clinic.signingSecret;
  });

  afterAll(async () => {
    await service?.stop();
    await receiver?.close();
    if (workDir) await fs.rm(workDir, { recursive: true, force: true });
  });

  it(`finds no failure in ${maxExamples} examples per operation`, { timeout: longRun ? 3_600_000 : 620_000 }, async () => {
    const args = [
      'run',
      openApiSpecPath,
      '--url',
      service.publicUrl,
      '-H',
      `businessId:${clinic.businessId}`,
      '-H',
      `user:${clinic.user}`,
      '-H',
      `token:${clinic.token}`,
      '--max-examples',
      String(maxExamples),
      ...(longRun ? [] : ['--seed', '1']),
    ];
    // Its own working directory: Schemathesis keeps a .hypothesis database there.
    const result = await runVenvProgram('schemathesis', args, { cwd: workDir, env: { NO_COLOR: '1' }, timeoutMs: longRun ? 3_500_000 : 600_000 });
    const output = result.stdout + result.stderr;
    process.stdout.write(`schemathesis: ${output.match(/^\s*\d+ generated, .*$/m)?.[0]?.trim() ?? 'no summary'}\n`);
    expect(output).not.toMatch(/Failures:/);
    // Every operation of the spec was tested (a new one is counted without touching this test).
    expect(output).toMatch(new RegExp(`Tested: ${await operationCount()}\\b`));
    expect(result.code, output.slice(-4000)).toBe(0);
  });
});

/** The operations of specs/openapi.yaml: each method of each path. */
async function operationCount(): Promise<number> {
  const spec = parseYaml(await fs.readFile(openApiSpecPath, 'utf8')) as { paths: Record<string, Record<string, unknown>> };
  const methods = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);
  return Object.values(spec.paths).reduce((count, item) => count + Object.keys(item).filter((key) => methods.has(key)).length, 0);
}
