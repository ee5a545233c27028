/**
 * What one admitted large RegisterDocument costs (M4's abuser inside its limits), in CPU time, which
 * a shared machine's load does not change as it changes latencies: serve's event loop thread, its
 * other threads (document checks, libuv, V8's helpers) and PostgreSQL, from the request's first
 * byte to its acknowledgement, and from there to its first callback, per document, one document at
 * a time. By default each is the same body, as M4's abuser sends it (after the first, identical
 * retries: stored once, checked once); with --fresh each has a localUid of its own (stored and
 * checked each).
 *
 *   tsx scripts/bench/hostile/large-body-cost.ts [--documents N] [--mib M] [--fresh] [--root DIR] [--profile DIR]
 */
import fs from 'node:fs/promises';
import { randomBytes, randomUUID } from 'node:crypto';
import { largeXml, registerBody } from '../../../test/support/emdr.js';
import { commandLine } from '../../lib/command-line.js';
import { startDatabaseServer } from '../lib/database.js';
import { postgresCpuMs, startServe } from '../lib/processes.js';
import { postWithNodeHttp, type NodeHttpAnswer } from '../../../test/support/raw-http.js';
import { addClinic, startReceiver } from './honest.js';

const HELP = `usage: tsx scripts/bench/hostile/large-body-cost.ts [options]

What one admitted large RegisterDocument costs in CPU time (serve's event loop, its other threads,
PostgreSQL), to its acknowledgement and to its first callback, per document, one at a time: by
default the same body each time (identical retries, as M4's abuser sends), or --fresh ones.

options:
  --documents N  documents sent (default 3)
  --mib M        size of the document in MiB (default 18)
  --fresh        a localUid of its own for each document (stored and checked each)
  --root DIR     the checkout whose serve is measured (default the working directory)
  --profile DIR  node --cpu-prof of serve into DIR
  -h, --help     this text

example: tsx scripts/bench/hostile/large-body-cost.ts --documents 3 --mib 24`;

const { values } = commandLine('large-body-cost', HELP, {
  options: {
    documents: { type: 'string', default: '3' },
    mib: { type: 'string', default: '18' },
    fresh: { type: 'boolean', default: false },
    root: { type: 'string', default: process.cwd() },
    profile: { type: 'string' },
  },
});
const documents = Number(values.documents);

/** CPU ms of each thread of `pid` by its name (the main thread as `loop`). */
async function threadsCpu(pid: number): Promise<Record<string, number>> {
  const totals: Record<string, number> = {};
  for (const tid of await fs.readdir(`/proc/${pid}/task`).catch(() => [] as string[])) {
    const stat = await fs.readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8').catch(() => '');
    if (!stat) continue;
    const name =
      Number(tid) === pid
        ? 'loop'
        : stat
            .slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
            .replace(/[0-9]+$/, '')
            .trim();
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    totals[name] = (totals[name] ?? 0) + ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  }
  return totals;
}

function post(port: number, clinic: { businessId: string; user: string; token: string }, body: Buffer): Promise<NodeHttpAnswer> {
  return postWithNodeHttp(`http://127.0.0.1:${port}/api/RegisterDocument`, { agent: false, headers: { ...clinic, 'content-type': 'application/json' } }, body);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const database = await startDatabaseServer();
const receiver = await startReceiver();
const key = randomBytes(32).toString('hex');
const env = {
  DATABASE_URL: await database.freshDatabase('large_body_cost'),
  DATA_KEY: key,
  USER_SIGN_KEY: key,
  CALLBACK_ALLOWED_NETWORKS: '127.0.0.0/8',
  BYTE_QUOTA: String(100 * 1024 * 1024 * 1024),
};
const service = await startServe(values.root, env, { nodeOptions: values.profile ? ['--cpu-prof', `--cpu-prof-dir=${values.profile}`] : [] });
try {
  const clinic = await addClinic(values.root, env, receiver.url);
  const template = registerBody({ document: largeXml(Number(values.mib) * 1024 * 1024).toString('base64') });
  const body = () => Buffer.from(JSON.stringify(values.fresh ? { ...template, localUid: randomUUID() } : template));
  const large = body();
  const sample = async () => ({ threads: await threadsCpu(service.pid), postgres: database.postmasterPid ? await postgresCpuMs(database.postmasterPid) : 0 });
  // Warm up: connections, prepared statements, a check worker's modules, one large body's path.
  for (const body of [Buffer.from(JSON.stringify(registerBody())), large]) {
    const { text } = await post(service.publicPort, clinic, body);
    const id = (JSON.parse(text) as { queueMessageId: string }).queueMessageId;
    while (!receiver.firstCallbackAt.has(id)) await sleep(50);
  }
  await sleep(1000);
  // One at a time: each document's intake (to its acknowledgement) apart from its checks and callback (after it).
  const totals = { toAck: new Map<string, number>(), toCallback: new Map<string, number>() };
  const add = (into: Map<string, number>, from: Awaited<ReturnType<typeof sample>>, to: Awaited<ReturnType<typeof sample>>) => {
    for (const name of Object.keys(to.threads)) into.set(`thread ${name}`, (into.get(`thread ${name}`) ?? 0) + to.threads[name]! - (from.threads[name] ?? 0));
    into.set('postgres', (into.get('postgres') ?? 0) + to.postgres - from.postgres);
  };
  for (let n = 0; n < documents; n += 1) {
    const next = values.fresh ? body() : large;
    const before = await sample();
    const { status, text } = await post(service.publicPort, clinic, next);
    const acknowledged = await sample();
    if (status !== 200) throw new Error(`RegisterDocument answered ${status}: ${text.slice(0, 300)}`);
    const id = (JSON.parse(text) as { queueMessageId: string }).queueMessageId;
    while (!receiver.firstCallbackAt.has(id) && values.fresh) await sleep(20);
    await sleep(300);
    add(totals.toAck, before, acknowledged);
    add(totals.toCallback, acknowledged, await sample());
  }
  console.log(
    `${documents} documents of ${large.length} bytes (body)${values.fresh ? ', each with its own localUid' : ', the same body each time'}; CPU ms per document (/proc, 10 ms ticks)`,
  );
  console.log('| where | to the acknowledgement | acknowledgement to first callback (+300 ms) | total |');
  console.log('|---|---|---|---|');
  for (const name of [...new Set([...totals.toAck.keys(), ...totals.toCallback.keys()])].sort()) {
    const toAck = (totals.toAck.get(name) ?? 0) / documents;
    const toCallback = (totals.toCallback.get(name) ?? 0) / documents;
    if (toAck + toCallback > 0) console.log(`| ${name} | ${toAck.toFixed(0)} | ${toCallback.toFixed(0)} | ${(toAck + toCallback).toFixed(0)} |`);
  }
} finally {
  await service.stop();
  await receiver.close();
  await database.stop();
}
