/**
 * Which PostgreSQL queue carries the pipeline (issue 10): the same three-stage workload on
 *   pgboss10-polling  pg-boss 10 as the pipeline used it: one job per fetch, 0.5 s polling, 2/2/4 workers
 *   pgboss10-batch    pg-boss 10 with batches of 50 and notifyWorker to skip the polling sleep
 *   pgboss12          pg-boss 12: LISTEN/NOTIFY, batches of 50 with burstWhenBatchFull, 2 workers per queue,
 *                     transactional workers (stage writes, next jobs and completion in one transaction)
 *   rows-async-claim  rows (below), the claim committed without waiting for the WAL flush (synchronous_commit off)
 *   rows              the work rows are the queue: a batch claimed with FOR UPDATE SKIP LOCKED and a lease
 *                     column in one statement, the stage's writes in one statement that also hands the row
 *                     to the next stage; workers woken in process and by NOTIFY
 * Each stage of an item updates the item's row and hands it on, in one transaction, as the
 * pipeline's stages do. Prints one JSON line per variant: items/s with N items waiting, Node and
 * PostgreSQL CPU per item, and the latency of one item through all stages when idle.
 *
 *   tsx scripts/bench/queue-choice.ts --pg-boss-10 node_modules/pg-boss/src/index.js \
 *       --pg-boss-12 /tmp/pgboss12/node_modules/pg-boss/dist/index.js [--items N] [variant ...]
 * (pg-boss 12 needs its own install: npm install --prefix /tmp/pgboss12 pg-boss@12.35.0)
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import pg from 'pg';
import { commandLine } from '../lib/command-line.js';
import { startDatabaseServer } from './lib/database.js';
import { postgresCpuMs } from './lib/processes.js';

const HELP = `usage: tsx scripts/bench/queue-choice.ts [--pg-boss-10 FILE] [--pg-boss-12 FILE] [--items N] [variant ...]

Which PostgreSQL queue carries the pipeline: the same three-stage workload on each variant; one JSON
line per variant (items/s, Node and PostgreSQL CPU per item, one item's latency when idle).
Variants (default all; the pg-boss ones only with their module given):
  rows-async-claim, rows, pgboss12, pgboss10-batch, pgboss10-polling

options:
  --pg-boss-10 FILE  pg-boss 10's entry module (e.g. node_modules/pg-boss/src/index.js)
  --pg-boss-12 FILE  pg-boss 12's entry module (its own install: npm install --prefix /tmp/pgboss12 pg-boss@12.35.0)
  --items N          items waiting per variant (default 3000)
  -h, --help         this text

example: tsx scripts/bench/queue-choice.ts --items 1000 rows rows-async-claim`;

const { values, positionals } = commandLine('queue-choice', HELP, {
  options: { 'pg-boss-10': { type: 'string' }, 'pg-boss-12': { type: 'string' }, items: { type: 'string', default: '3000' } },
  allowPositionals: true,
});
const ITEMS = Number(values.items);
const STAGES = 3;
const PAYLOAD = 'x'.repeat(300);

interface Variant {
  /** Starts the workers; `done` is called with the ids that finished the last stage. */
  start(done: (ids: string[]) => void): Promise<void>;
  /** Adds items (and whatever starts their first stage), committed when it resolves. */
  add(ids: string[]): Promise<void>;
  stop(): Promise<void>;
}

async function createItems(pool: pg.Pool): Promise<void> {
  await pool.query(
    `create table if not exists qc_items (id uuid primary key, stage int not null default 0, payload text not null, available_at timestamptz not null default now(), updated_at timestamptz not null default now())`,
  );
  await pool.query(`create index if not exists qc_items_work on qc_items (available_at) where stage < ${STAGES}`);
}

const insertItems = (client: pg.Pool | pg.PoolClient, ids: string[]) =>
  client.query(`insert into qc_items (id, payload) select unnest($1::uuid[]), $2`, [ids, PAYLOAD]);
const advance = (client: { query: pg.Pool['query'] }, ids: string[], stage: number) =>
  client.query(`update qc_items set stage = $2, updated_at = now() where id = any($1::uuid[])`, [ids, stage]);

