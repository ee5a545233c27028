import { setTimeout as sleep } from 'node:timers/promises';
import { closedLoop, httpRequest } from '../lib/http-load.js';
import { registerDocumentBody, signedDocument, xmlOfSize } from '../lib/documents.js';
import { cpuMs, postgresCpuMs } from '../lib/processes.js';
import { median, round1, type BenchContext, type Measured, type Row } from '../lib/scenario.js';
import { addClinic, clinicHeaders, newDataKey, startReceiver, startService, type BenchClinic, type Receiver } from '../lib/service.js';
import { ACK_DOCUMENT_BYTES, expectAcknowledgement } from './register-document.js';

/**
 * The whole pipeline of RegisterDocument: N documents of 10 KiB sent as fast as the intake takes
 * them (16 connections), until both callbacks of every one arrived at the clinic's receiver
 * (signatures checked there). Intake (`serve --only emdr`) and workers (`serve --only worker`) run as
 * two processes, so the worker's CPU per document is its own. Then, with the service idle, documents
 * one at a time: acknowledgement → result callback.
 */

const CONNECTIONS = 16;
const ACCEPTANCE = 'SendRegisterDocumentResponse';
const RESULT = 'SendRegisterDocumentResultResponse';

const now = () => performance.timeOrigin + performance.now();
const percentile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};

async function waitForCallbacks(receiver: Receiver, count: number, timeoutMs: number, pollMs: number): Promise<boolean> {
  const ends = Date.now() + timeoutMs;
  while (Date.now() < ends) {
    if ((await receiver.stats()).received >= count) return true;
    await sleep(pollMs);
  }
  return false;
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

interface Run {
  documentsPerSecond: number;
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

async function throughputRun(context: BenchContext, pids: { intake: number; worker: number; postmaster: number | undefined }, receiver: Receiver, clinic: BenchClinic, port: number): Promise<Run> {
  await quiesce(receiver, 2000);
  await receiver.configure(clinic.signingSecret);
  const document = signedDocument(xmlOfSize(ACK_DOCUMENT_BYTES));
  const headers = clinicHeaders(clinic);
  const acks = acknowledgements();
  const cpu = async () => ({ intake: await cpuMs(pids.intake), worker: await cpuMs(pids.worker), postgres: pids.postmaster ? await postgresCpuMs(pids.postmaster) : NaN });
  const before = await cpu();
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
  const arrivals = (await receiver.arrivals()).filter(([, id]) => acks.at.has(id));
  const last = Math.max(...arrivals.map(([, , at]) => at));
  const { values, orderViolations } = latencies(arrivals, acks.at);
  const seconds = (last - started) / 1000;
  return {
    documentsPerSecond: documents / seconds,
    seconds,
    ackToResult: { p50: percentile(values, 0.5), p99: percentile(values, 0.99) },
    cpuMsPerDocument: { worker: (after.worker - before.worker) / documents, intake: (after.intake - before.intake) / documents, postgres: (after.postgres - before.postgres) / documents },
    orderViolations,
    complete,
  };
}

/** One document at a time on an idle service: acknowledgement → result callback. */
async function idleRun(context: BenchContext, receiver: Receiver, clinic: BenchClinic, publicUrl: string, count: number): Promise<{ values: number[]; orderViolations: number }> {
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

export async function pipeline(context: BenchContext): Promise<Measured[]> {
  const databaseUrl = await context.database.freshDatabase('bench_pipeline');
  const dataKey = newDataKey();
  const receiver = await startReceiver(context);
  const intake = await startService(context, databaseUrl, dataKey, { only: 'emdr' });
  const worker = await startService(context, databaseUrl, dataKey, { only: 'worker' });
  try {
    const clinic = await addClinic(context, intake, receiver.url);
    const runs: Run[] = [];
    for (let round = 0; round < context.rounds; round += 1) {
      context.log(`pipeline: ${context.pipelineDocuments} documents, round ${round + 1}`);
      runs.push(await throughputRun(context, { intake: intake.pid, worker: worker.pid, postmaster: context.database.postmasterPid }, receiver, clinic, intake.publicPort));
      // A round that did not finish would leave its callbacks to the next: stop there.
      if (!runs.at(-1)!.complete) break;
    }
    const idleCount = context.smoke ? 5 : 50;
    context.log(`pipeline: ${idleCount} documents one at a time (idle)`);
    const idle = await idleRun(context, receiver, clinic, `http://127.0.0.1:${intake.publicPort}`, idleCount);
    const stats = await receiver.stats();
    return [outcome(context, runs, idle, stats, context.database.postmasterPid !== undefined)];
  } finally {
    await intake.stop();
    await worker.stop();
    await receiver.stop();
  }
}

function outcome(context: BenchContext, runs: Run[], idle: { values: number[]; orderViolations: number }, stats: { badSignatures: number; duplicates: number }, postgresMeasured: boolean): Measured {
  const pick = (get: (run: Run) => number) => runs.map((run) => round1(get(run)));
  const throughput: Row = { metric: `documents/s, ${context.pipelineDocuments} documents, both callbacks delivered`, unit: 'documents/s', service: median(pick((run) => run.documentsPerSecond)), rounds: { service: pick((run) => run.documentsPerSecond) } };
  throughput.target = { text: '≥ 500', met: throughput.service >= 500 };
  const workerCpu: Row = { metric: 'worker CPU per document', unit: 'ms', service: median(runs.map((run) => +run.cpuMsPerDocument.worker.toFixed(2))), rounds: { service: runs.map((run) => +run.cpuMsPerDocument.worker.toFixed(2)) } };
  workerCpu.target = { text: '≤ 2 ms', met: workerCpu.service <= 2 };
  const idleP50: Row = { metric: 'ack → result p50, idle (one document at a time)', unit: 'ms', service: round1(percentile(idle.values, 0.5)) };
  idleP50.target = { text: '≤ 50 ms', met: idleP50.service <= 50 };
  const rows: Row[] = [
    throughput,
    workerCpu,
    { metric: 'intake CPU per document', unit: 'ms', service: median(runs.map((run) => +run.cpuMsPerDocument.intake.toFixed(2))) },
    ...(postgresMeasured ? [{ metric: 'PostgreSQL CPU per document', unit: 'ms', service: median(runs.map((run) => +run.cpuMsPerDocument.postgres.toFixed(2))) }] : []),
    { metric: 'ack → result p50 under that load', unit: 'ms', service: median(pick((run) => run.ackToResult.p50)) },
    { metric: 'ack → result p99 under that load', unit: 'ms', service: median(pick((run) => run.ackToResult.p99)) },
    idleP50,
    { metric: 'ack → result p99, idle', unit: 'ms', service: round1(percentile(idle.values, 0.99)) },
  ];
  const notes: string[] = [];
  const violations = runs.reduce((sum, run) => sum + run.orderViolations, 0) + idle.orderViolations;
  notes.push(`result callbacks that arrived before their acceptance callback: ${violations}; bad signatures: ${stats.badSignatures}; duplicate deliveries: ${stats.duplicates}`);
  if (runs.some((run) => !run.complete)) notes.push('NOT every callback arrived within the time limit in some round');
  return {
    name: 'pipeline',
    title: 'Pipeline: RegisterDocument → acceptance callback → registration → result callback',
    rows,
    chart: { throughput: { label: 'pipeline', unit: 'documents/s', service: throughput.service }, latency: { label: 'pipeline ack→result p50 idle', unit: 'ms', service: idleP50.service } },
    notes,
  };
}
