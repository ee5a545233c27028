import { createHash, randomBytes } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { constantRate, httpRequest, type LoadResult } from '../lib/http-load.js';
import { backendsSince, seedUsers, type SeededUsers } from '../lib/database.js';
import { CONNECTIONS, closedRound, failedRequestNotes, maxThroughputRows, perRound } from '../lib/rounds.js';
import { expectResult, getPatientRequest, JSON_HEADERS } from '../lib/rpc.js';
import { alternate, median, type BenchContext, type Measured, type Row } from '../lib/scenario.js';
import { INTERNAL_PASSWORD, INTERNAL_USER, newDataKey, rpcVersion, serviceMetrics, startBaseline, startService } from '../lib/service.js';
import { EVENT_LOOP_SAMPLE_MS } from '../../../src/metrics/metrics.js';

/**
 * Interface A: patient.get_patient (maximum throughput on 16 connections, then p99 at a constant
 * rate of half the service's maximum) and embedded_storage.save_auth_info (a fresh token each call),
 * each against the baseline on the same database.
 */

const random = (below: number) => Math.floor(Math.random() * below);

function saveAuthInfoBody(seeded: SeededUsers, nonce: string, counter: number): string {
  const { user, userSign } = seeded.users[random(seeded.users.length)]!;
  const token = createHash('sha1')
    .update(INTERNAL_PASSWORD + userSign, 'utf8')
    .digest('hex');
  return JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'embedded_storage.save_auth_info',
    params: { authInfo: { user, token: `bench-${nonce}-${counter}`, ttl: 3600 } },
    cred: { user: INTERNAL_USER, token },
  });
}

export async function interfaceA(context: BenchContext): Promise<Measured[]> {
  const databaseUrl = await context.database.freshDatabase('bench_a');
  const dataKey = newDataKey();
  const service = await startService(context, databaseUrl, dataKey, { only: 'ehr' });
  const baseline = await startBaseline(context, databaseUrl, dataKey);
  try {
    const seeded = await seedUsers(databaseUrl, Buffer.from(dataKey, 'hex'), { users: 1000, sessions: 1000 });
    const path = `/${rpcVersion(context.root)}/`;
    const getPatient = {
      service: closedRound(context, { port: service.publicPort, pid: service.pid }, { onAnswer: expectResult, next: () => getPatientRequest(seeded, path) }),
      baseline: closedRound(context, { port: baseline.port, pid: baseline.pid }, { onAnswer: expectResult, next: () => getPatientRequest(seeded, '/rpc') }),
    };
    context.log('get_patient: maximum throughput');
    const max = await alternate(context.rounds, [
      { name: 'service', run: getPatient.service },
      { name: 'baseline', run: getPatient.baseline },
    ]);
    const rate = Math.max(10, Math.round(median(max.service!.map((result) => result.perSecond)) / 2));
    context.log(`get_patient: p99 at ${rate} requests/s, constant rate`);
    const atRate = (port: number, route: string, loop: () => Promise<LoopDelay>) => async () => {
      const load = (durationMs: number) =>
        constantRate({ port, ratePerSecond: rate, durationMs, onAnswer: expectResult, next: () => getPatientRequest(seeded, route) });
      // warmupMs at the rate first, not counted, as the closed rounds (closedRound) have.
      await load(context.warmupMs);
      await loop();
      const started = Date.now();
      const generator = monitorEventLoopDelay({ resolution: GENERATOR_LOOP_RESOLUTION_MS });
      generator.enable();
      const result = await load(context.roundMs);
      generator.disable();
      const connectionsOpened = (await backendsSince(databaseUrl, started)).length;
      const generatorLateMs = Math.max(0, generator.max / 1e6 - GENERATOR_LOOP_RESOLUTION_MS);
      return { ...result, loop: await loop(), connectionsOpened, generatorLateMs };
    };
    const half = await alternate(context.rounds, [
      { name: 'service', run: atRate(service.publicPort, path, () => serviceLoopDelay(service.internalPort)) },
      { name: 'baseline', run: atRate(baseline.port, '/rpc', () => baselineLoopDelay(baseline.port)) },
    ]);

    context.log('save_auth_info: maximum throughput, a fresh token each call');
    const nonce = randomBytes(4).toString('hex');
    let counter = 0;
    const saving = (port: number, pid: number, route: string) =>
      closedRound(
        context,
        { port, pid },
        {
          onAnswer: expectResult,
          next: () => ({ bytes: httpRequest('POST', route, JSON_HEADERS, saveAuthInfoBody(seeded, nonce, (counter += 1))) }),
        },
      );
    const save = await alternate(context.rounds, [
      { name: 'service', run: saving(service.internalPort, service.pid, path) },
      { name: 'baseline', run: saving(baseline.port, baseline.pid, '/rpc') },
    ]);
    return [getPatientOutcome(max, half, rate), saveAuthInfoOutcome(save)];
  } finally {
    await service.stop();
    await baseline.stop();
  }
}

/** The serving process's event-loop delay beyond its sampling interval (monitorEventLoopDelay) and collector time over a round. */
interface LoopDelay {
  p99Ms: number;
  maxMs: number;
  gcMs: number;
}

