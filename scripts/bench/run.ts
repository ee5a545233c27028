/**
 * `make bench`: every scenario against its baseline, written to docs/benchmarks.md, docs/benchmarks.svg
 * and docs/benchmarks.json. Run `tsx scripts/bench/run.ts --help` for the options.
 */
import fs from 'node:fs/promises';
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { commandLine } from '../lib/command-line.js';
import { startDatabaseServer } from './lib/database.js';
import { compiledIsCurrent, describeCommit } from './lib/processes.js';
import { chart, markdown, type RunRecord } from './lib/report.js';
import { loadAverage, type BenchContext, type Measured, type Scenario, type ScenarioOutcome } from './lib/scenario.js';
import { gostCheck } from './scenarios/gost-check.js';
import { growth } from './scenarios/growth.js';
import { interfaceA } from './scenarios/interface-a.js';
import { largeDocument } from './scenarios/large-document.js';
import { pipeline } from './scenarios/pipeline.js';
import { record } from './scenarios/record.js';
import { registerDocument } from './scenarios/register-document.js';
import { tracing } from './scenarios/tracing.js';

const HELP = `usage: tsx scripts/bench/run.ts [options]

Runs the benchmark scenarios against \`ehr-gateway serve\` (its own process) and their bare baselines
(scripts/bench/baseline.ts), in alternating rounds on one PostgreSQL: the embedded one in a temporary
directory, or DATABASE_URL's server (each scenario creates its own database there). Writes
benchmarks.md, benchmarks.svg and benchmarks.json into --out.

Scenarios (--only, comma-separated; default all):
  interface-a        get_patient: maximum throughput, p99 at a constant half of it; save_auth_info
  register-document  RegisterDocument acknowledgements of 10 KiB documents
  pipeline           N documents until both callbacks of each arrived; ack → result when idle;
                     CPU per document at a steady 10 documents/s
  growth             get_patient and RegisterDocument on 1,000 vs --growth-rows sessions and documents
  large-document     peak RSS growth of serve for one --large-mib document through everything
  gost-check         one GOST-signed document (10 KiB, 5 MiB; 256, 512) checked in-process: ours vs the
                     OpenSSL gost engine (needs make gost-engine-bench)
  record             the medical record: records import of --record-import-mib of FHIR NDJSON (rate,
                     peak RSS); a patient's 100 reports against the baseline; 100 vs 10,000 reports
  tracing            RegisterDocument acknowledgements and get_patient with tracing on (OTLP to a collector
                     stand-in) vs off

options:
  --smoke                tiny counts and short rounds (seconds in all): checks the suite works
  --out DIR              where to write (default docs)
  --root DIR             the checkout whose serve is measured (default this one), e.g. an older commit
  --label TEXT           what to call the measured code (default: git describe of --root)
  --before FILE          an earlier run's benchmarks.json, shown as "before" (default docs/benchmarks-before.json
                         when it exists and this is not --smoke)
  --rounds N             alternating rounds per contender (default 3; smoke 1)
  --round-seconds S      measured seconds per round (default 5; smoke 0.4)
  --pipeline-documents N documents per pipeline round (default 3000; smoke 20)
  --growth-rows N        rows of the large growth database (default 200000; smoke 2000)
  --large-mib N          size of the large document (default 20; smoke 1)
  --record-import-mib N  size of the FHIR NDJSON the record scenario imports (default 1024; smoke 2)
  --profile DIR          write a CPU profile of each service and baseline process there (node --cpu-prof)
  --node-options TEXT    more options of node for each service and baseline process, space-separated
                         (e.g. --trace-gc with BENCH_LOG_DIR set to keep the children's output)
  --limits               count RATE_LIMIT, BYTE_QUOTA and RPC_RATE_LIMIT as in production (shared counters),
                         with allowances never reached (default: the limits off)
  -h, --help             this text

example: tsx scripts/bench/run.ts --only interface-a --rounds 1 --out /tmp/bench`;

const SCENARIOS: Record<string, Scenario> = {
  'interface-a': interfaceA,
  'register-document': registerDocument,
  pipeline,
  growth,
  'large-document': largeDocument,
  'gost-check': gostCheck,
  record,
  tracing,
};

function options() {
  const { values } = commandLine('bench', HELP, {
    options: {
      smoke: { type: 'boolean' },
      out: { type: 'string' },
      root: { type: 'string' },
      label: { type: 'string' },
      before: { type: 'string' },
      only: { type: 'string' },
      rounds: { type: 'string' },
      'round-seconds': { type: 'string' },
      'pipeline-documents': { type: 'string' },
      'growth-rows': { type: 'string' },
      'large-mib': { type: 'string' },
      'record-import-mib': { type: 'string' },
      profile: { type: 'string' },
      'node-options': { type: 'string' },
      limits: { type: 'boolean' },
    },
  });
  return values;
}

