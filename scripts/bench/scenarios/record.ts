import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { seedUsers, withClient, type SeededUsers } from '../lib/database.js';
import { multiplyNdjson, syntheaBulkSample } from '../lib/fhir-data.js';
import { httpRequest, type LoadResult } from '../lib/http-load.js';
import { cpuMs, gatewayArgs, postgresCpuMs, rssMiB } from '../lib/processes.js';
import { CONNECTIONS, closedRound, failedRequestNotes, maxThroughputRows, perRound } from '../lib/rounds.js';
import { expectResult, JSON_HEADERS } from '../lib/rpc.js';
import { alternate, median, round1, type BenchContext, type Measured, type Row } from '../lib/scenario.js';
import { newDataKey, rpcVersion, startBaseline, startService } from '../lib/service.js';

/**
 * The patient's medical record (issue 18):
 * - import: `records import` of Synthea's Bulk Data NDJSON multiplied to --record-import-mib (1 GiB
 *   by default): resources read per second, and the import process's peak resident memory (VmHWM,
 *   sampled until it exits);
 * - list: a patient's page of 100 diagnostic reports (the analyses screen), service against the
 *   baseline doing the same SQL (scripts/bench/baseline.ts);
 * - growth: the first page of a patient with 100 reports against the first page, and a page deep in
 *   the keyset, of a patient with 10,000 (offset paging shown for reference).
 * Reports are copies of one that the import made from Synthea's data.
 */

const GROWTH_CONNECTIONS = 4;
const LIST_PATIENTS = 48;
const SMALL = 48;
const LARGE = 49;
/** Reports of the large patient (a smoke run checks the suite works, with a tenth). */
const largeItems = (context: BenchContext) => (context.smoke ? 1000 : 10_000);
const round2 = (value: number) => Math.round(value * 100) / 100;

interface ImportRun {
  seconds: number;
  summary: { imported: number; updated: number; rejectedTotal: number; skipped: Record<string, number> };
  peakMiB: number;
  /** CPU seconds of the import's processes (user + system), and of PostgreSQL meanwhile (NaN with DATABASE_URL). */
  importCpuSeconds: number;
  postgresCpuSeconds: number;
  /** Node's arguments before the command's: dist/src/main.js, or --import tsx src/main.ts when the build was not current. */
  command: string;
}

/**
 * `records import` of the measured checkout (compiled when current, as it ships), its peak RSS sampled every 20 ms (VmHWM: the peak so
 * far), and its CPU time and PostgreSQL's: on a shared machine the wall time says how busy the
 * machine was as much as how fast the import is, the CPU seconds per resource much less so.
 */
