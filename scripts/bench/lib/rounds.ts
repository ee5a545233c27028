import { closedLoop, type LoadOptions, type LoadResult } from './http-load.js';
import { compared, median, round1, type BenchContext, type Row } from './scenario.js';

/** Clients of every closed-loop comparison, on each side alike. */
export const CONNECTIONS = 16;

/**
 * One contender's round: `connections` clients in a closed loop on `target` for the context's
 * warm-up and round; with `pid`, the serving process's CPU per request is counted too.
 */
export function closedRound(
  context: BenchContext,
  target: { port: number; pid?: number },
  load: Pick<LoadOptions, 'next' | 'onAnswer'>,
  connections = CONNECTIONS,
): () => Promise<LoadResult> {
  return () =>
    closedLoop({
      port: target.port,
      cpuOf: target.pid,
      connections,
      durationMs: context.roundMs,
      warmupMs: context.warmupMs,
      ...load,
    });
}

/** Each round's figure, to one decimal. */
export const perRound = <R extends LoadResult>(results: readonly R[] | undefined, pick: (result: R) => number) =>
  (results ?? []).map((result) => round1(pick(result)));

/** Each round's CPU of the serving process per request, in whole µs. */
const cpuMicros = (results: readonly LoadResult[] | undefined) => (results ?? []).map((result) => Math.round((result.cpuMsPerRequest ?? NaN) * 1000));

/**
 * The rows of a maximum-throughput comparison of two columns (service and baseline, or tracing on
 * and off): throughput (judged against `minimumRatio` when given), CPU per request and p99.
 */
export function maxThroughputRows(
  first: readonly LoadResult[] | undefined,
  second: readonly LoadResult[] | undefined,
  throughputMetric: string,
  minimumRatio?: number,
): { throughput: Row; cpu: Row; p99: Row } {
  const throughput = compared(
    throughputMetric,
    'requests/s',
    perRound(first, (r) => r.perSecond),
    perRound(second, (r) => r.perSecond),
    minimumRatio,
  );
  const cpu: Row = {
    metric: 'CPU of the serving process per request, at maximum throughput',
    unit: 'µs',
    service: median(cpuMicros(first)),
    baseline: median(cpuMicros(second)),
    rounds: { service: cpuMicros(first), baseline: cpuMicros(second) },
  };
  const p99: Row = {
    metric: 'p99 at maximum throughput',
    unit: 'ms',
    service: median(perRound(first, (r) => r.p99)),
    baseline: median(perRound(second, (r) => r.p99)),
    rounds: { service: perRound(first, (r) => r.p99), baseline: perRound(second, (r) => r.p99) },
  };
  return { throughput, cpu, p99 };
}

/** A note for each contender that had failed requests, headed by `what` when given. */
export function failedRequestNotes(results: Record<string, readonly LoadResult[]>, what?: string): string[] {
  return Object.entries(results).flatMap(([who, list]) =>
    list.some((result) => result.errors > 0)
      ? [`${what ? `${what}: ` : ''}${who} had ${list.reduce((sum, result) => sum + result.errors, 0)} failed requests`]
      : [],
  );
}
