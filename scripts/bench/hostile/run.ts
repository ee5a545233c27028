/**
 * `make hostile`: the hostile-load suite of issue 21. Each scenario puts one abusive clinic beside
 * one honest clinic on `ehr-gateway serve` (its own process) and measures the honest clinic's p99
 * acknowledgement and first-callback latency, and /healthz, without the abuser and then with it.
 * Writes hostile.md and hostile.json into --out. Run `tsx scripts/bench/hostile/run.ts --help`.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { commandLine } from '../../lib/command-line.js';
import { startDatabaseServer, type BenchDatabaseServer } from '../lib/database.js';
import { cpuMs, describeCommit, postgresCpuMs, startServe, type ServiceProcess } from '../lib/processes.js';
import { rpcVersion } from '../lib/service.js';
import type { AbuseOrder } from './abuser.js';
import { addClinic, figuresOf, honestClinic, probeHealth, startReceiver, type ClinicHeaders, type PhaseFigures } from './honest.js';

const HELP = `usage: tsx scripts/bench/hostile/run.ts [options]

One abusive clinic beside one honest clinic, per finding of issue 21, against \`ehr-gateway serve\`
as its own process on a fresh database (the embedded PostgreSQL in a temporary directory, or
DATABASE_URL's server). Each scenario measures the honest clinic (RegisterDocument at a steady rate,
a connection each; its receiver answers at once) and /healthz (a probe every 100 ms) for a phase
alone, then for a phase with the abuser running (its own process, from 127.0.0.2), and judges the
honest clinic's p99 acknowledgement and first-callback latency against 2× of the phase alone, no
failed request, and /healthz under 100 ms. Writes hostile.md and hostile.json into --out.

Scenarios (--only, comma-separated; default all that exist):
  H1  bodies of 2 million members (18 MB), of 120,000 (1 MB), of 16 MB of nested [, 8 at a time
  M1  520 keep-alive connections sending GET /healthz every 3 s
  M4  RegisterDocument bodies of 24 MiB, 64 at a time
  M5  unauthenticated interface A calls, 32 connections back to back
  M2  RegisterDocument with 21 signatures × 16 signers of fresh GOST-512 keys, waves of 40 every 5 s
  M3  300 RegisterDocument requests of a clinic whose receiver never answers (15 s timeout)

options:
  --smoke            phases of 3 s and a lighter abuser: checks the suite works (make test runs it)
  --seconds S        seconds per phase (default 20; smoke 3)
  --out DIR          where to write (default docs)
  --root DIR         the checkout whose serve is measured (default this one), e.g. an older commit
  --label TEXT       what to call the measured code (default: git describe of --root)
  --before FILE      an earlier run's hostile.json, shown as "before"
  --from FILE        write the report of a recorded run's hostile.json instead of measuring
  --merge FILE       keep the scenarios of an earlier run's hostile.json that this run did not
                     measure (each keeps its own commit, date and load average), e.g. with --only
  --profile DIR      run serve with node --cpu-prof into DIR (DIR/<scenario>/*.cpuprofile, written
                     when serve stops: both phases; summarise with scripts/bench/profile-summary.ts),
                     and its event loop's stalls (stall-probe.ts) into DIR/<scenario>/stalls.json
                     (\`profile-summary.ts --stalls 10 --probe DIR/<scenario>/stalls.json FILE\`)
  --split           the worker role in a process of its own, as the chart runs it: serve is then
                     \`serve --only emdr\` beside \`serve --only worker\` (serve's CPU counts both)
  -h, --help         this text

example: tsx scripts/bench/hostile/run.ts --only M4 --seconds 20 --out /tmp/hostile`;

interface Scenario {
  name: string;
  finding: string;
  /** The abuse, full and in a smoke run. */
  abuse: { pattern: AbuseOrder['pattern']; concurrency: number; smokeConcurrency: number };
  /** The abusive clinic's receiver never answers (M3); otherwise it answers at once. */
  deadReceiver?: boolean;
  /**
   * The abuse is one burst (M3): the measured phase starts as the abuser says it started, and the
   * burst comes BURST_INTO_PHASE_MS later, so that every run measures the honest clinic through it.
   * (The others abuse until stopped, and are measured once under way.)
   */
  burst?: boolean;
}

