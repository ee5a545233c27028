import { createHash, randomBytes } from 'node:crypto';
import { closedLoop, constantRate, httpRequest, type Answer, type LoadResult } from '../lib/http-load.js';
import { seedUsers, type SeededUsers } from '../lib/database.js';
import { alternate, compared, median, round1, type BenchContext, type Measured, type Row } from '../lib/scenario.js';
import { INTERNAL_PASSWORD, INTERNAL_USER, newDataKey, rpcVersion, startBaseline, startService } from '../lib/service.js';

/**
 * Interface A: patient.get_patient (maximum throughput on 16 connections, then p99 at a constant
 * rate of half the service's maximum) and embedded_storage.save_auth_info (a fresh token each call),
 * each against the baseline on the same database.
 */

const CONNECTIONS = 16;
const JSON_HEADERS = { 'content-type': 'application/json' };

/** A JSON-RPC answer that is not a result (an error object) fails the request. */
function expectResult(answer: Answer): void {
  if (answer.body.indexOf('"result"') < 0) throw new Error(`not a result: ${answer.body.toString('utf8', 0, 300)}`);
}

const random = (below: number) => Math.floor(Math.random() * below);

function getPatientBody(seeded: SeededUsers): string {
  const i = random(seeded.sessions);
  return JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'patient.get_patient',
    params: {},
    cred: { user: seeded.users[i % seeded.users.length]!.user, token: seeded.sessionToken(i) },
  });
}

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
    const onAnswer = expectResult;
    const getPatient = {
      service: () =>
        closedLoop({
          port: service.publicPort,
          cpuOf: service.pid,
          connections: CONNECTIONS,
          durationMs: context.roundMs,
          warmupMs: context.warmupMs,
          onAnswer,
          next: () => ({ bytes: httpRequest('POST', path, JSON_HEADERS, getPatientBody(seeded)) }),
        }),
      baseline: () =>
        closedLoop({
          port: baseline.port,
          cpuOf: baseline.pid,
          connections: CONNECTIONS,
          durationMs: context.roundMs,
          warmupMs: context.warmupMs,
          onAnswer,
          next: () => ({ bytes: httpRequest('POST', '/rpc', JSON_HEADERS, getPatientBody(seeded)) }),
        }),
    };
    context.log('get_patient: maximum throughput');
    const max = await alternate(context.rounds, [
      { name: 'service', run: getPatient.service },
      { name: 'baseline', run: getPatient.baseline },
    ]);
    const rate = Math.max(10, Math.round(median(max.service!.map((result) => result.perSecond)) / 2));
    context.log(`get_patient: p99 at ${rate} requests/s, constant rate`);
    const atRate = (port: number, route: string, loop: () => Promise<LoopDelay>) => async () => {
      await loop();
      const result = await constantRate({
        port,
        ratePerSecond: rate,
        durationMs: context.roundMs,
        onAnswer,
        next: () => ({ bytes: httpRequest('POST', route, JSON_HEADERS, getPatientBody(seeded)) }),
      });
      return { ...result, loop: await loop() };
    };
    const half = await alternate(context.rounds, [
      { name: 'service', run: atRate(service.publicPort, path, () => serviceLoopDelay(service.internalPort)) },
      { name: 'baseline', run: atRate(baseline.port, '/rpc', () => baselineLoopDelay(baseline.port)) },
    ]);

    context.log('save_auth_info: maximum throughput, a fresh token each call');
    const nonce = randomBytes(4).toString('hex');
    let counter = 0;
    const saving = (port: number, pid: number, route: string) => () =>
      closedLoop({
        port,
        cpuOf: pid,
        connections: CONNECTIONS,
        durationMs: context.roundMs,
        warmupMs: context.warmupMs,
        onAnswer,
        next: () => ({ bytes: httpRequest('POST', route, JSON_HEADERS, saveAuthInfoBody(seeded, nonce, (counter += 1))) }),
      });
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

/** The serving process's event-loop delay (monitorEventLoopDelay, 10 ms resolution) and collector time over a round. */
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
  const text = await (await fetch(`http://127.0.0.1:${internalPort}/metrics`)).text();
  const value = (name: string) => Number(new RegExp(`^${name} ([0-9.e+-]+)`, 'm').exec(text)?.[1] ?? NaN);
  const collectorMs = [...text.matchAll(/^nodejs_gc_duration_seconds_sum\{[^}]*\} ([0-9.e+-]+)/gm)].reduce((sum, match) => sum + Number(match[1]) * 1000, 0);
  const gcMs = collectorMs - serviceCollectorMsBefore;
  serviceCollectorMsBefore = collectorMs;
  return { p99Ms: value('nodejs_eventloop_lag_p99_seconds') * 1000, maxMs: value('nodejs_eventloop_lag_max_seconds') * 1000, gcMs };
}

async function baselineLoopDelay(port: number): Promise<LoopDelay> {
  return (await (await fetch(`http://127.0.0.1:${port}/loop-delay`)).json()) as LoopDelay;
}

type SteadyResult = LoadResult & { loop: LoopDelay };

