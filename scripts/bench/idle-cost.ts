/**
 * What the pipeline's processes cost per second rather than per document (issue 24, item 4): the
 * intake (`serve --only emdr`) and the workers (`serve --only worker`) as `make bench`'s pipeline
 * scenario starts them, warmed up with a few documents, then
 *   1. idle for --idle-seconds: CPU per second of each process and of each of its threads (main loop,
 *      libuv pool, V8 platform workers, worker_threads), their wake-ups (context switches), and the
 *      database's transactions per second;
 *   2. GOST-signed 10 KiB documents at --rate a second for --steady-seconds, until both callbacks of
 *      each arrived: CPU per document of each process, and the same split by thread.
 * CPU time from /proc (user + system), so a busy machine changes little of it.
 *
 *   node --import tsx scripts/bench/idle-cost.ts [--idle-seconds 30] [--steady-seconds 30] [--rate 10]
 *        [--warm-up N] [--root DIR] [--profile DIR (node --cpu-prof of both processes)] [--json FILE]
 *        [--perf DIR: `perf record` (CPU-clock samples, call graphs) of both processes in each phase,
 *         DIR/idle.data and DIR/steady.data; node runs with --perf-basic-prof for JavaScript's names]
 *
 * Hold the bench lock while it runs (docs/benchmarks.md: one measurement at a time).
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { commandLine } from '../lib/command-line.js';
import { startDatabaseServer, withClient } from './lib/database.js';
import { registerDocument, signedDocument, xmlOfSize } from './lib/documents.js';
import { drain } from './lib/drain.js';
import { cpuMs, postgresCpuMs } from './lib/processes.js';
import type { BenchContext } from './lib/scenario.js';
import { addClinic, newDataKey, startReceiver, startService } from './lib/service.js';
import { callbacksArrived } from './scenarios/pipeline.js';

const HELP = `usage: tsx scripts/bench/idle-cost.ts [options]

What the pipeline's processes (serve --only emdr, serve --only worker) cost per second when idle, and
per document at a steady rate: CPU of each process and thread, wake-ups, database transactions.
Hold the bench lock while it runs.

options:
  --idle-seconds S    seconds idle (default 30)
  --steady-seconds S  seconds of GOST-signed 10 KiB documents at --rate (default 30)
  --rate N            documents a second in the steady phase (default 10)
  --warm-up N         documents sent first, 16 at a time, not measured (default 20; make bench's
                      steady row follows its full-load rounds, so its code is warm: 3000 is alike)
  --root DIR          the checkout whose serve is measured (default this one)
  --profile DIR       node --cpu-prof of both processes into DIR
  --json FILE         the figures as JSON into FILE too
  --perf DIR          perf record of both processes in each phase (DIR/idle.data, DIR/steady.data)
  -h, --help          this text

example: tsx scripts/bench/idle-cost.ts --idle-seconds 10 --steady-seconds 10`;

const CLOCK_TICKS_PER_SECOND = 100;

/** Per thread of a process: its name, CPU ms and context switches (each a wake-up after it slept, or a preemption). */
type Threads = Map<string, { name: string; cpuMs: number; switches: number }>;

async function threadsOf(pid: number): Promise<Threads> {
  const threads: Threads = new Map();
  for (const tid of await fs.readdir(`/proc/${pid}/task`).catch(() => [] as string[])) {
    const stat = await fs.readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8').catch(() => '');
    const status = await fs.readFile(`/proc/${pid}/task/${tid}/status`, 'utf8').catch(() => '');
    if (!stat) continue;
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const switches = Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0) + Number(/nonvoluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0);
    threads.set(tid, { name, cpuMs: ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND, switches });
  }
  return threads;
}

/** What each thread spent between two readings, by name (threads of one name summed; those born in between counted whole). */
function threadDelta(before: Threads, after: Threads, per: number): Record<string, { cpuMs: number; switches: number; threads: number }> {
  const out: Record<string, { cpuMs: number; switches: number; threads: number }> = {};
  for (const [tid, now] of after) {
    const then = before.get(tid) ?? { cpuMs: 0, switches: 0 };
    const entry = (out[now.name] ??= { cpuMs: 0, switches: 0, threads: 0 });
    entry.cpuMs += (now.cpuMs - then.cpuMs) / per;
    entry.switches += (now.switches - then.switches) / per;
    entry.threads += 1;
  }
  for (const entry of Object.values(out)) {
    entry.cpuMs = +entry.cpuMs.toFixed(2);
    entry.switches = +entry.switches.toFixed(1);
  }
  return out;
}

const transactions = (databaseUrl: string) =>
  withClient(databaseUrl, async (client) =>
    Number(
      (await client.query<{ count: string }>('select xact_commit + xact_rollback as count from pg_stat_database where datname = current_database()')).rows[0]!
        .count,
    ),
  );

/** `perf record` of the processes (CPU-clock samples: time on a core, not time waiting for one) until stopped. */
function perfRecord(file: string, pids: number[]): { stop(): Promise<void> } {
  const child = spawn('perf', ['record', '-F', '997', '-g', '-o', file, '-p', pids.join(',')], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    async stop() {
      child.kill('SIGINT');
      await exited;
    },
  };
}