/** The scenarios of the review's findings. */
const SCENARIOS: Scenario[] = [
  {
    name: 'H1',
    finding: 'validation of huge and deep bodies: 18 MB of 2M members, 1 MB of 120k, 16 MB of nested [',
    abuse: { pattern: 'h1', concurrency: 8, smokeConcurrency: 2 },
  },
  { name: 'M1', finding: '520 busy keep-alive connections of one client', abuse: { pattern: 'm1', concurrency: 520, smokeConcurrency: 520 } },
  {
    name: 'M2',
    finding: 'waves of 40 requests of 21 signatures × 16 signers with fresh GOST-512 keys, every 5 s',
    abuse: { pattern: 'm2', concurrency: 40, smokeConcurrency: 10 },
  },
  {
    name: 'M3',
    finding: '300 requests of a clinic whose receiver never answers (15 s timeout)',
    abuse: { pattern: 'm3', concurrency: 300, smokeConcurrency: 60 },
    deadReceiver: true,
    burst: true,
  },
  { name: 'M4', finding: '64 concurrent bodies of 24 MiB', abuse: { pattern: 'm4', concurrency: 64, smokeConcurrency: 6 } },
  { name: 'M5', finding: 'a flood of unauthenticated interface A calls', abuse: { pattern: 'm5', concurrency: 32, smokeConcurrency: 8 } },
];

/** The honest clinic's rate, the probe's period, and how long a phase waits for its last callbacks. */
const HONEST_PER_SECOND = 5;
const PROBE_EVERY_MS = 100;
const CALLBACK_WAIT_MS = 30_000;
/** When a burst comes, into the measured phase (at most a quarter of the phase). */
const BURST_INTO_PHASE_MS = 3000;

export interface ScenarioRecord {
  name: string;
  finding: string;
  abuse: string;
  alone: PhaseFigures & { cpu?: PhaseCpu };
  abused: PhaseFigures & { cpu?: PhaseCpu };
  /** Growth of serve's peak RSS while the abuser ran. */
  peakRssGrowthMiB: number;
  /** What the gateway answered the abuser, by status. */
  abuserAnswers: Record<string, number>;
  /** healthzUnder100ms judges the liveness listener's /healthz when the checkout has one (what a liveness probe asks), else the public one. */
  verdict: { ackWithin2x: boolean; callbackWithin2x: boolean; noFailures: boolean; healthzUnder100ms: boolean };
  /** Set on a scenario kept from an earlier run (--merge): that run's commit, date and load average. */
  measured?: { commit: string; date: string; loadAverage: [number, number] };
}

