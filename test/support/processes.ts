import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { exitOf, repoRoot, spawnCli } from './cli.js';
import { createTestDatabase } from './database.js';
import { LOOPBACK_CALLBACKS } from './service.js';

export interface ServeProcess {
  /** What the test calls it in its messages (`serve`, `worker-1`, …). */
  name: string;
  child: ChildProcess;
  env: Record<string, string>;
  /** The public listener, when the roles have one (undefined for `--only worker`). */
  publicUrl: string;
  internalUrl: string;
  output(): string;
  stop(): Promise<void>;
}

/** How long a `serve` may take to start on a busy machine (migrations, the worker threads). */
const START_TIMEOUT_MS = 120_000;

/**
 * `ehr-gateway serve` (ARGS) as its own process, named `name` in every failure: on ports the OS
 * picks when it binds them (PORT=0, so no port is taken between choosing and binding), read from its
 * start line, which it writes once both listeners accept connections. LOG_LEVEL is info, for that line.
 */
export async function spawnServe(name: string, args: readonly string[], env: Record<string, string>): Promise<ServeProcess> {
  const fullEnv = { HOST: '127.0.0.1', ...LOOPBACK_CALLBACKS, ...env, PORT: '0', INTERNAL_PORT: '0', LOG_LEVEL: 'info' };
  const child = spawnCli(args, fullEnv);
  let output = '';
  let started: { publicUrl?: string; internalUrl: string } | undefined;
  const startLine = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      if (started) return;
      const line = output.split('\n').find((candidate) => candidate.includes('"msg":"ehr-gateway started'));
      if (!line) return;
      started = JSON.parse(line) as { publicUrl?: string; internalUrl: string };
      clearTimeout(timer);
      resolve();
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${signal ?? code}) before it started`));
    });
  });
  await startLine.catch((error: Error) => {
    child.kill('SIGKILL');
    throw new Error(`${error.message}; ${name} said: ${output.slice(-4000)}`);
  });
  return {
    name,
    child,
    env: fullEnv,
    publicUrl: started!.publicUrl ?? '',
    internalUrl: started!.internalUrl,
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exitOf(child, 60_000);
    },
  };
}

/** `ehr-gateway serve` as its own process, on a fresh test database and a fresh data key. */
export async function startServeProcess(extraEnv: Record<string, string> = {}, args: string[] = ['serve']): Promise<ServeProcess> {
  return spawnServe('serve', args, { DATABASE_URL: await createTestDatabase(), DATA_KEY: randomBytes(32).toString('hex'), ...extraEnv });
}

/**
 * Wraps `fetch` so that a failure to connect names the process behind the URL, how it is (running
 * or exited), and the end of what it said: "fetch failed" alone does not say who refused.
 */
export async function fetchFrom(process: ServeProcess, url: string, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (error) {
    const state =
      process.child.exitCode !== null || process.child.signalCode !== null ? `exited (${process.child.signalCode ?? process.child.exitCode})` : 'running';
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
    throw new Error(`${process.name} (${state}) at ${url}: ${cause}; it said: ${process.output().slice(-3000)}`);
  }
}

/** A TypeScript program of the repository (an example) as its own process. */
export function spawnTsProgram(file: string, args: readonly string[], env: Record<string, string> = {}): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', path.join(repoRoot, file), ...args], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}
