import { setTimeout as sleep } from 'node:timers/promises';
import { closedLoop, httpRequest } from '../lib/http-load.js';
import { registerAtRate, registerDocumentBody, signedDocument, xmlOfSize, type SignatureKind, type SignedDocument } from '../lib/documents.js';
import { cpuMs, postgresCpuMs } from '../lib/processes.js';
import { withClient } from '../lib/database.js';
import { median, round1, type BenchContext, type Measured, type Row } from '../lib/scenario.js';
import { addClinic, clinicHeaders, newDataKey, startReceiver, startService, type BenchClinic, type Receiver } from '../lib/service.js';
import { ACK_DOCUMENT_BYTES, expectAcknowledgement } from './register-document.js';

/**
 * The whole pipeline of RegisterDocument: N documents of 10 KiB sent as fast as the intake takes
 * them (16 connections), until both callbacks of every one arrived at the clinic's receiver
 * (signatures checked there). Intake (`serve --only emdr`) and workers (`serve --only worker`) run as
 * two processes, so the worker's CPU per document is its own. Each round runs twice, in alternating
 * order: documents GOST-256-signed (the real path, the one the targets judge) and RSA-signed (the same
 * pipeline without our GOST arithmetic, verified by Node's OpenSSL), so the pipeline's own cost and
 * the signature check's show apart; a warm-up run of each kind comes first, not counted. Then, with
 * the service idle, GOST-signed documents one at a time: acknowledgement → result callback. The database's committed transactions (pg_stat_database) are
 * counted per document of a throughput run (nearly every statement of the pipeline is a transaction
 * of its own) and per second once the service is idle (what its loops cost when nothing happens).
 * Last, GOST-signed documents at a steady 10 a second: the service's CPU per document there against
 * its full-load figure (wake-ups, timers and polls cost per second, not per document).
 */

const KINDS: readonly SignatureKind[] = ['gost', 'rsa'];
/** Documents of each kind sent before the measured rounds (at most --pipeline-documents). */
const WARMUP_DOCUMENTS = 600;

const CONNECTIONS = 16;
const ACCEPTANCE = 'SendRegisterDocumentResponse';
const RESULT = 'SendRegisterDocumentResultResponse';

const now = () => performance.timeOrigin + performance.now();
const percentile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};

/** Whether the receiver has had `count` callbacks in all within `timeoutMs` (asked every `pollMs`); throws once a callback reports an error. */
export async function waitForCallbacks(receiver: Receiver, count: number, timeoutMs: number, pollMs: number): Promise<boolean> {
  const ends = Date.now() + timeoutMs;
  while (Date.now() < ends) {
    const stats = await receiver.stats();
    // A rejected document gets one callback, never two: waiting would last the whole timeout (33 min for 2,000).
    if (stats.errors > 0) throw new Error(`${stats.errors} callbacks said "status": "error", where every document should pass; the first: ${stats.firstError}`);
    if (stats.received >= count) return true;
    await sleep(pollMs);
  }
  return false;
}

/** Until the receiver has had `count` callbacks in all; throws after `timeoutMs`, or once a callback reports an error. */
export async function callbacksArrived(receiver: Receiver, count: number, timeoutMs: number): Promise<void> {
  if (!(await waitForCallbacks(receiver, count, timeoutMs, 20))) throw new Error(`not every callback arrived within ${timeoutMs / 1000} s`);
}

/** Until no callback has arrived for `quietMs`: what an earlier round left on its way is in, and will not count in the next. */
async function quiesce(receiver: Receiver, quietMs: number): Promise<void> {
  let last = -1;
  for (;;) {
    const { received } = await receiver.stats();
    if (received === last) return;
    last = received;
    await sleep(quietMs);
  }
}

/**
 * A backend reports its counters to pg_stat_database when it goes idle, at most every second, and an
 * idle one within 10 s (PGSTAT_IDLE_INTERVAL): counters are read after this long without work (a
 * smoke run waits less: its figures are not read).
 */
const statsSettleMs = (context: BenchContext) => (context.smoke ? 1500 : 11_000);
/** How long the idle service's transactions are counted. */
const idleWindowMs = (context: BenchContext) => (context.smoke ? 3000 : 30_000);
/** The steady phase: documents a second, and for how long. */
const STEADY_RATE = 10;
const steadySeconds = (context: BenchContext) => (context.smoke ? 2 : 30);

