import os from 'node:os';
import type { BenchDatabaseServer } from './database.js';

/** What every scenario gets: where the service lives, the database server, and how long to measure. */
export interface BenchContext {
  /** The checkout whose `serve` is measured (this one, or --root for an older commit). */
  root: string;
  /** The directory of the benchmark's own programs (baseline, receiver): always this checkout's. */
  benchDir: string;
  database: BenchDatabaseServer;
  smoke: boolean;
  /** Alternating rounds per contender. */
  rounds: number;
  /** Measured milliseconds per round, after warmupMs. */
  roundMs: number;
  warmupMs: number;
  /** Documents of the pipeline's throughput run. */
  pipelineDocuments: number;
  /** Rows of the large side of the growth scenario. */
  growthRows: number;
  /** Bytes of the large document. */
  largeDocumentBytes: number;
  /** MiB of FHIR NDJSON the record's import scenario imports. */
  recordImportMiB: number;
  /** CPU profiles of the service (node --cpu-prof) go here, when set. */
  profileDir: string | undefined;
  /** More node options for each service and baseline process (--node-options). */
  nodeOptions: readonly string[];
  /** The limits counted as in production (shared counters), set too high to refuse anything; else off. */
  limits: boolean;
  log(message: string): void;
}

/** One line of a scenario's table. */
export interface Row {
  metric: string;
  service: number;
  baseline?: number;
  unit: string;
  /** How `service / baseline` (or the value alone) is judged; undefined: no target. */
  target?: { text: string; met: boolean };
  /** Not judged but shown in the targets table beside the judged row before it, with this reason. */
  reference?: string;
  /** Each round's figure, for the record. */
  rounds?: { service: number[]; baseline?: number[] };
  /** 0 is a measurement here (a delay beyond a sampling interval: none in the round), not a figure missing. */
  zeroMeasured?: boolean;
}

export interface ScenarioOutcome {
  name: string;
  title: string;
  rows: Row[];
  /** Headings of the two compared columns (default: service, baseline). */
  columns?: [string, string];
  /** For the chart: throughput (higher is better) and latency (lower is better) of service and baseline. */
  chart: { throughput?: ChartPair; latency?: ChartPair };
  notes: string[];
  /** 1-minute load average at its start and end. */
  load: [number, number];
  seconds: number;
}

export interface ChartPair {
  label: string;
  unit: string;
  service: number;
  baseline?: number;
}

export type Measured = Omit<ScenarioOutcome, 'load' | 'seconds'>;

/** A group of scenarios that share their setup (one service, one database); returns one outcome per scenario. */
export type Scenario = (context: BenchContext) => Promise<Measured[]>;

export const loadAverage = () => +os.loadavg()[0]!.toFixed(2);

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/**
 * Runs each contender `rounds` times, alternating and swapping who goes first each round, so that
 * a change in the machine's load falls on both; returns each contender's results in round order.
 */
export async function alternate<T>(rounds: number, contenders: ReadonlyArray<{ name: string; run: () => Promise<T> }>): Promise<Record<string, T[]>> {
  const results: Record<string, T[]> = Object.fromEntries(contenders.map((contender) => [contender.name, []]));
  for (let round = 0; round < rounds; round += 1) {
    const order = round % 2 === 0 ? contenders : [...contenders].reverse();
    for (const contender of order) results[contender.name]!.push(await contender.run());
  }
  return results;
}

/** A throughput-like row (higher is better) from per-round service and baseline figures. */
export function compared(metric: string, unit: string, service: number[], baseline: number[], minimumRatio?: number): Row {
  const row: Row = { metric, unit, service: median(service), baseline: median(baseline), rounds: { service, baseline } };
  if (minimumRatio !== undefined) {
    const ratio = row.service / row.baseline!;
    row.target = { text: `≥ ${minimumRatio}× baseline`, met: ratio >= minimumRatio };
  }
  return row;
}

export const round1 = (value: number) => Math.round(value * 10) / 10;
