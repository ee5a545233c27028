import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { spawnTs, startServe, waitForOk, waitForOutput, type Child, type ServiceProcess } from './processes.js';
import { BENCH_ORGANIZATION, newBusinessId } from './database.js';
import type { BenchContext } from './scenario.js';

/** The service, its baseline, a clinic account and a callback receiver, as the scenarios start them. */

export const INTERNAL_USER = 'bench-auth';
export const INTERNAL_PASSWORD = 'bench-auth-password';

export const newDataKey = () => randomBytes(32).toString('hex');

/** The per-clinic and per-address limits off (the bench is one clinic, or one app, on one address). */
const NO_LIMITS = { RATE_LIMIT: '0', BYTE_QUOTA: '0', RPC_RATE_LIMIT: '0' };
/** `--limits`: every request counted in the shared counters as in production, against allowances it never reaches. */
const COUNTED_LIMITS = { RATE_LIMIT: '2000000000', BYTE_QUOTA: '1000gb', RPC_RATE_LIMIT: '2000000000' };
/** The internal failure limit's allowance of serve and of the baseline (INTERNAL_AUTH_MAX_FAILURES): its statements run, and no call waits for room. */
const FAILURE_ALLOWANCE = '1000000';

/** The service's /metrics (its internal listener): the text, and the value of an unlabelled metric (NaN when it has none). */
export async function serviceMetrics(internalPort: number): Promise<{ text: string; value(name: string): number }> {
  const text = await (await fetch(`http://127.0.0.1:${internalPort}/metrics`)).text();
  return { text, value: (name) => Number(new RegExp(`^${name} ([0-9.e+-]+)`, 'm').exec(text)?.[1] ?? Number.NaN) };
}

/** Interface A's version segment of the checkout measured. */
export function rpcVersion(root: string): string {
  return (JSON.parse(fs.readFileSync(path.join(root, 'specs/openrpc.json'), 'utf8')) as { info: { version: string } }).info.version;
}

/**
 * `serve` on the database with the bench's settings: no per-clinic rate limit or byte quota, no
 * per-address call rate or connection cap (the bench is one clinic, or one app, on one address,
 * sending as fast as it can), the internal failure limit's allowance never reached (its statements
 * still run), callbacks allowed to its receiver on loopback, the internal account,
 * logs at warn. With a profile directory, the process writes a CPU profile there when it stops.
 */
export async function startService(
  context: BenchContext,
  databaseUrl: string,
  dataKey: string,
  options: { only?: string; env?: Record<string, string> } = {},
): Promise<ServiceProcess> {
  const service = await startServe(
    context.root,
    {
      DATABASE_URL: databaseUrl,
      DATA_KEY: dataKey,
      INTERNAL_USERS: `${INTERNAL_USER}:${INTERNAL_PASSWORD}`,
      ...(context.limits ? COUNTED_LIMITS : NO_LIMITS),
      MAX_CONNECTIONS_PER_CLIENT: '0',
      INTERNAL_AUTH_MAX_FAILURES: FAILURE_ALLOWANCE,
      CALLBACK_ALLOWED_NETWORKS: '127.0.0.0/8',
      ...options.env,
    },
    { only: options.only, nodeOptions: profileOptions(context) },
  );
  if (context.profileDir) context.log(`serve${options.only ? ` --only ${options.only}` : ''}: pid ${service.pid}`);
  return service;
}

/**
 * `--profile DIR`: a CPU profile of each service and baseline process, named CPU.<date>.<time>.<pid>… (the bench log names the pids);
 * `--node-options` (e.g. --trace-gc, which NODE_OPTIONS refuses) for both too.
 */
function profileOptions(context: BenchContext): string[] {
  return [...(context.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${context.profileDir}`] : []), ...context.nodeOptions];
}

export interface Baseline extends Child {
  port: number;
}

export async function startBaseline(context: BenchContext, databaseUrl: string, dataKey: string): Promise<Baseline> {
  const child = spawnTs(
    context.benchDir,
    'baseline.ts',
    [],
    {
      DATABASE_URL: databaseUrl,
      DATA_KEY: dataKey,
      INTERNAL_USERS: `${INTERNAL_USER}:${INTERNAL_PASSWORD}`,
      INTERNAL_AUTH_MAX_FAILURES: FAILURE_ALLOWANCE,
      PORT: '0',
    },
    profileOptions(context),
  );
  const port = await listeningPort(child, 'baseline');
  if (context.profileDir) context.log(`baseline: pid ${child.pid}`);
  return { ...child, port };
}

/**
 * The port a child bound itself (PORT=0) and printed as "NAME listening on PORT": a port chosen here
 * and bound later by the child could be taken in between by another process of a busy machine.
 */
async function listeningPort(child: Child, name: string): Promise<number> {
  return Number((await waitForOutput(child, new RegExp(`${name} listening on (\\d+)`), 30_000))[1]);
}

export interface BenchClinic {
  businessId: string;
  user: string;
  token: string;
  signingSecret: string;
}

/** A clinic account made by the measured checkout's own `clients add`, calling back to `callbackUrl`. */
export async function addClinic(context: BenchContext, service: ServiceProcess, callbackUrl: string): Promise<BenchClinic> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      '--import',
      'tsx',
      path.join(context.root, 'src/main.ts'),
      'clients',
      'add',
      '--business-id',
      newBusinessId(),
      '--user',
      'mis',
      '--callback-url',
      callbackUrl,
      '--organization',
      BENCH_ORGANIZATION,
    ],
    { cwd: context.root, env: { ...process.env, DATABASE_URL: service.env.DATABASE_URL, DATA_KEY: service.env.DATA_KEY, LOG_LEVEL: 'warn' } },
  );
  const created = JSON.parse(stdout) as BenchClinic;
  return { businessId: created.businessId, user: created.user, token: created.token, signingSecret: created.signingSecret };
}

export function clinicHeaders(clinic: BenchClinic): Record<string, string> {
  return { businessid: clinic.businessId, user: clinic.user, token: clinic.token, 'content-type': 'application/json' };
}

export interface Receiver extends Child {
  url: string;
  configure(secret: string): Promise<void>;
  /** `errors`: callbacks saying "status": "error" (the benches send documents that should pass), the first one in `firstError`. */
  stats(): Promise<{ received: number; badSignatures: number; duplicates: number; errors: number; firstError?: string }>;
  arrivals(): Promise<Array<[string, string, number]>>;
  files(): Promise<Array<[string, string]>>;
}

export async function startReceiver(context: BenchContext): Promise<Receiver> {
  const child = spawnTs(context.benchDir, 'receiver.ts', [], { PORT: '0' });
  const port = await listeningPort(child, 'receiver');
  const url = `http://127.0.0.1:${port}`;
  const get = async (route: string) => (await fetch(`${url}${route}`)).json();
  return {
    ...child,
    url,
    async configure(secret) {
      await fetch(`${url}/configure`, { method: 'POST', body: JSON.stringify({ secret }) });
    },
    stats: () => get('/stats'),
    arrivals: () => get('/arrivals'),
    files: () => get('/files'),
  };
}

export { waitForOk };