export interface HostileRun {
  date: string;
  commit: string;
  mode: string;
  machine: { cpu: string; cores: number; loadAverage: [number, number] };
  scenarios: ScenarioRecord[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function peakRssMiB(pid: number): Promise<number> {
  return Number(/VmHWM:\s+(\d+) kB/.exec(await fs.readFile(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}

/** The liveness listener's URL, when the measured serve has one (HEALTH_PORT; older checkouts ignore it). */
async function livenessUrl(service: ServiceProcess): Promise<string | undefined> {
  const url = `http://127.0.0.1:${service.healthPort}`;
  try {
    return (await fetch(`${url}/healthz`)).ok ? url : undefined;
  } catch {
    return undefined;
  }
}

/**
 * CPU milliseconds per second of a phase (/proc, 10 ms ticks): serve's (every thread), its
 * PostgreSQL's and the abuser's. Unlike latencies on a shared machine, what the abuse costs in CPU
 * does not change with the load of others.
 */
interface PhaseCpu {
  serveMsPerSecond: number;
  postgresMsPerSecond?: number;
  abuserMsPerSecond?: number;
  /** How late this suite's own event loop ran at most (runs that recorded it). */
  suiteLoopMaxMs?: number;
}

async function cpuSample(service: ServiceProcess, database: BenchDatabaseServer, abuserPid: number | undefined, workerPid: number | undefined) {
  return {
    at: performance.now(),
    serve: (await cpuMs(service.pid)) + (workerPid === undefined ? 0 : await cpuMs(workerPid)),
    postgres: database.postmasterPid === undefined ? undefined : await postgresCpuMs(database.postmasterPid),
    abuser: abuserPid === undefined ? undefined : await cpuMs(abuserPid),
  };
}

function cpuOf(from: Awaited<ReturnType<typeof cpuSample>>, to: Awaited<ReturnType<typeof cpuSample>>): PhaseCpu {
  const seconds = (to.at - from.at) / 1000;
  const rate = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? undefined : Math.round((b - a) / seconds));
  return {
    serveMsPerSecond: rate(from.serve, to.serve)!,
    ...(to.postgres === undefined ? {} : { postgresMsPerSecond: rate(from.postgres, to.postgres) }),
    ...(to.abuser === undefined ? {} : { abuserMsPerSecond: rate(from.abuser, to.abuser) }),
  };
}

/** A phase: the honest clinic and the probes (public /healthz, and the liveness listener's when given) for `seconds`, then its figures. */
async function phase(
  service: ServiceProcess,
  clinic: ClinicHeaders,
  receiver: Awaited<ReturnType<typeof startReceiver>>,
  seconds: number,
  liveness: string | undefined,
  database: BenchDatabaseServer,
  workerPid: number | undefined,
  abuserPid?: number,
): Promise<PhaseFigures & { cpu: PhaseCpu }> {
  const url = `http://127.0.0.1:${service.publicPort}`;
  // This process's own lateness: it times the honest clinic and the probes and holds both receivers, so a late loop here reads as a slow service.
  const ownLoop = monitorEventLoopDelay({ resolution: 10 });
  ownLoop.enable();
  const cpuFrom = await cpuSample(service, database, abuserPid, workerPid);
  const probe = probeHealth(url, PROBE_EVERY_MS);
  const livenessProbe = liveness === undefined ? undefined : probeHealth(liveness, PROBE_EVERY_MS);
  const honest = honestClinic(url, clinic, HONEST_PER_SECOND);
  await sleep(seconds * 1000);
  const sent = await honest.stop();
  const cpu = cpuOf(cpuFrom, await cpuSample(service, database, abuserPid, workerPid));
  const health = await probe.stop();
  ownLoop.disable();
  const suiteLoopMaxMs = Math.round(ownLoop.max / 1e5) / 10;
  return { ...(await figuresOf(sent, receiver, health, CALLBACK_WAIT_MS, await livenessProbe?.stop())), cpu: { ...cpu, suiteLoopMaxMs } };
}

/** serve's node options for --profile: a CPU profile of each thread, and the stall probe preloaded. */
function profiling(profileDir: string | undefined): string[] {
  if (!profileDir) return [];
  return ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, '--import', path.join(import.meta.dirname, 'stall-probe.ts')];
}

function verdict(alone: PhaseFigures, abused: PhaseFigures): ScenarioRecord['verdict'] {
  const within = (base: number | undefined, value: number | undefined) => base !== undefined && value !== undefined && value <= 2 * base;
  return {
    ackWithin2x: within(alone.ackP99Ms, abused.ackP99Ms),
    callbackWithin2x: within(alone.firstCallbackP99Ms, abused.firstCallbackP99Ms) && abused.callbacksMissing === 0,
    noFailures: abused.acknowledged === abused.requests,
    healthzUnder100ms: abused.liveness
      ? abused.liveness.failures === 0 && abused.liveness.maxMs !== undefined && abused.liveness.maxMs <= 100
      : abused.healthzFailures === 0 && abused.healthzMaxMs !== undefined && abused.healthzMaxMs <= 100,
  };
}

async function runScenario(
  scenario: Scenario,
  options: { root: string; database: BenchDatabaseServer; seconds: number; smoke: boolean; split: boolean; profileDir?: string; log: (text: string) => void },
): Promise<ScenarioRecord> {
  const key = randomBytes(32).toString('hex');
  const env = {
    DATABASE_URL: await options.database.freshDatabase(`hostile_${scenario.name.toLowerCase()}`),
    // Both names of the data key: older checkouts read USER_SIGN_KEY.
    DATA_KEY: key,
    USER_SIGN_KEY: key,
    // The receivers are on loopback: allowed for callbacks (a checkout without an egress policy ignores it).
    CALLBACK_ALLOWED_NETWORKS: '127.0.0.0/8',
  };
  const honestReceiver = await startReceiver();
  const abuserReceiver = await startReceiver({ hang: scenario.deadReceiver === true });
  const scenarioProfile = options.profileDir && path.join(options.profileDir, scenario.name);
  if (scenarioProfile) await fs.mkdir(scenarioProfile, { recursive: true });
  // --split: the workers first, as the chart rolls them out; the API process then wakes them by NOTIFY.
  const worker = options.split ? await startServe(options.root, env, { only: 'worker' }) : undefined;
  const service = await startServe(options.root, scenarioProfile ? { ...env, STALL_PROBE_OUT: path.join(scenarioProfile, 'stalls.json') } : env, {
    nodeOptions: profiling(scenarioProfile),
    ...(worker ? { only: 'emdr' } : {}),
  }).catch(async (error: unknown) => {
    await worker?.stop();
    throw error;
  });
  if (scenarioProfile) options.log(`${scenario.name}: serve is pid ${service.pid}`);
  let abuser: ReturnType<typeof spawn> | undefined;
  try {
    const honest = await addClinic(options.root, env, honestReceiver.url);
    const abusive = await addClinic(options.root, env, abuserReceiver.url);
    const liveness = await livenessUrl(service);
    // Warm up: the first requests pay for connections and prepared statements.
    await phase(service, honest, honestReceiver, Math.min(2, options.seconds), liveness, options.database, worker?.pid);
    options.log(`${scenario.name}: the honest clinic alone`);
    const alone = await phase(service, honest, honestReceiver, options.seconds, liveness, options.database, worker?.pid);
    const concurrency = options.smoke ? scenario.abuse.smokeConcurrency : scenario.abuse.concurrency;
    const startAfterMs = scenario.burst ? Math.min(BURST_INTO_PHASE_MS, (options.seconds * 1000) / 4) : 0;
    const order: AbuseOrder = {
      pattern: scenario.abuse.pattern,
      port: service.publicPort,
      clinic: abusive,
      concurrency,
      rpcVersion: rpcVersion(options.root),
      startAfterMs,
    };
    await fs.writeFile(`/proc/${service.pid}/clear_refs`, '5');
    const rssBefore = await peakRssMiB(service.pid);
    abuser = spawn(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'abuser.ts'), JSON.stringify(order)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    abuser.stderr!.on('data', (chunk: Buffer) => options.log(`${scenario.name} abuser: ${chunk.toString().trim().slice(0, 300)}`));
    let abuserOutput = '';
    abuser.stdout!.on('data', (chunk: Buffer) => (abuserOutput += chunk.toString()));
    await new Promise<void>((resolve) => abuser!.stdout!.once('data', () => resolve()));
    // The abuse under way before the honest clinic is measured beside it; a burst, within the phase.
    if (!scenario.burst) await sleep(1000);
    options.log(
      `${scenario.name}: the honest clinic beside the abuser (${scenario.abuse.pattern}, ${concurrency}${startAfterMs ? `, ${startAfterMs / 1000} s into the phase` : ''})`,
    );
    const abused = await phase(service, honest, honestReceiver, options.seconds, liveness, options.database, worker?.pid, abuser.pid);
    const peakRssGrowthMiB = Math.round(((await peakRssMiB(service.pid)) - rssBefore) * 10) / 10;
    const exited = new Promise((resolve) => abuser!.once('exit', resolve));
    abuser.kill('SIGTERM');
    await exited;
    const abuserAnswers = (JSON.parse(abuserOutput.trim().split('\n').at(-1) ?? '{}') as { answers?: Record<string, number> }).answers ?? {};
    return {
      name: scenario.name,
      finding: scenario.finding,
      abuse: `${scenario.abuse.pattern} × ${concurrency}`,
      alone,
      abused,
      peakRssGrowthMiB,
      abuserAnswers,
      verdict: verdict(alone, abused),
    };
  } finally {
    abuser?.kill('SIGTERM');
    if (abuser && abuser.exitCode === null) await new Promise((resolve) => abuser!.once('exit', resolve));
    // A dead receiver's connections end first, so that serve's stop need not wait for their timeouts.
    await abuserReceiver.close();
    await service.stop();
    await worker?.stop();
    await honestReceiver.close();
  }
}

const ms = (value: number | undefined) => (value === undefined ? '—' : `${value.toLocaleString('en', { maximumFractionDigits: value >= 100 ? 0 : 1 })} ms`);
const ratio = (base: number | undefined, value: number | undefined) =>
  base === undefined || value === undefined || base === 0 ? '' : ` (${(value / base).toFixed(1)}×)`;
const failuresText = (figures: PhaseFigures) => {
  const entries = Object.entries(figures.failures);
  return entries.length === 0 ? '0' : entries.map(([status, count]) => `${count} × ${status}`).join(', ');
};

/** The run with the scenarios of `earlier` it did not measure, each stamped with where it was measured; in the order of SCENARIOS. */
function merged(run: HostileRun, earlier: HostileRun): HostileRun {
  const kept = earlier.scenarios
    .filter((record) => !run.scenarios.some((measured) => measured.name === record.name))
    .map((record) => ({ ...record, measured: record.measured ?? { commit: earlier.commit, date: earlier.date, loadAverage: earlier.machine.loadAverage } }));
  const order = (record: ScenarioRecord) => SCENARIOS.findIndex((scenario) => scenario.name === record.name);
  return { ...run, scenarios: [...run.scenarios, ...kept].sort((a, b) => order(a) - order(b)) };
}

/** The liveness listener's /healthz max, alone → beside the abuser; — for a checkout without one. */
function livenessCell(alone: PhaseFigures, abused: PhaseFigures): string {
  if (!abused.liveness) return '—';
  return `${ms(alone.liveness?.maxMs)} → ${ms(abused.liveness.maxMs)}${abused.liveness.failures > 0 ? `, ${abused.liveness.failures} failed` : ''}`;
}

function tableRows(run: HostileRun, label: string): string[] {
  return run.scenarios.map((record) => {
    const rowLabel = record.measured ? (label.startsWith('before') ? `before (${record.measured.commit})` : `(${record.measured.commit})`) : label;
    const { alone, abused, verdict: judged } = record;
    const met = judged.ackWithin2x && judged.callbackWithin2x && judged.noFailures && judged.healthzUnder100ms;
    return `| ${record.name} ${rowLabel} | ${ms(alone.ackP99Ms)} → ${ms(abused.ackP99Ms)}${ratio(alone.ackP99Ms, abused.ackP99Ms)} | ${ms(alone.firstCallbackP99Ms)} → ${ms(abused.firstCallbackP99Ms)}${ratio(alone.firstCallbackP99Ms, abused.firstCallbackP99Ms)}${abused.callbacksMissing > 0 ? `, ${abused.callbacksMissing} missing` : ''} | ${abused.requests - abused.acknowledged} of ${abused.requests} (${failuresText(abused)}) | ${ms(alone.healthzMaxMs)} → ${ms(abused.healthzMaxMs)}${abused.healthzFailures > 0 ? `, ${abused.healthzFailures} failed` : ''} | ${livenessCell(alone, abused)} | ${record.peakRssGrowthMiB} MiB | ${met ? '**met**' : '**missed**'} |`;
  });
}

/** CPU per second of the phases, alone → beside the abuser (runs that recorded it). */
function cpuText(record: ScenarioRecord): string {
  const { alone, abused } = record;
  if (!alone.cpu || !abused.cpu) return '';
  const pair = (a: number | undefined, b: number | undefined) => `${a ?? '—'} → ${b ?? '—'}`;
  const suiteLoop =
    abused.cpu.suiteLoopMaxMs === undefined
      ? ''
      : ` This suite's own event loop (the prober, the honest clinic, the receivers) at most ${pair(alone.cpu.suiteLoopMaxMs, abused.cpu.suiteLoopMaxMs)} ms late.`;
  return ` CPU ms a second, alone → beside: serve ${pair(alone.cpu.serveMsPerSecond, abused.cpu.serveMsPerSecond)}, PostgreSQL ${pair(alone.cpu.postgresMsPerSecond, abused.cpu.postgresMsPerSecond)}; the abuser ${abused.cpu.abuserMsPerSecond ?? '—'}.${suiteLoop}`;
}

function markdown(run: HostileRun, before: HostileRun | undefined): string {
  const lines = [
    '# Hostile load: one abusive clinic beside an honest one',
    '',
    `Written by \`make hostile\` (\`scripts/bench/hostile/run.ts\`), ${run.date}, ${run.commit}, ${run.mode}; ${run.machine.cores} cores (${run.machine.cpu}), load average ${run.machine.loadAverage[0]} at the start and ${run.machine.loadAverage[1]} at the end.`,
    '',
    `Each scenario: \`serve\` as its own process on a fresh database; the honest clinic sends RegisterDocument at ${HONEST_PER_SECOND} a second, a new connection each, and its receiver answers at once; /healthz is probed every ${PROBE_EVERY_MS} ms from another address. A phase without the abuser, then one with it (its own process, from 127.0.0.2), measured once the abuse is under way, or, for a one-off burst (M3), from ${BURST_INTO_PHASE_MS / 1000} s before it. Latencies are the honest clinic's p99, alone → beside the abuser; the target: both within 2× of the phase alone, no failed request, /healthz under 100 ms. /healthz is probed on the public listener and, when the checkout has one, on the liveness listener (HEALTH_PORT: answered by a thread of its own from the event loop's heartbeat, what an orchestrator's liveness probe asks; docs/operations.md): the target judges the liveness listener where there is one, the public listener otherwise.`,
    '',
    ...(before
      ? [
          `"before" rows: ${before.date}, ${before.commit}, ${before.mode}, load average ${before.machine.loadAverage[0]} at the start and ${before.machine.loadAverage[1]} at the end.`,
          '',
        ]
      : []),
    'On a machine shared with other work (the load averages above), the phases alone vary from run to run by as much as the ratios they are compared with; read the ratios with the load, and the failures, /healthz and memory as they are.',
    '',
    '| scenario | acknowledgement p99 | first callback p99 | honest requests failed beside the abuser | /healthz max (public listener) | /healthz max (liveness listener, HEALTH_PORT) | serve peak RSS growth | target |',
    '|---|---|---|---|---|---|---|---|',
    ...tableRows(run, run.commit === before?.commit ? '' : `(${run.commit})`),
    ...(before ? tableRows(before, `before (${before.commit})`) : []),
    '',
    ...[run, ...(before ? [before] : [])].flatMap((shown) =>
      shown.scenarios
        .filter((record) => record.measured)
        .map(
          (record) =>
            `- ${record.name}${shown === before ? ' before' : ''} (${record.measured!.commit}) comes from an earlier run: ${record.measured!.date}, load average ${record.measured!.loadAverage[0]} at its start and ${record.measured!.loadAverage[1]} at its end.`,
        ),
    ),
    '',
    ...run.scenarios.map(
      (record) =>
        `- **${record.name}**: ${record.finding} (abuser \`${record.abuse}\`; the gateway answered it ${
          Object.entries(record.abuserAnswers ?? {})
            .map(([status, count]) => `${count} × ${status}`)
            .join(', ') || 'nothing'
        }).${cpuText(record)}`,
    ),
    '',
  ];
  return `${lines.join('\n')}`;
}

async function main(): Promise<void> {
  const { values } = commandLine('hostile', HELP, {
    options: {
      smoke: { type: 'boolean' },
      seconds: { type: 'string' },
      out: { type: 'string' },
      root: { type: 'string' },
      label: { type: 'string' },
      before: { type: 'string' },
      only: { type: 'string' },
      from: { type: 'string' },
      merge: { type: 'string' },
      profile: { type: 'string' },
      split: { type: 'boolean' },
    },
  });
  const repo = path.resolve(import.meta.dirname, '../../..');
  const root = path.resolve(values.root ?? repo);
  const smoke = values.smoke ?? false;
  const seconds = values.seconds === undefined ? (smoke ? 3 : 20) : Number(values.seconds);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new Error('--seconds takes a positive number');
  const chosen = values.only ? SCENARIOS.filter((scenario) => values.only!.split(',').includes(scenario.name)) : SCENARIOS;
  const out = path.resolve(values.out ?? path.join(repo, 'docs'));
  const before = values.before && existsSync(values.before) ? (JSON.parse(await fs.readFile(values.before, 'utf8')) as HostileRun) : undefined;
  const earlier = values.merge ? (JSON.parse(await fs.readFile(values.merge, 'utf8')) as HostileRun) : undefined;
  if (values.from) {
    const recorded = JSON.parse(await fs.readFile(values.from, 'utf8')) as HostileRun;
    const report = earlier ? merged(recorded, earlier) : recorded;
    await fs.mkdir(out, { recursive: true });
    if (earlier) await fs.writeFile(path.join(out, 'hostile.json'), `${JSON.stringify(report, null, 2)}\n`);
    await fs.writeFile(path.join(out, 'hostile.md'), markdown(report, before));
    return;
  }
  const started = Date.now();
  const log = (text: string) => console.error(`hostile ${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s  ${text}`);
  const loadAtStart = +os.loadavg()[0]!.toFixed(2);
  const database = await startDatabaseServer();
  const scenarios: ScenarioRecord[] = [];
  try {
    const profileDir = values.profile === undefined ? undefined : path.resolve(values.profile);
    for (const scenario of chosen)
      scenarios.push(await runScenario(scenario, { root, database, seconds, smoke, split: values.split === true, profileDir, log }));
  } finally {
    await database.stop();
  }
  const measuredRun: HostileRun = {
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    commit: values.label ?? describeCommit(root),
    mode: `${smoke ? 'smoke run' : `phases of ${seconds} s`}${values.split ? ', the worker role in a process of its own' : ''}`,
    machine: { cpu: os.cpus()[0]?.model ?? 'unknown', cores: os.cpus().length, loadAverage: [loadAtStart, +os.loadavg()[0]!.toFixed(2)] },
    scenarios,
  };
  const run = earlier ? merged(measuredRun, earlier) : measuredRun;
  await fs.mkdir(out, { recursive: true });
  await fs.writeFile(path.join(out, 'hostile.json'), `${JSON.stringify(run, null, 2)}\n`);
  await fs.writeFile(path.join(out, 'hostile.md'), markdown(run, before));
  log(`wrote ${path.join(out, 'hostile.md')}`);
}

main().catch((error: unknown) => {
  console.error(`hostile: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exit(1);
});