function number(text: string | undefined, fallback: number, flag: string): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${flag} takes a positive number`);
  return value;
}

function machine(): RunRecord['machine'] {
  const cpu = /model name\s*:\s*(.+)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? os.cpus()[0]?.model ?? 'unknown';
  const release = /PRETTY_NAME="([^"]+)"/.exec(existsSync('/etc/os-release') ? readFileSync('/etc/os-release', 'utf8') : '')?.[1] ?? os.type();
  return { cpu, cores: os.cpus().length, memoryGiB: Math.round(os.totalmem() / 1024 ** 3), os: `${release}, Linux ${os.release()}` };
}

async function main(): Promise<void> {
  const values = options();
  const smoke = values.smoke ?? false;
  const benchDir = import.meta.dirname;
  const repo = path.resolve(benchDir, '../..');
  const root = path.resolve(values.root ?? repo);
  const out = path.resolve(values.out ?? path.join(repo, 'docs'));
  const chosen = values.only ? values.only.split(',') : Object.keys(SCENARIOS);
  for (const name of chosen) if (!SCENARIOS[name]) throw new Error(`unknown scenario ${name}; one of ${Object.keys(SCENARIOS).join(', ')}`);
  const beforeFile = values.before ?? (smoke ? undefined : path.join(repo, 'docs/benchmarks-before.json'));
  const before = beforeFile && existsSync(beforeFile) ? (JSON.parse(await fs.readFile(beforeFile, 'utf8')) as RunRecord) : undefined;
  if (values.profile) await fs.mkdir(values.profile, { recursive: true });

  const started = Date.now();
  const log = (message: string) => console.error(`bench ${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s  ${message}`);
  // Measured from its sources, serve runs slower than as it ships: said in the log and in the report's heading.
  const servedFrom = compiledIsCurrent(root) ? '' : ', serve run from its sources under tsx, not compiled';
  if (servedFrom) log(`serve runs from its sources under tsx: ${root}/dist is older than its src/ or generated/ (make build measures it as it ships)`);
  log(
    `load average ${os
      .loadavg()
      .map((load) => load.toFixed(2))
      .join(' ')}; measuring ${root}`,
  );
  const database = await startDatabaseServer();
  const context: BenchContext = {
    root,
    benchDir,
    database,
    smoke,
    rounds: number(values.rounds, smoke ? 1 : 3, '--rounds'),
    roundMs: number(values['round-seconds'], smoke ? 0.4 : 5, '--round-seconds') * 1000,
    warmupMs: smoke ? 100 : 1000,
    pipelineDocuments: number(values['pipeline-documents'], smoke ? 20 : 3000, '--pipeline-documents'),
    growthRows: number(values['growth-rows'], smoke ? 2000 : 200_000, '--growth-rows'),
    largeDocumentBytes: number(values['large-mib'], smoke ? 1 : 20, '--large-mib') * 1024 * 1024,
    recordImportMiB: number(values['record-import-mib'], smoke ? 2 : 1024, '--record-import-mib'),
    profileDir: values.profile && path.resolve(values.profile),
    nodeOptions: values['node-options']?.split(' ').filter(Boolean) ?? [],
    limits: values.limits ?? false,
    log,
  };
  const outcomes: ScenarioOutcome[] = [];
  const failures: string[] = [];
  try {
    for (const name of chosen) {
      const load = loadAverage();
      const groupStarted = Date.now();
      log(
        `${name}: starting at load average ${os
          .loadavg()
          .map((value) => value.toFixed(2))
          .join(' ')}`,
      );
      let measured: Measured[];
      try {
        measured = await SCENARIOS[name]!(context);
      } catch (error) {
        // The other scenarios still run and the report is still written; the run fails at its end.
        failures.push(`${name} did not run: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
        log(`${name}: FAILED: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
        continue;
      }
      failures.push(...incomplete(name, measured));
      for (const outcome of measured) outcomes.push({ ...outcome, load: [load, loadAverage()], seconds: (Date.now() - groupStarted) / 1000 });
    }
  } finally {
    await database.stop();
  }
  const run: RunRecord = {
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    commit: values.label ?? describeCommit(root),
    machine: machine(),
    versions: { node: process.version, postgres: database.version },
    mode: `${smoke ? 'smoke run' : `full run, ${context.rounds} rounds of ${context.roundMs / 1000} s`}${context.limits ? ', limits counted' : ''}${servedFrom}`,
    totalSeconds: (Date.now() - started) / 1000,
    outcomes,
    ...(failures.length > 0 ? { failures } : {}),
  };
  await fs.mkdir(out, { recursive: true });
  await fs.writeFile(path.join(out, 'benchmarks.json'), `${JSON.stringify(run, null, 2)}\n`);
  await fs.writeFile(path.join(out, 'benchmarks.svg'), chart(run, before));
  await fs.writeFile(path.join(out, 'benchmarks.md'), markdown(run, before, 'benchmarks.svg'));
  log(`wrote ${path.join(out, 'benchmarks.md')} in ${Math.round(run.totalSeconds)} s`);
  if (failures.length > 0) {
    for (const failure of failures) console.error(`bench: FAILED: ${failure}`);
    console.error(`bench: ${failures.length} scenario problem(s): the report lacks what they should have measured`);
    process.exitCode = 1;
  }
}

/** Why a scenario's outcomes are not a measurement: none at all, a row without a figure, failed requests. */
function incomplete(name: string, measured: readonly Measured[]): string[] {
  if (measured.length === 0) return [`${name} measured nothing`];
  return measured.flatMap((outcome) => [
    ...(outcome.rows.length === 0 ? [`${outcome.name} has no rows`] : []),
    ...outcome.rows.flatMap((row) => {
      const measuredFigure = (value: number) => Number.isFinite(value) && (value > 0 || (row.zeroMeasured === true && value === 0));
      const missing = [
        !measuredFigure(row.service) ? 'service' : undefined,
        row.baseline !== undefined && !measuredFigure(row.baseline) ? 'baseline' : undefined,
      ].filter(Boolean);
      return missing.length > 0 ? [`${outcome.name}: "${row.metric}" has no ${missing.join(' or ')} figure`] : [];
    }),
    ...outcome.notes.filter((note) => /failed requests|NOT every callback/.test(note)).map((note) => `${outcome.name}: ${note}`),
  ]);
}

main().catch((error: unknown) => {
  console.error(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exit(1);
});
