/**
 * Which statements the pipeline sends per document at a steady rate (issue 24, item 4): intake and
 * workers as the pipeline scenario starts them, each behind its own PostgreSQL wire proxy that names
 * every statement (test/support/pg-wire.ts); 20 documents to warm up, then --documents at --rate a
 * second until both callbacks of each arrived, and the statements of that phase tallied per document.
 *
 *   node --import tsx scripts/bench/steady-statements.ts [--rate 10] [--documents 100]
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { statementCounter } from '../../test/support/pg-wire.js';
import { startTcpProxy } from '../../test/support/tcp-proxy.js';
import { commandLine } from '../lib/command-line.js';
import { startDatabaseServer } from './lib/database.js';
import { registerDocument, signedDocument, xmlOfSize } from './lib/documents.js';
import type { BenchContext } from './lib/scenario.js';
import { addClinic, newDataKey, startReceiver, startService } from './lib/service.js';
import { callbacksArrived } from './scenarios/pipeline.js';

const HELP = `usage: tsx scripts/bench/steady-statements.ts [--rate N] [--documents N]

Which statements the pipeline (intake and workers, each behind a PostgreSQL wire proxy) sends per
document at a steady rate: 20 documents to warm up, then --documents at --rate a second, tallied.

options:
  --rate N       documents a second (default 10)
  --documents N  documents measured (default 100)
  -h, --help     this text

example: tsx scripts/bench/steady-statements.ts --rate 10 --documents 50`;

const { values } = commandLine('steady-statements', HELP, {
  options: { rate: { type: 'string', default: '10' }, documents: { type: 'string', default: '100' } },
});
const rate = Number(values.rate);
const documents = Number(values.documents);
const benchDir = import.meta.dirname;
const database = await startDatabaseServer();
const context = {
  root: `${benchDir}/../..`,
  benchDir,
  database,
  profileDir: undefined,
  nodeOptions: [],
  limits: false,
  log: console.error,
} as unknown as BenchContext;
const databaseUrl = await database.freshDatabase('bench_statements');
const counters = { intake: statementCounter(), worker: statementCounter() };
const proxied = async (counter: ReturnType<typeof statementCounter>) => {
  const direct = new URL(databaseUrl);
  const proxy = await startTcpProxy(direct.hostname, Number(direct.port), () => counter.connection());
  direct.port = String(proxy.port);
  return { url: direct.toString(), proxy };
};
const intakeDb = await proxied(counters.intake);
const workerDb = await proxied(counters.worker);
const dataKey = newDataKey();
const receiver = await startReceiver(context);
const intake = await startService(context, intakeDb.url, dataKey, { only: 'emdr' });
const worker = await startService(context, workerDb.url, dataKey, { only: 'worker' });
try {
  const clinic = await addClinic(context, intake, receiver.url);
  await receiver.configure(clinic.signingSecret);
  const document = signedDocument(xmlOfSize(10 * 1024), 'gost');
  const send = () => registerDocument(`http://127.0.0.1:${intake.publicPort}`, clinic, document);
  for (let i = 0; i < 20; i += 1) await send();
  await callbacksArrived(receiver, 40, 60_000);
  await sleep(2000);
  const before = { intake: counters.intake.count, worker: counters.worker.count };
  const started = performance.now();
  const sent: Promise<void>[] = [];
  for (let i = 0; i < documents; i += 1) {
    const due = started + (i * 1000) / rate - performance.now();
    if (due > 0) await sleep(due);
    sent.push(send());
  }
  await Promise.all(sent);
  await callbacksArrived(receiver, 40 + 2 * documents, 60_000);
  for (const who of ['intake', 'worker'] as const) {
    const names = counters[who].sent.slice(before[who], counters[who].count);
    const tally = new Map<string, number>();
    for (const name of names) tally.set(name, (tally.get(name) ?? 0) + 1);
    console.log(`${who}: ${(names.length / documents).toFixed(2)} statements per document`);
    for (const [name, count] of [...tally].sort((a, b) => b[1] - a[1])) console.log(`  ${(count / documents).toFixed(2)}  ${name}`);
  }
} finally {
  await intake.stop();
  await worker.stop();
  await receiver.stop();
  await intakeDb.proxy.close();
  await workerDb.proxy.close();
  await database.stop();
}
