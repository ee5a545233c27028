/**
 * Where get_patient's tail at a constant rate comes from (issue 24): the service and the baseline
 * each take `--rate` requests/s for `--seconds` (alternating rounds, as `make bench`'s interface-a),
 * every request's latency is kept with its due time, and the slow ones are lined up with what held
 * each process's event loop (timeline-probe.mjs: stalls of the loop, collections) and the load
 * generator's own. Writes timeline.json (everything) and prints a summary.
 *
 *   node --import tsx scripts/bench/steady-timeline.ts --rate 3000 [--seconds 5] [--rounds 2]
 *        [--warmup S (1)] [--closed-first S: a closed loop of 16 connections on each first, as make bench's maximum]
 *        [--pause S: that long without load before the first round, as when the service rests between bursts]
 *        [--out DIR] [--root DIR] [--env NAME=VALUE ...] [--node-options=...] [--only service|baseline]
 *
 * Hold the bench lock while it runs (docs/benchmarks.md: one measurement at a time).
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { commandLine } from '../lib/command-line.js';
import { backendsSince, startDatabaseServer, seedUsers, withClient } from './lib/database.js';
import { closedLoop, constantRate } from './lib/http-load.js';
import { expectResult, getPatientRequest } from './lib/rpc.js';
import type { BenchContext } from './lib/scenario.js';
import { newDataKey, rpcVersion, startBaseline, startService } from './lib/service.js';

const HELP = `usage: tsx scripts/bench/steady-timeline.ts --rate N [options]

Where get_patient's tail at a constant rate comes from: the service and the baseline each take --rate
requests/s for --seconds in alternating rounds; every request's latency is kept with its due time and
the slow ones lined up with each process's event-loop stalls and collections. Writes timeline.json
into --out and prints a summary. Hold the bench lock while it runs.

options:
  --rate N             requests a second (required)
  --seconds S          seconds per round (default 5)
  --rounds N           rounds per contender (default 2)
  --warmup S           seconds of warm-up before each round (default 1)
  --closed-first S     a closed loop of 16 connections on each contender first, for S seconds (default 0)
  --pause S            seconds with no load before the first round (default 0)
  --out DIR            where to write (default /tmp/steady-timeline)
  --root DIR           the checkout whose serve is measured (default this one)
  --env NAME=VALUE     more environment of the service (repeatable)
  --node-options=TEXT  more options of node for each process, space-separated
  --only LIST          service, baseline or both, comma-separated (default service,baseline)
  -h, --help           this text

example: tsx scripts/bench/steady-timeline.ts --rate 3000 --seconds 5 --only service`;

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const PROBE = path.join(benchDir, 'lib/timeline-probe.mjs');

type Stall = [at: number, ms: number];
type Collection = [at: number, ms: number, kind: string];
interface ProbeDump {
  /** An epoch time and the monotonic clock's at the same moment (ms). */
  clock: [number, number];
  stalls: Stall[];
  gc: Collection[];
}
/** A request: when it was due (epoch ms) and its latency from then (ms). */
type Sample = [due: number, latency: number];

interface Round {
  who: 'service' | 'baseline';
  samples: Sample[];
  server: ProbeDump;
  generator: ProbeDump;
  pg: PgActivity;
}

/** What PostgreSQL did in the round: checkpoints, connections opened, autovacuum and autoanalyze runs seen at its end. */
interface PgActivity {
  checkpoints: number;
  /** When each backend of this database started during the round (epoch ms): the contender's pool opening connections (those still open at its end). */
  connectionsOpened: number[];
  autovacuums: string[];
}

const epochNow = () => performance.timeOrigin + performance.now();