/** Transactions committed or rolled back in the database so far. */
function transactions(databaseUrl: string): Promise<number> {
  return withClient(databaseUrl, async (client) => {
    const { rows } = await client.query<{ count: string }>(
      'select xact_commit + xact_rollback as count from pg_stat_database where datname = current_database()',
    );
    return Number(rows[0]!.count);
  });
}

export interface Run {
  documentsPerSecond: number;
  /** Database transactions per document (the idle loops' few during the run included). */
  transactionsPerDocument: number;
  seconds: number;
  ackToResult: { p50: number; p99: number };
  cpuMsPerDocument: { worker: number; intake: number; postgres: number };
  orderViolations: number;
  complete: boolean;
}

/** Acknowledgement time of each document by queueMessageId. */
function acknowledgements(): { record: (body: Buffer) => void; at: Map<string, number> } {
  const at = new Map<string, number>();
  return {
    at,
    record: (body) => {
      const queueMessageId = /"queueMessageId":"([^"]+)"/.exec(body.toString('utf8'))?.[1];
      if (queueMessageId) at.set(queueMessageId, now());
    },
  };
}

/** Per document of this round (acknowledged in it): result arrival − acknowledgement, and whether the result came before the acceptance callback. */
function latencies(arrivals: Array<[string, string, number]>, acks: Map<string, number>): { values: number[]; orderViolations: number } {
  const acceptance = new Map<string, number>();
  for (const [name, id, at] of arrivals) if (name === ACCEPTANCE) acceptance.set(id, at);
  const values: number[] = [];
  let orderViolations = 0;
  for (const [name, id, at] of arrivals) {
    const acked = acks.get(id);
    if (name !== RESULT || acked === undefined) continue;
    if (!(acceptance.get(id)! <= at)) orderViolations += 1;
    values.push(at - acked);
  }
  return { values, orderViolations };
}

export async function throughputRun(
  context: BenchContext,
  pids: { intake: number; worker: number; postmaster: number | undefined },
  databaseUrl: string,
  receiver: Receiver,
  clinic: BenchClinic,
  port: number,
  document: SignedDocument,
): Promise<Run> {
  await quiesce(receiver, 2000);
  await receiver.configure(clinic.signingSecret);
  const headers = clinicHeaders(clinic);
  const acks = acknowledgements();
  const cpu = async () => ({
    intake: await cpuMs(pids.intake),
    worker: await cpuMs(pids.worker),
    postgres: pids.postmaster ? await postgresCpuMs(pids.postmaster) : NaN,
  });
  const before = await cpu();
  const transactionsBefore = await transactions(databaseUrl);
  const started = now();
  await closedLoop({
    port,
    connections: CONNECTIONS,
    durationMs: 10 * 60_000,
    count: context.pipelineDocuments,
    onAnswer: (answer) => {
      expectAcknowledgement(answer);
      acks.record(answer.body);
    },
    next: () => ({ bytes: httpRequest('POST', '/api/RegisterDocument', headers, registerDocumentBody(document)) }),
  });
  const documents = acks.at.size;
  // Generous: the pipeline of before issue 10 took a quarter of a second per document.
  const complete = await waitForCallbacks(receiver, 2 * documents, Math.max(120_000, documents * 1000), 50);
  const after = await cpu();
  await sleep(statsSettleMs(context));
  const transactionsAfter = await transactions(databaseUrl);
  const arrivals = (await receiver.arrivals()).filter(([, id]) => acks.at.has(id));
  const last = Math.max(...arrivals.map(([, , at]) => at));
  const { values, orderViolations } = latencies(arrivals, acks.at);
  const seconds = (last - started) / 1000;
  return {
    documentsPerSecond: documents / seconds,
    transactionsPerDocument: (transactionsAfter - transactionsBefore) / documents,
    seconds,
    ackToResult: { p50: percentile(values, 0.5), p99: percentile(values, 0.99) },
    cpuMsPerDocument: {
      worker: (after.worker - before.worker) / documents,
      intake: (after.intake - before.intake) / documents,
      postgres: (after.postgres - before.postgres) / documents,
    },
    orderViolations,
    complete,
  };
}