async function main(): Promise<void> {
  const { values } = commandLine('idle-cost', HELP, {
    options: {
      'idle-seconds': { type: 'string', default: '30' },
      'steady-seconds': { type: 'string', default: '30' },
      rate: { type: 'string', default: '10' },
      'warm-up': { type: 'string', default: '20' },
      root: { type: 'string' },
      profile: { type: 'string' },
      json: { type: 'string' },
      perf: { type: 'string' },
    },
  });
  const idleSeconds = Number(values['idle-seconds']);
  const steadySeconds = Number(values['steady-seconds']);
  const rate = Number(values.rate);
  const warmUp = Number(values['warm-up']);
  const benchDir = import.meta.dirname;
  const root = path.resolve(values.root ?? path.resolve(benchDir, '../..'));
  const log = (message: string) => console.error(`idle-cost: ${message} (load ${os.loadavg()[0]!.toFixed(2)})`);
  if (values.profile) await fs.mkdir(values.profile, { recursive: true });
  if (values.perf) await fs.mkdir(values.perf, { recursive: true });
  const database = await startDatabaseServer();
  const context = {
    root,
    benchDir,
    database,
    smoke: false,
    profileDir: values.profile && path.resolve(values.profile),
    nodeOptions: values.perf ? ['--perf-basic-prof-only-functions'] : [],
    limits: false,
    log,
  } as unknown as BenchContext;
  const databaseUrl = await database.freshDatabase('bench_idle');
  const dataKey = newDataKey();
  const receiver = await startReceiver(context);
  const intake = await startService(context, databaseUrl, dataKey, { only: 'emdr' });
  const worker = await startService(context, databaseUrl, dataKey, { only: 'worker' });
  const processes = { intake: intake.pid, worker: worker.pid };
  const result: Record<string, unknown> = { root, startLoad: os.loadavg()[0] };
  try {
    const clinic = await addClinic(context, intake, receiver.url);
    await receiver.configure(clinic.signingSecret);
    const document = signedDocument(xmlOfSize(10 * 1024), 'gost');
    const send = () => registerDocument(`http://127.0.0.1:${intake.publicPort}`, clinic, document);
    log(`warming up: ${warmUp} documents, 16 at a time`);
    await drain(warmUp, 16, send);
    await callbacksArrived(receiver, 2 * warmUp, 120_000);
    // pg_stat_database hears of a backend's transactions when it goes idle, within 10 s (PGSTAT_IDLE_INTERVAL).
    await sleep(11_000);

    log(`idle for ${idleSeconds} s`);
    const reading = async () => ({
      at: performance.now(),
      cpu: {
        intake: await cpuMs(intake.pid),
        worker: await cpuMs(worker.pid),
        postgres: database.postmasterPid ? await postgresCpuMs(database.postmasterPid) : NaN,
      },
      threads: { intake: await threadsOf(intake.pid), worker: await threadsOf(worker.pid) },
      transactions: await transactions(databaseUrl),
    });
    const idlePerf = values.perf ? perfRecord(path.join(values.perf, 'idle.data'), [intake.pid, worker.pid]) : undefined;
    const idleBefore = await reading();
    await sleep(idleSeconds * 1000);
    const idleAfter = await reading();
    await idlePerf?.stop();
    const idleSpan = (idleAfter.at - idleBefore.at) / 1000;
    result.idle = {
      seconds: +idleSpan.toFixed(1),
      cpuMsPerSecond: Object.fromEntries(
        (['intake', 'worker', 'postgres'] as const).map((who) => [who, +((idleAfter.cpu[who] - idleBefore.cpu[who]) / idleSpan).toFixed(2)]),
      ),
      // Its two readings' own transactions (2 of them) included.
      transactionsPerSecond: +((idleAfter.transactions - idleBefore.transactions) / idleSpan).toFixed(2),
      threadsPerSecond: Object.fromEntries(
        (['intake', 'worker'] as const).map((who) => [who, threadDelta(idleBefore.threads[who], idleAfter.threads[who], idleSpan)]),
      ),
    };

    log(`${rate} documents a second for ${steadySeconds} s`);
    const received = (await receiver.stats()).received;
    const documents = rate * steadySeconds;
    const steadyPerf = values.perf ? perfRecord(path.join(values.perf, 'steady.data'), [intake.pid, worker.pid]) : undefined;
    const steadyBefore = await reading();
    const started = performance.now();
    const sent: Array<Promise<void>> = [];
    for (let i = 0; i < documents; i += 1) {
      const due = started + (i * 1000) / rate - performance.now();
      if (due > 0) await sleep(due);
      sent.push(send());
    }
    await Promise.all(sent);
    await callbacksArrived(receiver, received + 2 * documents, 60_000);
    const steadyAfter = await reading();
    await steadyPerf?.stop();
    result.steady = {
      documents,
      seconds: +((steadyAfter.at - steadyBefore.at) / 1000).toFixed(1),
      cpuMsPerDocument: Object.fromEntries(
        (['intake', 'worker', 'postgres'] as const).map((who) => [who, +((steadyAfter.cpu[who] - steadyBefore.cpu[who]) / documents).toFixed(2)]),
      ),
      serviceCpuMsPerDocument: +((steadyAfter.cpu.intake - steadyBefore.cpu.intake + steadyAfter.cpu.worker - steadyBefore.cpu.worker) / documents).toFixed(2),
      transactionsPerDocument: +((steadyAfter.transactions - steadyBefore.transactions) / documents).toFixed(2),
      threadsPerDocument: Object.fromEntries(
        (['intake', 'worker'] as const).map((who) => [who, threadDelta(steadyBefore.threads[who], steadyAfter.threads[who], documents)]),
      ),
    };
    result.endLoad = os.loadavg()[0];
    result.pids = processes;
  } finally {
    await intake.stop();
    await worker.stop();
    await receiver.stop();
    await database.stop();
  }
  const text = JSON.stringify(result, null, 2);
  if (values.json) await fs.writeFile(values.json, `${text}\n`);
  console.log(text);
}

await main();