const per = <R extends LoadResult>(results: R[] | undefined, pick: (result: R) => number) => (results ?? []).map((result) => round1(pick(result)));

function errorNote(name: string, results: Record<string, LoadResult[]>): string[] {
  return Object.entries(results)
    .filter(([, list]) => list.some((result) => result.errors > 0))
    .map(([who, list]) => `${name}: ${who} had ${list.reduce((sum, result) => sum + result.errors, 0)} failed requests`);
}

/**
 * CPU of the serving process (service or baseline) per request at maximum throughput: what the
 * service spends beyond the baseline, and far less sensitive than throughput to what else the
 * machine is running.
 */
function cpuPerRequest(results: Record<string, LoadResult[]>): Row {
  const perRequest = (list: LoadResult[] | undefined) => (list ?? []).map((result) => Math.round((result.cpuMsPerRequest ?? NaN) * 1000));
  const service = perRequest(results.service);
  const baseline = perRequest(results.baseline);
  return {
    metric: 'CPU of the serving process per request, at maximum throughput',
    unit: 'µs',
    service: median(service),
    baseline: median(baseline),
    rounds: { service, baseline },
  };
}

function getPatientOutcome(max: Record<string, LoadResult[]>, half: Record<string, SteadyResult[]>, rate: number): Measured {
  const throughput = compared(
    `throughput, ${CONNECTIONS} connections`,
    'requests/s',
    per(max.service, (r) => r.perSecond),
    per(max.baseline, (r) => r.perSecond),
    0.8,
  );
  const p99Max: Row = {
    metric: `p99 at maximum throughput`,
    unit: 'ms',
    service: median(per(max.service, (r) => r.p99)),
    baseline: median(per(max.baseline, (r) => r.p99)),
    rounds: { service: per(max.service, (r) => r.p99), baseline: per(max.baseline, (r) => r.p99) },
  };
  const p99Half: Row = {
    metric: `p99 at ${rate} requests/s (half the service's maximum), constant rate`,
    unit: 'ms',
    service: median(per(half.service, (r) => r.p99)),
    baseline: median(per(half.baseline, (r) => r.p99)),
    rounds: { service: per(half.service, (r) => r.p99), baseline: per(half.baseline, (r) => r.p99) },
  };
  p99Half.target = { text: '≤ 1.5× baseline', met: p99Half.service <= 1.5 * p99Half.baseline! };
  const p50Half: Row = {
    metric: `p50 at ${rate} requests/s, constant rate`,
    unit: 'ms',
    service: median(per(half.service, (r) => r.p50)),
    baseline: median(per(half.baseline, (r) => r.p50)),
  };
  const loop = (metric: string, pick: (delay: LoopDelay) => number): Row => {
    const service = per(half.service, (r) => pick(r.loop));
    const baseline = per(half.baseline, (r) => pick(r.loop));
    return { metric, unit: 'ms', service: median(service), baseline: median(baseline), rounds: { service, baseline } };
  };
  return {
    name: 'get_patient',
    title: 'patient.get_patient',
    rows: [
      throughput,
      cpuPerRequest(max),
      p99Max,
      p99Half,
      p50Half,
      loop('event-loop delay p99 of the serving process at that rate (monitorEventLoopDelay, 10 ms resolution)', (delay) => delay.p99Ms),
      loop('event-loop delay max at that rate', (delay) => delay.maxMs),
    ],
    chart: {
      throughput: { label: 'get_patient', unit: 'requests/s', service: throughput.service, baseline: throughput.baseline },
      latency: { label: 'get_patient p99 @ half max', unit: 'ms', service: p99Half.service, baseline: p99Half.baseline },
    },
    notes: [
      ...errorNote('maximum', max),
      ...errorNote('constant rate', half),
      `garbage collection during each ${rate} requests/s round (ms): service ${per(half.service, (r) => r.loop.gcMs).join(', ')}; baseline ${per(half.baseline, (r) => r.loop.gcMs).join(', ')}`,
    ],
  };
}

function saveAuthInfoOutcome(save: Record<string, LoadResult[]>): Measured {
  const throughput = compared(
    `throughput, ${CONNECTIONS} connections, a fresh token each call`,
    'requests/s',
    per(save.service, (r) => r.perSecond),
    per(save.baseline, (r) => r.perSecond),
    0.8,
  );
  const p99: Row = {
    metric: 'p99 at maximum throughput',
    unit: 'ms',
    service: median(per(save.service, (r) => r.p99)),
    baseline: median(per(save.baseline, (r) => r.p99)),
  };
  return {
    name: 'save_auth_info',
    title: 'embedded_storage.save_auth_info',
    rows: [throughput, cpuPerRequest(save), p99],
    chart: {
      throughput: { label: 'save_auth_info', unit: 'requests/s', service: throughput.service, baseline: throughput.baseline },
      latency: { label: 'save_auth_info p99 @ max', unit: 'ms', service: p99.service, baseline: p99.baseline },
    },
    notes: errorNote('save_auth_info', save),
  };
}