async function pgBossVariant(modulePath: string, url: string, pool: pg.Pool, mode: 'polling10' | 'batch10' | 'notify12'): Promise<Variant> {
  const module = await import(path.resolve(modulePath));
  const PgBoss = module.PgBoss ?? module.default;
  const notify = mode === 'notify12';
  const boss = new PgBoss({ connectionString: url, max: 10, schedule: false, ...(notify ? { useListenNotify: true } : {}) });
  boss.on('error', (error: Error) => console.error('pg-boss', error.message));
  const queues = Array.from({ length: STAGES }, (_, stage) => `qc-stage-${stage}`);
  const workerIds: string[][] = queues.map(() => []);
  return {
    async start(done) {
      await boss.start();
      for (const name of queues) await boss.createQueue(name, notify ? { notify: true } : {});
      for (let stage = 0; stage < STAGES; stage += 1) {
        const next = queues[stage + 1];
        const handle = async (jobs: Array<{ data: { id: string } }>, tx?: { executeSql(text: string, values: unknown[]): Promise<unknown> }) => {
          const ids = jobs.map((job) => job.data.id);
          if (tx) {
            await tx.executeSql(`update qc_items set stage = $2, updated_at = now() where id = any($1::uuid[])`, [ids, stage + 1]);
            if (next)
              await boss.insert(
                next,
                ids.map((id) => ({ data: { id } })),
                { db: tx },
              );
          } else {
            const client = await pool.connect();
            try {
              await client.query('begin');
              await advance(client, ids, stage + 1);
              const db = { executeSql: (text: string, params: unknown[]) => client.query(text, params) };
              if (next && mode === 'batch10')
                await boss.insert(
                  ids.map((id) => ({ name: next, data: { id } })),
                  { db },
                );
              else if (next) for (const id of ids) await boss.send(next, { id }, { db });
              await client.query('commit');
            } finally {
              client.release();
            }
          }
          if (!next) done(ids);
          else if (mode === 'batch10') for (const id of workerIds[stage + 1]!) boss.notifyWorker(id);
        };
        if (mode === 'polling10') {
          for (let i = 0; i < (stage === STAGES - 1 ? 4 : 2); i += 1)
            workerIds[stage]!.push(await boss.work(queues[stage], { batchSize: 1, pollingIntervalSeconds: 0.5 }, handle));
        } else if (mode === 'batch10') {
          for (let i = 0; i < 2; i += 1) {
            const id: string = await boss.work(queues[stage], { batchSize: 50, pollingIntervalSeconds: 0.5 }, async (jobs: Array<{ data: { id: string } }>) => {
              await handle(jobs);
              // A full batch means more is waiting: fetch again without the polling sleep.
              if (jobs.length === 50) boss.notifyWorker(id);
            });
            workerIds[stage]!.push(id);
          }
        } else {
          await boss.work(queues[stage], { batchSize: 50, burstWhenBatchFull: true, localConcurrency: 2, transactional: true }, handle);
        }
      }
    },
    async add(ids) {
      const client = await pool.connect();
      try {
        await client.query('begin');
        await insertItems(client, ids);
        const db = { executeSql: (text: string, params: unknown[]) => client.query(text, params) };
        // pg-boss 12 takes insert(name, jobs); pg-boss 10 insert(jobs, each naming its queue).
        if (notify)
          await boss.insert(
            queues[0],
            ids.map((id) => ({ data: { id } })),
            { db },
          );
        else
          await boss.insert(
            ids.map((id) => ({ name: queues[0], data: { id } })),
            { db },
          );
        await client.query('commit');
      } finally {
        client.release();
      }
      if (mode === 'batch10') for (const id of workerIds[0]!) boss.notifyWorker(id);
    },
    stop: () => boss.stop({ graceful: false, wait: true }),
  };
}

/** The work rows as the queue (what src/work/ does for the pipeline), reduced to this workload. */
function rowsVariant(url: string, pool: pg.Pool, asyncClaims: boolean): Variant {
  // A lease needs no durability (a lost one only makes the row claimable again): with asyncClaims the
  // claim commits without waiting for the WAL flush.
  const claims = asyncClaims ? new pg.Pool({ connectionString: url, max: 6, options: '-c synchronous_commit=off' }) : pool;
  claims.on('error', () => undefined);
  const wakers: Array<() => void> = [];
  let stopping = false;
  const loops: Promise<void>[] = [];
  const listener = new pg.Client({ connectionString: url });
  const claim = (stage: number) =>
    claims.query<{ id: string }>(
      `with claimed as (select id from qc_items where stage = $1 and available_at <= now() order by available_at limit 50 for update skip locked)
       update qc_items i set available_at = now() + interval '30 seconds' from claimed c where i.id = c.id returning i.id, i.payload`,
      [stage],
    );
  return {
    async start(done) {
      await listener.connect();
      await listener.query('listen qc_work');
      listener.on('notification', () => wakers[0]?.());
      for (let stage = 0; stage < STAGES; stage += 1) {
        for (let copy = 0; copy < 2; copy += 1) {
          let wake: () => void = () => undefined;
          const index = wakers.length;
          wakers.push(() => wake());
          void index;
          loops.push(
            (async () => {
              while (!stopping) {
                const { rows } = await claim(stage);
                if (rows.length > 0) {
                  const ids = rows.map((row) => row.id);
                  await pool.query(`update qc_items set stage = $2, available_at = now(), updated_at = now() where id = any($1::uuid[]) and stage = $3`, [
                    ids,
                    stage + 1,
                    stage,
                  ]);
                  if (stage + 1 < STAGES) for (const waker of wakers.slice((stage + 1) * 2, (stage + 2) * 2)) waker();
                  else done(ids);
                }
                if (rows.length < 50)
                  await new Promise<void>((resolve) => {
                    const timer = setTimeout(resolve, 1000);
                    wake = () => {
                      clearTimeout(timer);
                      resolve();
                    };
                  });
              }
            })(),
          );
        }
      }
    },
    async add(ids) {
      await insertItems(pool, ids);
      await pool.query(`select pg_notify('qc_work', '')`);
    },
    async stop() {
      stopping = true;
      for (const waker of wakers) waker();
      await Promise.all(loops);
      await listener.end();
      if (claims !== pool) await claims.end();
    },
  };
}

