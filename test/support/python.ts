import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { outcomeOf, repoRoot, type CliResult } from './cli.js';

/** A program of the virtualenv `make clients` creates (.venv), run to completion. */
export async function runVenvProgram(
  program: string,
  args: readonly string[],
  options: { cwd: string; env: Record<string, string>; timeoutMs: number },
): Promise<CliResult> {
  const executable = path.join(repoRoot, '.venv/bin', program);
  if (!fs.existsSync(executable)) throw new Error(`${executable} is missing: run \`make clients\` (make test does)`);
  const child = spawn(executable, args, { cwd: options.cwd, env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  return outcomeOf(child, options.timeoutMs);
}
