/**
 * What the pipeline costs PostgreSQL per document, statement by statement: the pipeline scenario's
 * throughput run (scripts/bench/scenarios/pipeline.ts) once, on an embedded PostgreSQL with
 * pg_stat_statements loaded, after a warm-up. Prints, per document: transactions, CPU time of the
 * intake, the worker and PostgreSQL, WAL bytes, row writes by table (updates, of them HOT, inserts,
 * deletes), and each statement's calls, execution time, rows and shared blocks. Counts and CPU times
 * survive a busy machine; documents/s does not (the load average is printed beside it). With
 * --rate, the documents go at that many a second (each on its schedule) rather than as fast as the
 * intake takes them: how many documents a claim or settle takes depends on the rate, so two
 * checkouts compare per document at one rate that both keep up with.
 *
 *   node --import tsx scripts/bench/pipeline-statements.ts [--root DIR] [--documents N] [--warmup N]
 *        [--rate R] [--kind gost|rsa] [--top N] [--json FILE]
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { EmbeddedPostgres } from '../../src/db/embedded-postgres.js';
import { createLogger } from '../../src/logging/logger.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { withClient, type BenchDatabaseServer } from './lib/database.js';
import { registerAtRate, signedDocument, xmlOfSize, type SignatureKind, type SignedDocument } from './lib/documents.js';
import { cpuMs, describeCommit, postgresCpuMs } from './lib/processes.js';
import type { BenchContext } from './lib/scenario.js';
import type { BenchClinic, Receiver } from './lib/service.js';
import { commandLine } from '../lib/command-line.js';
import { analyzeAsAutovacuumWould, startPipeline, throughputRun, waitForCallbacks, type Run } from './scenarios/pipeline.js';
import { ACK_DOCUMENT_BYTES } from './scenarios/register-document.js';

const HELP = `usage: node --import tsx scripts/bench/pipeline-statements.ts [options]

The pipeline scenario's throughput run once, on an embedded PostgreSQL with pg_stat_statements: per
document, transactions, CPU of intake, worker and PostgreSQL, WAL bytes, row writes by table and each
statement's calls, time, rows and blocks; the run's seconds and ack -> result p50/p99 beside them.

options:
  --root DIR       the built checkout whose serve is measured (default this one)
  --documents N    documents measured (default 1500)
  --warmup N       documents sent first, not measured (default 300)
  --rate R         R documents a second (default: as fast as 16 connections are answered)
  --kind gost|rsa  the documents' signatures (default gost)
  --top N          statements listed (default 25)
  --json FILE      also write the figures there
  -h, --help       this text

example: node --import tsx scripts/bench/pipeline-statements.ts --root /tmp/old-checkout --documents 2000`;

const { values } = commandLine('pipeline-statements', HELP, {
  options: {
    root: { type: 'string' },
    documents: { type: 'string', default: '1500' },
    warmup: { type: 'string', default: '300' },
    rate: { type: 'string' },
    kind: { type: 'string', default: 'gost' },
    top: { type: 'string', default: '25' },
    json: { type: 'string' },
  },
  strict: true,
});

const benchDir = import.meta.dirname;
const root = path.resolve(values.root ?? path.resolve(benchDir, '../..'));
const documents = Number(values.documents);
const warmup = Number(values.warmup);
const kind = values.kind as SignatureKind;
const rate = values.rate === undefined ? undefined : Number(values.rate);
const load = () =>
  os
    .loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
const log = (message: string) => console.error(`pipeline-statements: ${message}`);

/** An embedded PostgreSQL as the bench starts it, restarted once with pg_stat_statements loaded. */
async function databaseWithStatements(): Promise<BenchDatabaseServer & { url: string }> {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ehr-gateway-statements-'));
  const embedded = new EmbeddedPostgres(dataDir, createLogger('warn', process.stderr));
  let url = await embedded.start({ adopt: true });
  await withClient(url, (client) => client.query("alter system set shared_preload_libraries = 'pg_stat_statements'"));
  await embedded.stop();
  url = await embedded.start({ adopt: true });
  const serverUrl = url.replace(/\/[^/]*$/, '');
  const postmasterPid = Number((await fs.readFile(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8')).split('\n')[0]);
  return {
    url,
    serverUrl,
    postmasterPid,
    version: '',
    async freshDatabase(prefix) {
      const name = `${prefix}_${Date.now()}`;
      await withClient(url, (client) => client.query(`create database ${name}`));
      return `${serverUrl}/${name}`;
    },
    async stop() {
      await embedded.stop();
      await fs.rm(dataDir, { recursive: true, force: true });
    },
  };
}

interface StatementRow {
  query: string;
  calls: string;
  total_exec_time: number;
  rows: string;
  shared_blks_hit: string;
  shared_blks_read: string;
  shared_blks_dirtied: string;
  shared_blks_written: string;
  wal_bytes: string;
}

interface TableRow {
  relname: string;
  n_tup_ins: string;
  n_tup_upd: string;
  n_tup_hot_upd: string;
  n_tup_del: string;
}

async function main(): Promise<void> {
  log(`load average ${load()}; measuring ${root} (${describeCommit(root)})`);
  const database = await databaseWithStatements();
  const context: BenchContext = {
    root,
    benchDir,
    database,
    smoke: false,
    rounds: 1,
    roundMs: 0,
    warmupMs: 0,
    pipelineDocuments: warmup,
    growthRows: 0,
    largeDocumentBytes: 0,
    recordImportMiB: 0,
    profileDir: undefined,
    nodeOptions: [],
    limits: false,
    log,
  };
  let pipeline: Awaited<ReturnType<typeof startPipeline>>;
  try {
    pipeline = await startPipeline(context, 'bench_statements');
  } catch (error) {
    await database.stop();
    throw error;
  }
  const { databaseUrl, receiver, intake, clinic, pids, stop } = pipeline;
  try {
    const document = signedDocument(xmlOfSize(ACK_DOCUMENT_BYTES), kind);
    await withClient(databaseUrl, (client) => client.query('create extension if not exists pg_stat_statements'));
    log(`warm-up: ${warmup} documents`);
    await throughputRun(context, pids, databaseUrl, receiver, clinic, intake.publicPort, document);
    // As make bench's pipeline scenario does after its warm-up.
    await analyzeAsAutovacuumWould(databaseUrl);
    await withClient(databaseUrl, async (client) => {
      await client.query('select pg_stat_statements_reset()');
      await client.query('select pg_stat_reset()');
    });
    const walBefore = await walLsn(databaseUrl);
    const loadAtStart = load();
    log(`measuring: ${documents} ${kind}-signed documents${rate ? `, ${rate} a second` : ''} at load ${loadAtStart}`);
    const run = rate
      ? await rateRun(rate, pids, databaseUrl, receiver, clinic, `http://127.0.0.1:${intake.publicPort}`, document)
      : await throughputRun({ ...context, pipelineDocuments: documents }, pids, databaseUrl, receiver, clinic, intake.publicPort, document);
    const walBytes = (await walLsn(databaseUrl)) - walBefore;
    const { statements, tables } = await withClient(databaseUrl, async (client) => ({
      statements: (
        await client.query<StatementRow>(
          `select query, calls, total_exec_time, rows, shared_blks_hit, shared_blks_read, shared_blks_dirtied, shared_blks_written, wal_bytes
             from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())
            order by total_exec_time desc`,
        )
      ).rows,
      tables: (
        await client.query<TableRow>(
          `select relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del from pg_stat_user_tables
            where n_tup_ins + n_tup_upd + n_tup_del > 0 order by relname`,
        )
      ).rows,
    }));
    const measured = run.documentsPerSecond * run.seconds;
    const per = (value: string | number) => Number(value) / measured;
    const report = {
      root,
      commit: describeCommit(root),
      kind,
      rate: rate ?? 'as fast as the intake takes them (16 connections)',
      documents: measured,
      load: { start: loadAtStart, end: load() },
      complete: run.complete,
      orderViolations: run.orderViolations,
      seconds: +run.seconds.toFixed(2),
      ackToResultMs: { p50: Math.round(run.ackToResult.p50), p99: Math.round(run.ackToResult.p99) },
      documentsPerSecond: +run.documentsPerSecond.toFixed(1),
      transactionsPerDocument: +run.transactionsPerDocument.toFixed(3),
      cpuMsPerDocument: Object.fromEntries(Object.entries(run.cpuMsPerDocument).map(([name, ms]) => [name, +ms.toFixed(3)])),
      walBytesPerDocument: Math.round(walBytes / measured),
      statementsPerDocument: +per(statements.reduce((sum, row) => sum + Number(row.calls), 0)).toFixed(3),
      statementMsPerDocument: +per(statements.reduce((sum, row) => sum + row.total_exec_time, 0)).toFixed(3),
      tables: tables.map((row) => ({
        table: row.relname,
        inserts: +per(row.n_tup_ins).toFixed(3),
        updates: +per(row.n_tup_upd).toFixed(3),
        hotUpdates: +per(row.n_tup_hot_upd).toFixed(3),
        deletes: +per(row.n_tup_del).toFixed(3),
      })),
      statements: statements.map((row) => ({
        calls: +per(row.calls).toFixed(3),
        ms: +per(row.total_exec_time).toFixed(4),
        rows: +per(row.rows).toFixed(3),
        blocksHit: +per(row.shared_blks_hit).toFixed(2),
        blocksDirtied: +per(row.shared_blks_dirtied).toFixed(3),
        walBytes: Math.round(per(row.wal_bytes)),
        query: row.query.replace(/\s+/g, ' ').slice(0, 160),
      })),
    };
    if (values.json) await fs.writeFile(values.json, `${JSON.stringify(report, null, 2)}\n`);
    print(report, Number(values.top));
  } finally {
    await stop();
    await database.stop();
  }
}

/** Transactions committed or rolled back in the database so far. */
async function transactions(url: string): Promise<number> {
  return withClient(url, async (client) =>
    Number(
      (await client.query<{ count: string }>('select xact_commit + xact_rollback as count from pg_stat_database where datname = current_database()')).rows[0]!
        .count,
    ),
  );
}

/** `documents` sent at `perSecond`, until both callbacks of each arrived: as throughputRun measures (latencies and order not read). */
async function rateRun(
  perSecond: number,
  pids: { intake: number; worker: number; postmaster: number | undefined },
  databaseUrl: string,
  receiver: Receiver,
  clinic: BenchClinic,
  publicUrl: string,
  document: SignedDocument,
): Promise<Run> {
  await receiver.configure(clinic.signingSecret);
  const received = (await receiver.stats()).received;
  const cpu = async () => ({ intake: await cpuMs(pids.intake), worker: await cpuMs(pids.worker), postgres: await postgresCpuMs(pids.postmaster!) });
  const before = await cpu();
  const transactionsBefore = await transactions(databaseUrl);
  const started = performance.now();
  await registerAtRate(publicUrl, clinic, document, documents, perSecond);
  const complete = await waitForCallbacks(receiver, received + 2 * documents, 120_000, 20);
  const seconds = (performance.now() - started) / 1000;
  const after = await cpu();
  // Backends report their counters when idle, within PGSTAT_IDLE_INTERVAL (10 s).
  await sleep(11_000);
  return {
    documentsPerSecond: documents / seconds,
    transactionsPerDocument: ((await transactions(databaseUrl)) - transactionsBefore) / documents,
    seconds,
    ackToResult: { p50: NaN, p99: NaN },
    cpuMsPerDocument: {
      worker: (after.worker - before.worker) / documents,
      intake: (after.intake - before.intake) / documents,
      postgres: (after.postgres - before.postgres) / documents,
    },
    orderViolations: 0,
    complete,
  };
}

async function walLsn(url: string): Promise<number> {
  return withClient(url, async (client) => Number((await client.query<{ at: string }>("select pg_current_wal_lsn() - '0/0' as at")).rows[0]!.at));
}

function print(report: Record<string, unknown> & { statements: Array<Record<string, unknown>>; tables: Array<Record<string, unknown>> }, top: number): void {
  const { statements, tables, ...summary } = report;
  console.log(JSON.stringify(summary, null, 2));
  console.log('\nrow writes per document, by table (inserts, updates, of them HOT, deletes):');
  for (const table of tables) console.log(`  ${table.table}: ${table.inserts} ins, ${table.updates} upd (${table.hotUpdates} HOT), ${table.deletes} del`);
  console.log(`\nstatements per document (top ${top} by time): calls, ms, rows, blocks hit, dirtied, WAL bytes, query`);
  for (const row of statements.slice(0, top))
    console.log(`  ${row.calls}\t${row.ms}\t${row.rows}\t${row.blocksHit}\t${row.blocksDirtied}\t${row.walBytes}\t${row.query}`);
}

await main();