async function measure(name: string, make: () => Promise<Variant>, pool: pg.Pool, postmasterPid: number | undefined, items: number): Promise<void> {
  await pool.query('truncate qc_items');
  const variant = await make();
  let finished = 0;
  let onFinished: (() => void) | undefined;
  const waiting = new Map<string, () => void>();
  await variant.start((ids) => {
    finished += ids.length;
    for (const id of ids) waiting.get(id)?.();
    if (finished >= items) onFinished?.();
  });
  // Idle latency first: one item at a time through every stage.
  const latencies: number[] = [];
  for (let i = 0; i < 20; i += 1) {
    const id = randomUUID();
    const arrived = new Promise<void>((resolve) => waiting.set(id, resolve));
    const started = performance.now();
    await variant.add([id]);
    await arrived;
    latencies.push(performance.now() - started);
  }
  finished = 0;
  const ids = Array.from({ length: items }, () => randomUUID());
  const postgresCpu = async () => (postmasterPid ? postgresCpuMs(postmasterPid) : NaN);
  const cpuBefore = { node: process.cpuUsage(), postgres: await postgresCpu() };
  const started = performance.now();
  const all = new Promise<void>((resolve) => (onFinished = resolve));
  for (let start = 0; start < items; start += 500) await variant.add(ids.slice(start, start + 500));
  await all;
  const seconds = (performance.now() - started) / 1000;
  const node = process.cpuUsage(cpuBefore.node);
  const postgresMs = (await postgresCpu()) - cpuBefore.postgres;
  await variant.stop();
  latencies.sort((a, b) => a - b);
  console.log(
    JSON.stringify({
      variant: name,
      items,
      itemsPerSecond: Math.round(items / seconds),
      nodeCpuMsPerItem: +((node.user + node.system) / 1000 / items).toFixed(3),
      postgresCpuMsPerItem: +(postgresMs / items).toFixed(3),
      idleLatencyMs: { p50: +latencies[10]!.toFixed(1), max: +latencies[19]!.toFixed(1) },
    }),
  );
}

const server = await startDatabaseServer();
try {
  const url = await server.freshDatabase('queue_choice');
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  pool.on('error', () => undefined);
  await createItems(pool);
  const chosen = positionals.length > 0 ? positionals : ['rows-async-claim', 'rows', 'pgboss12', 'pgboss10-batch', 'pgboss10-polling'];
  for (const name of chosen) {
    if (name === 'rows' || name === 'rows-async-claim')
      await measure(name, async () => rowsVariant(url, pool, name === 'rows-async-claim'), pool, server.postmasterPid, ITEMS);
    else if (name === 'pgboss12' && values['pg-boss-12'])
      await measure(name, () => pgBossVariant(values['pg-boss-12']!, url, pool, 'notify12'), pool, server.postmasterPid, ITEMS);
    else if (name === 'pgboss10-batch' && values['pg-boss-10'])
      await measure(name, () => pgBossVariant(values['pg-boss-10']!, url, pool, 'batch10'), pool, server.postmasterPid, ITEMS);
    // At four items a second, fewer items.
    else if (name === 'pgboss10-polling' && values['pg-boss-10'])
      await measure(name, () => pgBossVariant(values['pg-boss-10']!, url, pool, 'polling10'), pool, server.postmasterPid, Math.min(ITEMS, 200));
  }
  await pool.end();
} catch (error) {
  console.error(error);
} finally {
  await server.stop();
}