/**
 * From the service's /metrics (internal listener): prom-client's event-loop delay, which it resets at
 * each scrape, and its collector time so far (nodejs_gc_duration_seconds, summed over the kinds).
 */
let serviceCollectorMsBefore = 0;
async function serviceLoopDelay(internalPort: number): Promise<LoopDelay> {
  const { text, value } = await serviceMetrics(internalPort);
  const collectorMs = [...text.matchAll(/^nodejs_gc_duration_seconds_sum\{[^}]*\} ([0-9.e+-]+)/gm)].reduce((sum, match) => sum + Number(match[1]) * 1000, 0);
  const gcMs = collectorMs - serviceCollectorMsBefore;
  serviceCollectorMsBefore = collectorMs;
  // A sample's delay counts the interval it was set for (EVENT_LOOP_SAMPLE_MS): what is beyond it is the stall.
  const beyondInterval = (seconds: number) => Math.max(0, seconds * 1000 - EVENT_LOOP_SAMPLE_MS);
  return { p99Ms: beyondInterval(value('nodejs_eventloop_lag_p99_seconds')), maxMs: beyondInterval(value('nodejs_eventloop_lag_max_seconds')), gcMs };
}

async function baselineLoopDelay(port: number): Promise<LoopDelay> {
  return (await (await fetch(`http://127.0.0.1:${port}/loop-delay`)).json()) as LoopDelay;
}

/**
 * connectionsOpened: the database connections the contender opened during the round (a pool growing again; those still
 * open at its end). generatorLateMs: how late the load generator's own event loop was at most (this process sends the
 * requests and times the answers: a stall of its own is in the latencies of whichever contender it measures).
 */
type SteadyResult = LoadResult & { loop: LoopDelay; connectionsOpened: number; generatorLateMs: number };
const GENERATOR_LOOP_RESOLUTION_MS = 10;

function getPatientOutcome(max: Record<string, LoadResult[]>, half: Record<string, SteadyResult[]>, rate: number): Measured {
  const { throughput, cpu, p99: p99Max } = maxThroughputRows(max.service, max.baseline, `throughput, ${CONNECTIONS} connections`, 0.8);
  const steady = (metric: string, pick: (result: SteadyResult) => number, zeroMeasured?: true): Row => {
    const service = perRound(half.service, pick);
    const baseline = perRound(half.baseline, pick);
    return { metric, unit: 'ms', service: median(service), baseline: median(baseline), rounds: { service, baseline }, zeroMeasured };
  };
  const p99Half = steady(`p99 at ${rate} requests/s (half the service's maximum), constant rate`, (r) => r.p99);
  p99Half.target = { text: '≤ 1.5× baseline', met: p99Half.service <= 1.5 * p99Half.baseline! };
  return {
    name: 'get_patient',
    title: 'patient.get_patient',
    rows: [
      throughput,
      cpu,
      p99Max,
      p99Half,
      steady(`p50 at ${rate} requests/s, constant rate`, (r) => r.p50),
      steady(
        'event-loop delay p99 of the serving process at that rate, beyond the sampling interval (monitorEventLoopDelay: service 100 ms, baseline 10 ms)',
        (r) => r.loop.p99Ms,
        true,
      ),
      steady('event-loop delay max at that rate, beyond the sampling interval', (r) => r.loop.maxMs, true),
    ],
    chart: {
      throughput: { label: 'get_patient', unit: 'requests/s', service: throughput.service, baseline: throughput.baseline },
      latency: { label: 'get_patient p99 @ half max', unit: 'ms', service: p99Half.service, baseline: p99Half.baseline },
    },
    notes: [
      ...failedRequestNotes(max, 'maximum'),
      ...failedRequestNotes(half, 'constant rate'),
      `garbage collection during each ${rate} requests/s round (ms): service ${perRound(half.service, (r) => r.loop.gcMs).join(', ')}; baseline ${perRound(half.baseline, (r) => r.loop.gcMs).join(', ')}`,
      `the load generator's own event loop at most this late during each ${rate} requests/s round (ms, beyond its ${GENERATOR_LOOP_RESOLUTION_MS} ms sampling): service ${perRound(half.service, (r) => r.generatorLateMs).join(', ')}; baseline ${perRound(half.baseline, (r) => r.generatorLateMs).join(', ')}`,
      `database connections opened during each ${rate} requests/s round (a pool growing again, each a backend start and a SCRAM exchange): service ${perRound(half.service, (r) => r.connectionsOpened).join(', ')}; baseline ${perRound(half.baseline, (r) => r.connectionsOpened).join(', ')}`,
    ],
  };
}

function saveAuthInfoOutcome(save: Record<string, LoadResult[]>): Measured {
  const { throughput, cpu, p99 } = maxThroughputRows(save.service, save.baseline, `throughput, ${CONNECTIONS} connections, a fresh token each call`, 0.8);
  return {
    name: 'save_auth_info',
    title: 'embedded_storage.save_auth_info',
    rows: [throughput, cpu, p99],
    chart: {
      throughput: { label: 'save_auth_info', unit: 'requests/s', service: throughput.service, baseline: throughput.baseline },
      latency: { label: 'save_auth_info p99 @ max', unit: 'ms', service: p99.service, baseline: p99.baseline },
    },
    notes: failedRequestNotes(save, 'save_auth_info'),
  };
}