/** One document at a time on an idle service: acknowledgement → result callback. */
async function idleRun(receiver: Receiver, clinic: BenchClinic, publicUrl: string, count: number): Promise<{ values: number[]; orderViolations: number }> {
  await quiesce(receiver, 2000);
  await receiver.configure(clinic.signingSecret);
  const document = signedDocument(xmlOfSize(ACK_DOCUMENT_BYTES));
  const acks = acknowledgements();
  for (let i = 0; i < count; i += 1) {
    const response = await fetch(`${publicUrl}/api/RegisterDocument`, { method: 'POST', headers: clinicHeaders(clinic), body: registerDocumentBody(document) });
    acks.record(Buffer.from(await response.arrayBuffer()));
    if (!(await waitForCallbacks(receiver, 2 * (i + 1), 30_000, 2))) throw new Error(`idle pipeline: document ${i + 1} did not come back within 30 s`);
    await sleep(20);
  }
  return latencies(await receiver.arrivals(), acks.at);
}

/**
 * GOST-signed documents sent at STEADY_RATE a second (each on its own schedule, not waiting for the
 * one before) until both callbacks of each arrived: the intake's and the worker's CPU per document.
 */
async function steadyRun(
  context: BenchContext,
  pids: { intake: number; worker: number },
  receiver: Receiver,
  clinic: BenchClinic,
  publicUrl: string,
  document: SignedDocument,
): Promise<{ documents: number; cpuMsPerDocument: number }> {
  await quiesce(receiver, 2000);
  await receiver.configure(clinic.signingSecret);
  const received = (await receiver.stats()).received;
  const documents = STEADY_RATE * steadySeconds(context);
  const intakeBefore = await cpuMs(pids.intake);
  const workerBefore = await cpuMs(pids.worker);
  await registerAtRate(publicUrl, clinic, document, documents, STEADY_RATE);
  if (!(await waitForCallbacks(receiver, received + 2 * documents, 60_000, 20))) throw new Error('steady pipeline: not every callback arrived within 60 s');
  const cpu = (await cpuMs(pids.intake)) - intakeBefore + ((await cpuMs(pids.worker)) - workerBefore);
  return { documents, cpuMsPerDocument: cpu / documents };
}

/**
 * The pipeline's processes on a fresh database named `databaseName`: the intake (`serve --only
 * emdr`), the worker (`serve --only worker`), a callback receiver and a clinic whose callbacks go to
 * it; `stop` ends the three processes.
 */
