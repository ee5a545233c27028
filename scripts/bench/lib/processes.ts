import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { freePort } from '../../../src/db/embedded-postgres.js';

/** Processes of a benchmark run (the service, its baseline, a receiver) and what /proc says about them. */

const CLOCK_TICKS_PER_SECOND = 100;

/** CPU time (user + system) of a process so far, in milliseconds, with its exited children's when asked; 0 once it is gone. */
export async function cpuMs(pid: number, withReapedChildren = false): Promise<number> {
  const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (!stat) return 0;
  // Fields after the command name (which may hold spaces), counted from field 3: utime, stime, cutime, cstime.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]) + (withReapedChildren ? Number(fields[13]) + Number(fields[14]) : 0);
  return (ticks * 1000) / CLOCK_TICKS_PER_SECOND;
}

/** Peak (VmHWM) or current (VmRSS) resident memory of a process, in MiB. */
export async function rssMiB(pid: number, which: 'VmHWM' | 'VmRSS'): Promise<number> {
  const status = await fs.readFile(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${which}:\\s+(\\d+) kB`).exec(status)![1]) / 1024;
}

/**
 * CPU milliseconds of a PostgreSQL so far: the postmaster, its live children (backends, writer, WAL
 * writer, …) and the children it has reaped (backends of closed connections), read afresh.
 */
export async function postgresCpuMs(postmasterPid: number): Promise<number> {
  let total = await cpuMs(postmasterPid, true);
  for (const entry of await fs.readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await fs.readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (parent === postmasterPid) total += await cpuMs(Number(entry), true);
  }
  return total;
}

export interface Child {
  pid: number;
  process: ChildProcess;
  /** What it printed (both streams), for failures. */
  output(): string;
  /** SIGTERM, then SIGKILL after 30 s. */
  stop(): Promise<void>;
}

function track(child: ChildProcess): Child {
  let output = '';
  // BENCH_LOG_DIR keeps every child's whole output, for a run that went wrong.
  const logFile = process.env.BENCH_LOG_DIR ? path.join(process.env.BENCH_LOG_DIR, `child-${child.pid}.log`) : undefined;
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
    if (logFile) void fs.appendFile(logFile, chunk);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    pid: child.pid!,
    process: child,
    output: () => output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** A compiled program of `root` run by node itself, with `nodeOptions` before it. */
function spawnJs(root: string, file: string, args: readonly string[], env: Record<string, string>, nodeOptions: readonly string[] = []): Child {
  const child = spawn(process.execPath, [...nodeOptions, path.join(root, file), ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return track(child);
}

/**
 * The service as it ships (the Dockerfile runs it): compiled by `make build`, which `make bench`
 * runs first. Without a compiled copy newer than every source (an older checkout given as --root,
 * never built; a test run after an edit) the service runs from its sources with tsx, whose loader
 * keeps every module's source map in its heap (some 8 MB more to mark on each full collection).
 */
const COMPILED_MAIN = 'dist/src/main.js';

/** Whether `root`'s dist/ is newer than every file of its src/ and generated/: serve then runs compiled, else from its sources under tsx. */
export function compiledIsCurrent(root: string): boolean {
  const compiled = path.join(root, COMPILED_MAIN);
  if (!existsSync(compiled)) return false;
  const builtAt = statSync(compiled).mtimeMs;
  const newestSource = (dir: string): number =>
    Math.max(
      0,
      ...readdirSync(dir, { withFileTypes: true }).map((entry) =>
        entry.isDirectory() ? newestSource(path.join(dir, entry.name)) : statSync(path.join(dir, entry.name)).mtimeMs,
      ),
    );
  return Math.max(newestSource(path.join(root, 'src')), newestSource(path.join(root, 'generated'))) <= builtAt;
}

/** Node's arguments that run `ehr-gateway` of `root`, as `startServe` runs serve: compiled when current, else from its sources with tsx. */
export function gatewayArgs(root: string): string[] {
  return compiledIsCurrent(root) ? [path.join(root, COMPILED_MAIN)] : ['--import', 'tsx', path.join(root, 'src/main.ts')];
}

/** A TypeScript program of `root` run with tsx (as `make` runs the service), with `nodeOptions` before it. */
export function spawnTs(root: string, file: string, args: readonly string[], env: Record<string, string>, nodeOptions: readonly string[] = []): Child {
  const child = spawn(process.execPath, [...nodeOptions, '--import', 'tsx', path.join(root, file), ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return track(child);
}

export async function waitForOk(url: string, timeoutMs: number, child?: Child): Promise<void> {
  const started = Date.now();
  for (;;) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    if (child && (child.process.exitCode !== null || child.process.signalCode !== null))
      throw new Error(`${url}: the process exited: ${child.output().slice(-2000)}`);
    if (Date.now() - started > timeoutMs) throw new Error(`${url} did not answer 200 within ${timeoutMs} ms: ${child?.output().slice(-2000) ?? ''}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** What the child printed that matches `pattern`, once it has (it fails when the child exits first, or after `timeoutMs`). */
export async function waitForOutput(child: Child, pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray> {
  const started = Date.now();
  for (;;) {
    const match = pattern.exec(child.output());
    if (match) return match;
    if (child.process.exitCode !== null || Date.now() - started > timeoutMs) throw new Error(`no ${pattern} from the process: ${child.output().slice(-2000)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export interface ServiceProcess extends Child {
  publicPort: number;
  internalPort: number;
  /** HEALTH_PORT, as set (a checkout without a liveness listener ignores it). */
  healthPort: number;
  env: Record<string, string>;
}

/** Starts of serve tried at most, each on fresh ports, when the last one found a port taken. */
const START_ATTEMPTS = 3;

interface ServeOptions {
  only?: string;
  nodeOptions?: readonly string[];
  /** The ports of a start, public, internal and health (default: three free ones of loopback). */
  choosePorts?: () => Promise<[number, number, number]>;
}

const freePorts = async (): Promise<[number, number, number]> => [await freePort(), await freePort(), await freePort()];

/**
 * `ehr-gateway serve` (or `serve --only ROLE`) of the checkout at `root`, ready, on free ports of
 * loopback. They are chosen before serve binds them (the bench runs serve at LOG_LEVEL warn, where it
 * does not print the ports it bound), so another process may take one in between: serve then exits
 * saying the port "is already in use" (about one start in 30 on a busy machine), and the start is
 * tried again on other ports.
 */
export async function startServe(root: string, env: Record<string, string>, options: ServeOptions = {}): Promise<ServiceProcess> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await startServeOnce(root, env, options, await (options.choosePorts ?? freePorts)());
    } catch (error) {
      if (attempt >= START_ATTEMPTS || !String((error as Error).message).includes('is already in use')) throw error;
    }
  }
}

async function startServeOnce(
  root: string,
  env: Record<string, string>,
  options: ServeOptions,
  [publicPort, internalPort, healthPort]: [number, number, number],
): Promise<ServiceProcess> {
  // The worker role has no listener: it is ready when it logs that it started (at info level, which it uses only at start and stop).
  const worker = options.only === 'worker';
  const fullEnv = {
    HOST: '127.0.0.1',
    LOG_LEVEL: worker ? 'info' : 'warn',
    ...env,
    PORT: String(publicPort),
    INTERNAL_PORT: String(internalPort),
    HEALTH_PORT: String(healthPort),
  };
  const args = ['serve', ...(options.only ? ['--only', options.only] : [])];
  const child = compiledIsCurrent(root)
    ? spawnJs(root, COMPILED_MAIN, args, fullEnv, options.nodeOptions)
    : spawnTs(root, 'src/main.ts', args, fullEnv, options.nodeOptions);
  try {
    if (!worker) await waitForOk(`http://127.0.0.1:${publicPort}/readyz`, 60_000, child);
    // The message's prefix: since issue 22 the line goes on with both URLs.
    else await waitForOutput(child, /"ehr-gateway started/, 60_000);
  } catch (error) {
    // One that did not start in time is not left running.
    await child.stop();
    throw error;
  }
  return { ...child, publicPort, internalPort, healthPort, env: fullEnv };
}

/** What a report calls the checkout at `root`: git describe, or `unknown`. */
export function describeCommit(root: string): string {
  try {
    return execFileSync('git', ['-C', root, 'describe', '--always', '--dirty', '--abbrev=7'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}