async function main(): Promise<void> {
  const { values } = commandLine('steady-timeline', HELP, {
    options: {
      rate: { type: 'string' },
      seconds: { type: 'string', default: '5' },
      rounds: { type: 'string', default: '2' },
      out: { type: 'string', default: '/tmp/steady-timeline' },
      root: { type: 'string' },
      env: { type: 'string', multiple: true, default: [] },
      'node-options': { type: 'string', default: '' },
      pause: { type: 'string', default: '0' },
      only: { type: 'string', default: 'service,baseline' },
      warmup: { type: 'string', default: '1' },
      'closed-first': { type: 'string', default: '0' },
    },
  });
  if (!values.rate) {
    console.error('steady-timeline: --rate is required (--help for the usage)');
    process.exit(2);
  }
  const rate = Number(values.rate);
  const roundMs = Number(values.seconds) * 1000;
  const out = path.resolve(values.out);
  const probeDir = path.join(out, 'probe');
  await fs.mkdir(probeDir, { recursive: true });
  process.env.TIMELINE_PROBE_DIR = probeDir;
  await import(PROBE);
  const env = Object.fromEntries(values.env.map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
  const log = (message: string) => console.error(`timeline: ${message}`);
  log(
    `load average ${os
      .loadavg()
      .map((load) => load.toFixed(2))
      .join(' ')}`,
  );

  const database = await startDatabaseServer();
  const context: BenchContext = {
    root: path.resolve(values.root ?? path.join(benchDir, '../..')),
    benchDir,
    database,
    smoke: false,
    rounds: Number(values.rounds),
    roundMs,
    warmupMs: 1000,
    pipelineDocuments: 0,
    growthRows: 0,
    largeDocumentBytes: 0,
    recordImportMiB: 0,
    profileDir: undefined,
    nodeOptions: ['--import', PROBE, ...values['node-options'].split(' ').filter(Boolean)],
    limits: false,
    log,
  };
  const rounds: Round[] = [];
  try {
    const databaseUrl = await database.freshDatabase('timeline');
    const dataKey = newDataKey();
    // Both children inherit TIMELINE_PROBE_DIR.
    const service = await startService(context, databaseUrl, dataKey, { only: 'ehr', env });
    const baseline = await startBaseline(context, databaseUrl, dataKey);
    try {
      const seeded = await seedUsers(databaseUrl, Buffer.from(dataKey, 'hex'), { users: 1000, sessions: 1000 });
      const contenders = {
        service: { pid: service.pid, port: service.publicPort, route: `/${rpcVersion(context.root)}/` },
        baseline: { pid: baseline.pid, port: baseline.port, route: '/rpc' },
      };
      const chosen = values.only.split(',') as Array<keyof typeof contenders>;
      const dump = async (pid: number): Promise<ProbeDump> => {
        const file = path.join(probeDir, `${pid}.json`);
        await fs.rm(file, { force: true });
        process.kill(pid, 'SIGUSR2');
        for (let waited = 0; waited < 5000; waited += 20) {
          try {
            return JSON.parse(await fs.readFile(file, 'utf8')) as ProbeDump;
          } catch {
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
        }
        throw new Error(`no probe dump from ${pid}`);
      };
      const load = (who: keyof typeof contenders, ms: number, samples?: Sample[]) =>
        constantRate({
          port: contenders[who].port,
          ratePerSecond: rate,
          durationMs: ms,
          next: () => getPatientRequest(seeded, contenders[who].route),
          onAnswer: (answer, _tag, latency) => {
            expectResult(answer);
            samples?.push([epochNow() - latency, latency]);
          },
        });
      // As make bench does: each contender's maximum throughput first (16 connections: a pool grown to its size).
      for (const who of Number(values['closed-first']) > 0 ? chosen : []) {
        await closedLoop({
          port: contenders[who].port,
          connections: 16,
          durationMs: Number(values['closed-first']) * 1000,
          next: () => getPatientRequest(seeded, contenders[who].route),
          onAnswer: expectResult,
        });
      }
      if (Number(values.pause) > 0) await new Promise((resolve) => setTimeout(resolve, Number(values.pause) * 1000));
      for (let round = 0; round < context.rounds; round += 1) {
        const order = round % 2 === 0 ? chosen : [...chosen].reverse();
        for (const who of order) {
          if (Number(values.warmup) > 0) await load(who, Number(values.warmup) * 1000);
          const checkpointsBefore = await checkpoints(databaseUrl);
          await dump(contenders[who].pid);
          await dump(process.pid);
          const samples: Sample[] = [];
          const started = epochNow();
          const result = await load(who, roundMs, samples);
          const server = await dump(contenders[who].pid);
          const generator = await dump(process.pid);
          const connectionsOpened = await backendsSince(databaseUrl, started);
          const pg = {
            checkpoints: (await checkpoints(databaseUrl)) - checkpointsBefore,
            connectionsOpened,
            autovacuums: await autovacuumsSince(databaseUrl, started),
          };
          rounds.push({ who, samples, server, generator, pg });
          log(
            `round ${round + 1} ${who}: p50 ${result.p50.toFixed(2)} p99 ${result.p99.toFixed(2)} max ${result.max.toFixed(1)} ms, ${result.errors} errors, load ${os.loadavg()[0]!.toFixed(2)}`,
          );
        }
      }
    } finally {
      await service.stop();
      await baseline.stop();
    }
  } finally {
    await database.stop();
  }
  await fs.writeFile(path.join(out, 'timeline.json'), JSON.stringify({ rate, roundMs, rounds }));
  for (const round of rounds) console.log(summarise(round));
}

async function checkpoints(url: string): Promise<number> {
  return withClient(url, async (client) => {
    // PostgreSQL 17 moved the counters to pg_stat_checkpointer.
    const viewRow = await client
      .query<{ n: string }>(`select (num_timed + num_requested)::text as n from pg_stat_checkpointer`)
      .catch(() => client.query<{ n: string }>(`select (checkpoints_timed + checkpoints_req)::text as n from pg_stat_bgwriter`));
    return Number(viewRow.rows[0]!.n);
  });
}

async function autovacuumsSince(url: string, since: number): Promise<string[]> {
  return withClient(url, async (client) => {
    const { rows } = await client.query<{ what: string }>(
      `select relname || ': ' || concat_ws(', ',
              case when last_autovacuum >= to_timestamp($1 / 1000.0) then 'autovacuum' end,
              case when last_autoanalyze >= to_timestamp($1 / 1000.0) then 'autoanalyze' end) as what
         from pg_stat_user_tables
        where last_autovacuum >= to_timestamp($1 / 1000.0) or last_autoanalyze >= to_timestamp($1 / 1000.0)`,
      [since],
    );
    return rows.map((row) => row.what);
  });
}

const quantile = (sorted: readonly number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;

/**
 * One round in a few lines: its percentiles; the requests slower than its own p99, grouped into
 * episodes (requests whose time in flight overlaps); and for those, how many were in flight during a
 * stall of the server's loop, a collection of the server, or a stall of the load generator.
 */
function summarise(round: Round): string {
  const latencies = round.samples.map(([, latency]) => latency).sort((a, b) => a - b);
  const p99 = quantile(latencies, 0.99);
  const slow = round.samples.filter(([, latency]) => latency >= p99).sort((a, b) => a[0] - b[0]);
  const overlaps = (events: ReadonlyArray<[number, number, ...unknown[]]>, endsAt: boolean) => (sample: Sample) =>
    events.some(([at, ms]) => {
      const [start, end] = endsAt ? [at - ms, at] : [at, at + ms];
      return start < sample[0] + sample[1] && end > sample[0];
    });
  const duringServerStall = slow.filter(overlaps(round.server.stalls, true)).length;
  const duringServerGc = slow.filter(overlaps(round.server.gc, false)).length;
  const duringGeneratorStall = slow.filter(overlaps(round.generator.stalls, true)).length;
  const episodes: Array<{ start: number; end: number; count: number; worst: number }> = [];
  for (const [due, latency] of slow) {
    const last = episodes.at(-1);
    if (last && due <= last.end) {
      last.end = Math.max(last.end, due + latency);
      last.count += 1;
      last.worst = Math.max(last.worst, latency);
    } else episodes.push({ start: due, end: due + latency, count: 1, worst: latency });
  }
  const t0 = round.samples[0]?.[0] ?? 0;
  const at = (ms: number) => ((ms - t0) / 1000).toFixed(3);
  const within = (events: ReadonlyArray<[number, number, ...unknown[]]>, start: number, end: number, endsAt: boolean) =>
    events.filter(([time, ms]) => (endsAt ? time - ms : time) < end && (endsAt ? time : time + ms) > start);
  const describe = (episode: (typeof episodes)[number]) => {
    const stalls = within(round.server.stalls, episode.start, episode.end, true);
    const gc = within(round.server.gc, episode.start, episode.end, false);
    const generator = within(round.generator.stalls, episode.start, episode.end, true);
    const opened = round.pg.connectionsOpened.filter((time) => time >= episode.start && time <= episode.end).length;
    return `  ${at(episode.start)} s +${(episode.end - episode.start).toFixed(1)} ms: ${episode.count} slow, worst ${episode.worst.toFixed(1)} ms; server stalls [${stalls.map(([, ms]) => ms.toFixed(1)).join(' ')}] gc [${gc.map(([, ms, kind]) => `${kind} ${ms.toFixed(1)}`).join(' ')}] generator stalls [${generator.map(([, ms]) => ms.toFixed(1)).join(' ')}]; ${opened} connections opened`;
  };
  const gcTotal = (kind: string) => round.server.gc.filter(([, , k]) => k === kind);
  const kinds = [...new Set(round.server.gc.map(([, , kind]) => kind))]
    .map((kind) => `${kind} ${gcTotal(kind).length}× (max ${Math.max(...gcTotal(kind).map(([, ms]) => ms)).toFixed(1)} ms)`)
    .join(', ');
  return [
    `${round.who}: ${round.samples.length} requests, p50 ${quantile(latencies, 0.5).toFixed(2)} p90 ${quantile(latencies, 0.9).toFixed(2)} p99 ${p99.toFixed(2)} max ${latencies.at(-1)?.toFixed(1)} ms`,
    `  server loop stalls > 4 ms: ${round.server.stalls.length} (max ${Math.max(0, ...round.server.stalls.map(([, ms]) => ms)).toFixed(1)} ms); collections: ${kinds}; generator stalls: ${round.generator.stalls.length} (max ${Math.max(0, ...round.generator.stalls.map(([, ms]) => ms)).toFixed(1)} ms)`,
    `  PostgreSQL: ${round.pg.connectionsOpened.length} connections opened (and still open) at ${round.pg.connectionsOpened.map(at).join(', ')} s; ${round.pg.checkpoints} checkpoints; ${round.pg.autovacuums.join('; ') || 'no autovacuum'}`,
    `  of the ${slow.length} requests at or above p99: in flight during a server stall ${duringServerStall}, a server collection ${duringServerGc}, a generator stall ${duringGeneratorStall}; ${episodes.length} episodes, the largest:`,
    ...[...episodes]
      .sort((a, b) => b.count - a.count)
      .slice(0, 8)
      .map(describe),
  ].join('\n');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