async function runImport(context: BenchContext, databaseUrl: string, files: string[]): Promise<ImportRun> {
  const env = { ...process.env, DATABASE_URL: databaseUrl, DATA_KEY: newDataKey(), LOG_LEVEL: 'warn' };
  const gateway = gatewayArgs(context.root);
  const cli = (args: string[]) =>
    spawn(process.execPath, [...gateway, ...args], {
      cwd: context.root,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  const exit = (child: ReturnType<typeof cli>) => new Promise<number | null>((resolve) => child.on('close', resolve));
  // Migrated first, so that the import's time is the import's.
  if ((await exit(cli(['migrate']))) !== 0) throw new Error('record import: migrate failed');
  const postgresBefore = context.database.postmasterPid ? await postgresCpuMs(context.database.postmasterPid) : NaN;
  const started = Date.now();
  const child = cli(['records', 'import', ...files, '--organization', '1.2.643.5.1.13.13.12.2.77.7973', '--source', 'bench']);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  let peakMiB = 0;
  // The last CPU time seen of each process of the family (read until it is gone: at most 20 ms of it missed).
  const cpuSeen = new Map<number, number>();
  const closed = exit(child);
  let running = true;
  void closed.then(() => (running = false));
  // The command runs its work in a child of its own (src/record/commands.ts): both are sampled.
  const family = async (pid: number) => [
    pid,
    ...(await fs.readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '')).split(' ').filter(Boolean).map(Number),
  ];
  while (running) {
    for (const pid of await family(child.pid!)) {
      peakMiB = Math.max(peakMiB, await rssMiB(pid, 'VmHWM').catch(() => peakMiB));
      const cpu = await cpuMs(pid);
      if (cpu > 0) cpuSeen.set(pid, cpu);
    }
    await sleep(20);
  }
  const code = await closed;
  const seconds = (Date.now() - started) / 1000;
  const postgresCpuSeconds = context.database.postmasterPid ? ((await postgresCpuMs(context.database.postmasterPid)) - postgresBefore) / 1000 : NaN;
  if (code !== 0) throw new Error(`record import exited ${code}: ${stderr}`);
  const importCpuSeconds = [...cpuSeen.values()].reduce((sum, ms) => sum + ms, 0) / 1000;
  return {
    seconds,
    summary: JSON.parse(stdout),
    peakMiB,
    importCpuSeconds,
    postgresCpuSeconds,
    command: gateway.map((arg) => (path.isAbsolute(arg) ? path.relative(context.root, arg) : arg)).join(' '),
  };
}

/** The import: data made, imported once (the bench machine is shared: one run of a 1 GiB file is minutes). */
async function importScenario(context: BenchContext, sample: string): Promise<Measured> {
  const folder = await fs.mkdtemp(path.join(os.tmpdir(), 'ehr-gateway-bench-ndjson-'));
  try {
    context.log(`record import: writing ${context.recordImportMiB} MiB of NDJSON`);
    const data = await multiplyNdjson(sample, folder, context.recordImportMiB * 1024 * 1024);
    const databaseUrl = await context.database.freshDatabase('bench_record_import');
    context.log(
      `record import: ${data.resources.toLocaleString('en')} resources, ${(data.bytes / 1024 / 1024).toFixed(0)} MiB (${data.copies} copies of the sample's patients)`,
    );
    const run = await runImport(context, databaseUrl, data.files);
    const skipped = Object.values(run.summary.skipped).reduce((sum, count) => sum + count, 0);
    const read = run.summary.imported + run.summary.updated + run.summary.rejectedTotal + skipped;
    const rate: Row = {
      metric: `resources read per second (${read.toLocaleString('en')} resources, ${(data.bytes / 1024 / 1024).toFixed(0)} MiB NDJSON)`,
      unit: 'resources/s',
      service: Math.round(read / run.seconds),
    };
    rate.target = { text: '≥ 5,000 resources/s', met: rate.service >= 5000 };
    const mapped: Row = {
      metric: `resources validated, mapped and stored per second (${(run.summary.imported + run.summary.updated).toLocaleString('en')}; the others are of types the record skips)`,
      unit: 'resources/s',
      service: Math.round((run.summary.imported + run.summary.updated) / run.seconds),
      reference: 'the skipped resources are read and counted, not validated',
    };
    const memory: Row = { metric: 'peak resident memory of the import process (VmHWM)', unit: 'MiB', service: round1(run.peakMiB) };
    memory.target = { text: '< 300 MB (286 MiB)', met: run.peakMiB * 1024 * 1024 < 300_000_000 };
    const cpu: Row[] = [{ metric: 'CPU of the import process (user + system)', unit: 's', service: round2(run.importCpuSeconds) }];
    // PostgreSQL's CPU is known when the bench runs it (not with DATABASE_URL).
    if (Number.isFinite(run.postgresCpuSeconds)) {
      cpu.push(
        { metric: 'CPU of PostgreSQL during the import', unit: 's', service: round2(run.postgresCpuSeconds) },
        {
          metric: 'resources read per CPU-second (import and PostgreSQL together: the wall rate of an otherwise idle machine with 1 core)',
          unit: 'resources/CPU-s',
          service: Math.round(read / (run.importCpuSeconds + run.postgresCpuSeconds)),
        },
      );
    }
    return {
      name: 'record_import',
      title: 'records import: FHIR Bulk Data NDJSON',
      rows: [rate, mapped, memory, { metric: 'wall time, staging and assembling', unit: 's', service: round1(run.seconds) }, ...cpu],
      chart: { throughput: { label: 'record import', unit: 'resources/s', service: rate.service } },
      notes: [
        `${run.summary.rejectedTotal} rejected; the process is \`node ${run.command} records import\` and the child it runs the import in (PostgreSQL's memory is its own process's)`,
      ],
    };
  } finally {
    await fs.rm(folder, { recursive: true, force: true });
  }
}

/** A real report (made by the import from Synthea's data) copied: `count` reports of each patient, one minute apart. */
async function seedReports(databaseUrl: string, template: Record<string, unknown>, patients: Array<{ id: string; count: number }>): Promise<void> {
  await withClient(databaseUrl, async (client) => {
    let next = 1_000_000_000;
    for (const { id, count } of patients) {
      for (let start = 0; start < count; start += 5000) {
        const size = Math.min(5000, count - start);
        await client.query(
          `insert into record_diagnostic_reports (id, patient_id, created, business_id, message)
           select $1::bigint + i, $2, timestamptz '2025-01-01T00:00:00Z' - (($3::int + i) * interval '1 minute'), '', $4::jsonb || jsonb_build_object('id', ($1::bigint + i)::text, 'patientId', $2::text, 'issuedDate', to_char((timestamptz '2025-01-01T00:00:00Z' - (($3::int + i) * interval '1 minute')) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
             from generate_series(0, $5::int - 1) i`,
          [next, id, start, JSON.stringify(template), size],
        );
        next += size;
      }
    }
    await client.query('analyze');
  });
}

function listBody(seeded: SeededUsers, session: number, params: Record<string, unknown>): string {
  return JSON.stringify({
    jsonrpc: '2.0',
    id: '1',
    method: 'diagnostic_report.get_patient_diagnostic_reports',
    params,
    cred: { user: seeded.users[session % seeded.users.length]!.user, token: seeded.sessionToken(session) },
    apiKey: null,
  });
}

export async function record(context: BenchContext): Promise<Measured[]> {
  const sample = await syntheaBulkSample(path.resolve(context.benchDir, '../..'), context.smoke ? 1 : 10);
  const outcomes: Measured[] = [await importScenario(context, sample)];

  const databaseUrl = await context.database.freshDatabase('bench_record_list');
  const dataKey = newDataKey();
  const service = await startService(context, databaseUrl, dataKey, { only: 'ehr' });
  const baseline = await startBaseline(context, databaseUrl, dataKey);
  try {
    const sampleFiles = (await fs.readdir(sample)).filter((name) => name.endsWith('.ndjson')).map((name) => path.join(sample, name));
    await runImport(context, databaseUrl, sampleFiles);
    const template = await withClient(databaseUrl, async (client) => {
      const { rows } = await client.query<{ message: Record<string, unknown> }>(
        `select message from record_diagnostic_reports order by jsonb_array_length(message->'result') desc, id limit 1`,
      );
      return rows[0]!.message;
    });
    const seeded = await seedUsers(databaseUrl, Buffer.from(dataKey, 'hex'), { users: 50, sessions: 500 });
    const large = largeItems(context);
    context.log(`record list: ${LIST_PATIENTS} patients with 100 reports of ${JSON.stringify(template).length} bytes, one with ${large.toLocaleString('en')}`);
    await seedReports(databaseUrl, template, [
      ...Array.from({ length: LIST_PATIENTS + 1 }, (_, i) => ({ id: `bench-p${i}`, count: 100 })),
      { id: `bench-p${LARGE}`, count: large },
    ]);

    const route = `/${rpcVersion(context.root)}/`;
    const listSession = () => {
      let session: number;
      do session = Math.floor(Math.random() * seeded.sessions);
      while (session % seeded.users.length >= LIST_PATIENTS);
      return session;
    };
    const list = (port: number, pid: number, pathname: string) =>
      closedRound(
        context,
        { port, pid },
        {
          onAnswer: expectResult,
          next: () => {
            const session = listSession();
            const body = listBody(seeded, session, { patientId: `bench-p${session % seeded.users.length}`, limit: 100, offset: 0 });
            return { bytes: httpRequest('POST', pathname, JSON_HEADERS, body) };
          },
        },
      );
    context.log('record list: 100 reports, service and baseline');
    const listed = await alternate(context.rounds, [
      { name: 'service', run: list(service.publicPort, service.pid, route) },
      { name: 'baseline', run: list(baseline.port, baseline.pid, '/rpc') },
    ]);
    outcomes.push(listOutcome(listed));

    const deepCreated = await withClient(databaseUrl, async (client) => {
      const { rows } = await client.query<{ created: string }>(
        `select to_char(created at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created from record_diagnostic_reports where patient_id = $1 order by created desc offset $2 limit 1`,
        [`bench-p${LARGE}`, large - 101],
      );
      return rows[0]!.created;
    });
    const sessionOf = (patient: number) => patient;
    const page = (patient: number, params: Record<string, unknown>) =>
      closedRound(
        context,
        { port: service.publicPort },
        {
          onAnswer: expectResult,
          next: () => ({
            bytes: httpRequest('POST', route, JSON_HEADERS, listBody(seeded, sessionOf(patient), { patientId: `bench-p${patient}`, limit: 100, ...params })),
          }),
        },
        GROWTH_CONNECTIONS,
      );
    context.log(`record growth: 100 against ${large.toLocaleString('en')} reports of a patient`);
    const pages = await alternate(context.rounds, [
      { name: 'small', run: page(SMALL, { offset: 0 }) },
      { name: 'largeFirst', run: page(LARGE, { offset: 0 }) },
      { name: 'largeKeyset', run: page(LARGE, { offset: 0, lastItemCreated: deepCreated }) },
      { name: 'largeOffset', run: page(LARGE, { offset: large - 100 }) },
    ]);
    outcomes.push(growthOutcome(pages, large));
    return outcomes;
  } finally {
    await service.stop();
    await baseline.stop();
  }
}

function listOutcome(results: Record<string, LoadResult[]>): Measured {
  const { throughput, cpu, p99 } = maxThroughputRows(
    results.service,
    results.baseline,
    `a patient's 100 diagnostic reports, throughput, ${CONNECTIONS} connections`,
    0.8,
  );
  return {
    name: 'record_list',
    title: "diagnostic_report.get_patient_diagnostic_reports: a patient's page of 100",
    rows: [throughput, cpu, p99],
    chart: {
      throughput: { label: 'record list of 100', unit: 'requests/s', service: throughput.service, baseline: throughput.baseline },
      latency: { label: 'record list p99', unit: 'ms', service: p99.service, baseline: p99.baseline },
    },
    notes: failedRequestNotes(results, 'record list'),
  };
}

function growthOutcome(results: Record<string, LoadResult[]>, large: number): Measured {
  const mean = (name: string) => median(perRound(results[name], (r) => r.mean));
  const small = mean('small');
  const row = (name: string, metric: string, judged: boolean): Row => {
    const value: Row = {
      metric,
      unit: 'ms',
      service: mean(name),
      baseline: small,
      rounds: { service: perRound(results[name], (r) => r.mean), baseline: perRound(results.small, (r) => r.mean) },
    };
    if (judged) value.target = { text: '≤ 1.2× (flat)', met: value.service / small <= 1.2 };
    else value.reference = 'offset paging reads the items it skips: the SDK pages by lastItemCreated (cursorType 3)';
    return value;
  };
  return {
    name: 'record_growth',
    title: `Record growth: a page of 100 of a patient with ${large.toLocaleString('en')} reports against one with 100`,
    columns: [`${large.toLocaleString('en')} reports`, '100 reports'],
    rows: [
      row('largeFirst', 'first page: mean latency', true),
      row('largeKeyset', `page ${large / 100} by lastItemCreated (keyset): mean latency`, true),
      row('largeOffset', `page ${large / 100} by offset ${(large - 100).toLocaleString('en')}: mean latency`, false),
    ],
    chart: {},
    notes: [`${GROWTH_CONNECTIONS} connections per contender; the small patient's first page is the comparison column.`],
  };
}
