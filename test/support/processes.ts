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

/** serve's start line: its JSON log line "ehr-gateway started …", written once its listeners accept connections. */
const SERVE_START_LINE = /^(.*"msg":"ehr-gateway started.*)\n/m;

/**
 * Resolves with the first match of `pattern` in what `child` prints (stdout and stderr, collected from
 * this call on into `output()`): how a test learns the port a child bound itself. Fails with the end
 * of that output when the child exits first, or after `timeoutMs`; stopping the child is the caller's
 * (it may be a process group).
 */
export async function outputMatching(
  name: string,
  child: ChildProcess,
  pattern: RegExp,
  timeoutMs: number,
): Promise<{ match: RegExpExecArray; output: () => string }> {
  let output = '';
  let found = false;
  const said = () => `${name} said: ${output.slice(-4000)}`;
  const match = await new Promise<RegExpExecArray>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name}: no ${pattern} within ${timeoutMs} ms; ${said()}`)), timeoutMs);
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      if (found) return;
      const match = pattern.exec(output);
      if (!match) return;
      found = true;
      clearTimeout(timer);
      resolve(match);
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    const exited = (code: number | null, signal: NodeJS.Signals | null) => {
      if (found) return;
      // Its last words may still be in the pipes: reported once they close (5 s at most, when a process it started holds them).
      const report = () => {
        clearTimeout(timer);
        reject(new Error(`${name} exited (${signal ?? code}) before it printed ${pattern}; ${said()}`));
      };
      const closing = setTimeout(report, 5_000);
      child.once('close', () => {
        clearTimeout(closing);
        report();
      });
    };
    if (child.exitCode !== null || child.signalCode !== null) exited(child.exitCode, child.signalCode);
    else child.once('exit', exited);
  });
  return { match, output: () => output };
}

/**
 * Waits for `child`, an `ehr-gateway serve` or a process that runs one (`make run`), to write serve's
 * start line, and reads the URLs of the ports it bound from it. Fails with what it said when it does
 * not start; stopping it then is the caller's. `env`: what it runs with, for the ServeProcess.
 */
export async function serveStarted(
  name: string,
  child: ChildProcess,
  { env = {}, timeoutMs = START_TIMEOUT_MS }: { env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<ServeProcess> {
  const { match, output } = await outputMatching(name, child, SERVE_START_LINE, timeoutMs);
  const started = JSON.parse(match[1]!) as { publicUrl?: string; internalUrl: string };
  return {
    name,
    child,
    env,
    publicUrl: started.publicUrl ?? '',
    internalUrl: started.internalUrl,
    output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exitOf(child, 60_000);
    },
  };
}

/**
 * `ehr-gateway serve` (ARGS) as its own process, named `name` in every failure: on ports the OS
 * picks when it binds them (PORT=0, so no port is taken between choosing and binding), read from its
 * start line, which it writes once both listeners accept connections. LOG_LEVEL is info, for that line.
 */
export async function spawnServe(
  name: string,
  args: readonly string[],
  env: Record<string, string>,
  options: { startTimeoutMs?: number } = {},
): Promise<ServeProcess> {
  const fullEnv = { HOST: '127.0.0.1', ...LOOPBACK_CALLBACKS, ...env, PORT: '0', INTERNAL_PORT: '0', LOG_LEVEL: 'info' };
  const child = spawnCli(args, fullEnv);
  try {
    return await serveStarted(name, child, { env: fullEnv, timeoutMs: options.startTimeoutMs });
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
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
