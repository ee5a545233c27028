import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

export const repoRoot = path.resolve(import.meta.dirname, '../..');
const entry = path.join(repoRoot, 'src/main.ts');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The ehr-gateway binary as a user runs it (from source, one process, no npx wrapper). */
export function spawnCli(args: readonly string[], env: Record<string, string> = {}): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', entry, ...args], {
    cwd: repoRoot,
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

export async function runCli(args: readonly string[], env: Record<string, string> = {}, timeoutMs = 60_000): Promise<CliResult> {
  return outcomeOf(spawnCli(args, env), timeoutMs);
}

/** Waits for a piped child to close (SIGKILL after timeoutMs) and returns its exit code and output. */
export async function outcomeOf(child: ChildProcess, timeoutMs: number): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.on('close', (exitCode) => resolve(exitCode)));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

/** Polls url until it answers 200, or fails after timeoutMs. */
export async function waitForOk(url: string, timeoutMs = 30_000): Promise<number> {
  const started = Date.now();
  for (;;) {
    try {
      const response = await fetch(url);
      if (response.ok) return Date.now() - started;
    } catch {
      // not listening yet
    }
    if (Date.now() - started > timeoutMs) throw new Error(`${url} did not answer 200 within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

export async function exitOf(child: ChildProcess, timeoutMs = 30_000): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('process did not exit in time')), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}
