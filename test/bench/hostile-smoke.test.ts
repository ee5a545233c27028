import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostileRun } from '../../scripts/bench/hostile/run.js';
import { outcomeOf, repoRoot } from '../support/cli.js';

/**
 * `make hostile` in smoke mode (phases of 3 s): every scenario puts its abuser beside the honest
 * clinic and the report comes out whole. Latencies are what the full run measures, never judged
 * here; what must hold even in 3 s on a busy machine is judged: beside each abuser the honest
 * clinic's every request was acknowledged and called back, and /healthz (of the public and of the
 * liveness listener) answered every probe.
 */
describe('the hostile-load suite, smoke run', () => {
  let out: string;
  let run: HostileRun;
  let exit: { code: number | null; stderr: string };

  beforeAll(async () => {
    out = await fs.mkdtemp(path.join(os.tmpdir(), 'ehr-gateway-hostile-smoke-'));
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/bench/hostile/run.ts', '--smoke', '--out', out], {
      cwd: repoRoot,
      env: process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    exit = await outcomeOf(child, 400_000);
    if (exit.code === 0) run = JSON.parse(await fs.readFile(path.join(out, 'hostile.json'), 'utf8')) as HostileRun;
  }, 420_000);

  afterAll(async () => {
    await fs.rm(out, { recursive: true, force: true });
  });

  it('runs every scenario', () => {
    expect(exit.code, exit.stderr.slice(-3000)).toBe(0);
    expect(run.scenarios.map((scenario) => scenario.name)).toEqual(['H1', 'M1', 'M2', 'M3', 'M4', 'M5']);
  });

  it('serves the honest clinic beside every abuser: each request acknowledged and called back, /healthz answered', () => {
    for (const scenario of run.scenarios) {
      expect(scenario.alone.requests, scenario.name).toBeGreaterThan(5);
      expect(scenario.abused.failures, scenario.name).toEqual({});
      expect(scenario.abused.acknowledged, scenario.name).toBe(scenario.abused.requests);
      expect(scenario.abused.callbacksMissing, scenario.name).toBe(0);
      expect(scenario.abused.healthzFailures, scenario.name).toBe(0);
      // The liveness listener (HEALTH_PORT) was probed too, and answered every probe.
      expect(scenario.abused.liveness?.failures, scenario.name).toBe(0);
      expect(scenario.abused.liveness?.maxMs, scenario.name).toBeGreaterThan(0);
      expect(scenario.abused.ackP99Ms, scenario.name).toBeGreaterThan(0);
    }
  });

  it('writes the report with a row per scenario', async () => {
    const markdown = await fs.readFile(path.join(out, 'hostile.md'), 'utf8');
    for (const name of ['H1', 'M1', 'M2', 'M3', 'M4', 'M5']) expect(markdown).toMatch(new RegExp(`^\\| ${name} `, 'm'));
    expect(markdown).toContain('first callback p99');
  });
});