export async function startPipeline(context: BenchContext, databaseName: string) {
  const databaseUrl = await context.database.freshDatabase(databaseName);
  const dataKey = newDataKey();
  // Each process stopped, in reverse, when a later one fails to start (a failed bench left them running).
  const started: Array<{ stop(): Promise<void> }> = [];
  const stop = async () => {
    for (const child of [...started].reverse()) await child.stop();
  };
  try {
    const receiver = await startReceiver(context);
    started.push(receiver);
    const intake = await startService(context, databaseUrl, dataKey, { only: 'emdr' });
    started.push(intake);
    const worker = await startService(context, databaseUrl, dataKey, { only: 'worker' });
    started.push(worker);
    const clinic = await addClinic(context, intake, receiver.url);
    const pids = { intake: intake.pid, worker: worker.pid, postmaster: context.database.postmasterPid };
    return { databaseUrl, receiver, intake, clinic, pids, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

export async function pipeline(context: BenchContext): Promise<Measured[]> {
  const { databaseUrl, receiver, intake, clinic, pids, stop } = await startPipeline(context, 'bench_pipeline');
  try {
    const documents = Object.fromEntries(KINDS.map((kind) => [kind, signedDocument(xmlOfSize(ACK_DOCUMENT_BYTES), kind)])) as Record<
      SignatureKind,
      SignedDocument
    >;
    // Not counted, as the other scenarios' rounds warm up first: the first run on a fresh service and database paid for
    // compiling (the GOST WebAssembly tiers up while it runs) and for tables without statistics. A full run's first GOST
    // round gave 166 and 331 documents/s where its later rounds gave 394-528.
    const warmup = Math.min(context.pipelineDocuments, WARMUP_DOCUMENTS);
    const warmedUp: string[] = [];
    for (const kind of KINDS) {
      context.log(`pipeline: warm-up, ${warmup} ${kind}-signed documents (not counted)`);
      const run = await throughputRun({ ...context, pipelineDocuments: warmup }, pids, databaseUrl, receiver, clinic, intake.publicPort, documents[kind]);
      warmedUp.push(`${kind} ${round1(run.documentsPerSecond)} documents/s`);
    }
    await analyzeAsAutovacuumWould(databaseUrl);
    const runs: Record<SignatureKind, Run[]> = { gost: [], rsa: [] };
    rounds: for (let round = 0; round < context.rounds; round += 1) {
      for (const kind of round % 2 === 0 ? KINDS : [...KINDS].reverse()) {
        context.log(`pipeline: ${context.pipelineDocuments} ${kind}-signed documents, round ${round + 1}`);
        const run = await throughputRun(context, pids, databaseUrl, receiver, clinic, intake.publicPort, documents[kind]);
        runs[kind].push(run);
        // A round that did not finish would leave its callbacks to the next: stop there.
        if (!run.complete) break rounds;
      }
    }
    const idleCount = context.smoke ? 5 : 50;
    context.log(`pipeline: ${idleCount} documents one at a time (idle)`);
    const idle = await idleRun(receiver, clinic, `http://127.0.0.1:${intake.publicPort}`, idleCount);
    context.log(`pipeline: ${STEADY_RATE} documents a second for ${steadySeconds(context)} s`);
    const steady = await steadyRun(context, pids, receiver, clinic, `http://127.0.0.1:${intake.publicPort}`, documents.gost);
    const stats = await receiver.stats();
    context.log(`pipeline: counting the idle service's transactions for ${idleWindowMs(context) / 1000} s`);
    const idleTransactionsPerSecond = await idleTransactions(context, databaseUrl);
    const measured = outcome(context, runs, { idle, steady }, idleTransactionsPerSecond, stats, context.database.postmasterPid !== undefined);
    measured.notes.unshift(`warm-up before the rounds, not counted: ${warmup} documents of each kind (${warmedUp.join(', ')})`);
    return [measured];
  } finally {
    await stop();
  }
}

/**
 * The statistics autovacuum gives a running database within its naptime (a minute; a round is
 * shorter). Without them the generic plans serve's connections cached on the warm-up's first
 * statements, made while the tables were nearly empty, stay while the tables grow to thousands of
 * rows: a settle's lookup of the callback before it and a fair claim's lock by ids went on as
 * sequential scans of emdr_callbacks and emdr_requests (auto_explain: 4,544 rows read for 4, and
 * 2,278 rows filtered out for 22, near the end of a run), a cost no database with statistics pays.
 */
export async function analyzeAsAutovacuumWould(databaseUrl: string): Promise<void> {
  await withClient(databaseUrl, (client) => client.query('analyze'));
}

/** Transactions per second of the service with nothing to do (its measurement's own two included, negligible). */
async function idleTransactions(context: BenchContext, databaseUrl: string): Promise<number> {
  await sleep(statsSettleMs(context));
  const before = await transactions(databaseUrl);
  await sleep(idleWindowMs(context));
  return ((await transactions(databaseUrl)) - before) / (idleWindowMs(context) / 1000);
}

const RSA_REFERENCE = 'pipeline without the GOST arithmetic';

function outcome(
  context: BenchContext,
  allRuns: Record<SignatureKind, Run[]>,
  { idle, steady }: { idle: { values: number[]; orderViolations: number }; steady: { documents: number; cpuMsPerDocument: number } },
  idleTransactionsPerSecond: number,
  stats: { badSignatures: number; duplicates: number },
  postgresMeasured: boolean,
): Measured {
  const runs = allRuns.gost;
  const pick = (get: (run: Run) => number, of = runs) => of.map((run) => round1(get(run)));
  const cpu = (get: (run: Run) => number, of = runs) => of.map((run) => +get(run).toFixed(2));
  const throughputOf = (of: Run[], signed: string): Row => ({
    metric: `documents/s, ${context.pipelineDocuments} ${signed} documents, both callbacks delivered`,
    unit: 'documents/s',
    service: median(pick((run) => run.documentsPerSecond, of)),
    rounds: { service: pick((run) => run.documentsPerSecond, of) },
  });
  const workerCpuOf = (of: Run[], signed: string): Row => ({
    metric: `worker CPU per document, ${signed}`,
    unit: 'ms',
    service: median(cpu((run) => run.cpuMsPerDocument.worker, of)),
    rounds: { service: cpu((run) => run.cpuMsPerDocument.worker, of) },
  });
  const throughput = throughputOf(runs, 'GOST-256-signed');
  throughput.target = { text: '≥ 500', met: throughput.service >= 500 };
  const rsaThroughput = { ...throughputOf(allRuns.rsa, 'RSA-signed'), reference: RSA_REFERENCE };
  const workerCpu = workerCpuOf(runs, 'GOST-256-signed');
  workerCpu.target = { text: '≤ 2 ms', met: workerCpu.service <= 2 };
  const rsaWorkerCpu = { ...workerCpuOf(allRuns.rsa, 'RSA-signed'), reference: RSA_REFERENCE };
  const serviceCpuPerRun = cpu((run) => run.cpuMsPerDocument.worker + run.cpuMsPerDocument.intake);
  const serviceCpu: Row = {
    metric: 'service CPU per document (intake + worker), GOST-256-signed',
    unit: 'ms',
    service: median(serviceCpuPerRun),
    rounds: { service: serviceCpuPerRun },
  };
  serviceCpu.target = { text: '≤ 1.5 ms', met: serviceCpu.service <= 1.5 };
  const steadyCpu: Row = {
    metric: `service CPU per document at a steady ${STEADY_RATE} documents/s (${steady.documents} documents), GOST-256-signed`,
    unit: 'ms',
    service: +steady.cpuMsPerDocument.toFixed(2),
  };
  steadyCpu.target = { text: `≤ 2× the full-load figure (${(2 * serviceCpu.service).toFixed(2)} ms)`, met: steadyCpu.service <= 2 * serviceCpu.service };
  const idleP50: Row = { metric: 'ack → result p50, idle (one document at a time)', unit: 'ms', service: round1(percentile(idle.values, 0.5)) };
  idleP50.target = { text: '≤ 50 ms', met: idleP50.service <= 50 };
  const rows: Row[] = [
    throughput,
    rsaThroughput,
    workerCpu,
    rsaWorkerCpu,
    { metric: 'intake CPU per document, GOST-256-signed', unit: 'ms', service: median(cpu((run) => run.cpuMsPerDocument.intake)) },
    serviceCpu,
    steadyCpu,
    ...(postgresMeasured
      ? [{ metric: 'PostgreSQL CPU per document, GOST-256-signed', unit: 'ms', service: median(cpu((run) => run.cpuMsPerDocument.postgres)) }]
      : []),
    { metric: 'ack → result p50 under that load, GOST-256-signed', unit: 'ms', service: median(pick((run) => run.ackToResult.p50)) },
    { metric: 'ack → result p99 under that load, GOST-256-signed', unit: 'ms', service: median(pick((run) => run.ackToResult.p99)) },
    idleP50,
    { metric: 'ack → result p99, idle', unit: 'ms', service: round1(percentile(idle.values, 0.99)) },
    {
      metric: 'database transactions per document, GOST-256-signed',
      unit: 'transactions',
      service: median(cpu((run) => run.transactionsPerDocument)),
      rounds: { service: cpu((run) => run.transactionsPerDocument) },
    },
    { metric: 'database transactions per second, idle service (intake and worker)', unit: 'transactions/s', service: round1(idleTransactionsPerSecond) },
  ];
  const notes: string[] = [];
  const violations = [...runs, ...allRuns.rsa].reduce((sum, run) => sum + run.orderViolations, 0) + idle.orderViolations;
  notes.push(
    `result callbacks that arrived before their acceptance callback: ${violations}; bad signatures: ${stats.badSignatures}; duplicate deliveries: ${stats.duplicates}`,
  );
  notes.push(
    'GOST rows: every document signed with one key (as a clinic signs with its certificate), so after its second document each worker thread verifies with that key\'s precomputed table; a key seen once costs more (scripts/bench/signature-cost.ts, "new key each document").',
  );
  if ([...runs, ...allRuns.rsa].some((run) => !run.complete)) notes.push('NOT every callback arrived within the time limit in some round');
  return {
    name: 'pipeline',
    title: 'Pipeline: RegisterDocument → acceptance callback → registration → result callback',
    rows,
    chart: {
      throughput: { label: 'pipeline', unit: 'documents/s', service: throughput.service },
      latency: { label: 'pipeline ack→result p50 idle', unit: 'ms', service: idleP50.service },
    },
    notes,
  };
}
