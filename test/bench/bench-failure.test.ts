import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunRecord } from '../../scripts/bench/lib/report.js';
import { outcomeOf, repoRoot, type CliResult } from '../support/cli.js';
import { spawnTsProgram } from '../support/processes.js';

/**
 * `make bench` when a scenario cannot run (here: --root names a checkout whose serve does not
 * start): the other scenarios would still run, the report is written and says so, and the run
 * exits non-zero with a line naming the scenario, rather than a report that silently lacks it.
 */
describe('the benchmark suite, a scenario that cannot run', () => {
  let dir: string;
  let exit: CliResult;

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'ehr-gateway-bench-failure-'));
    const root = path.join(dir, 'checkout');
    await fs.mkdir(path.join(root, 'specs'), { recursive: true });
    await fs.copyFile(path.join(repoRoot, 'specs/openrpc.json'), path.join(root, 'specs/openrpc.json'));
    const child = spawnTsProgram('scripts/bench/run.ts', ['--smoke', '--only', 'register-document', '--root', root, '--out', path.join(dir, 'out')]);
    exit = await outcomeOf(child, 120_000);
  }, 130_000);

  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('exits non-zero with a line naming the scenario', () => {
    expect(exit.code, exit.stderr.slice(-2000)).toBe(1);
    expect(exit.stderr).toMatch(/^bench: FAILED: register-document did not run: /m);
  });

  it('still writes the report, marked incomplete', async () => {
    const run = JSON.parse(await fs.readFile(path.join(dir, 'out/benchmarks.json'), 'utf8')) as RunRecord;
    expect(run.outcomes).toEqual([]);
    expect(run.failures).toEqual([expect.stringMatching(/^register-document did not run: /)]);
    expect(await fs.readFile(path.join(dir, 'out/benchmarks.md'), 'utf8')).toContain('**This run is incomplete**');
  });
});
