import type { ChartPair, Row, ScenarioOutcome } from './scenario.js';

/** docs/benchmarks.md and its chart, from a run's outcomes (and, when given, an earlier run's for "before"). */

export interface RunRecord {
  date: string;
  commit: string;
  machine: { cpu: string; cores: number; memoryGiB: number; os: string };
  versions: { node: string; postgres: string };
  mode: string;
  totalSeconds: number;
  outcomes: ScenarioOutcome[];
  /** Scenarios that did not run, or measured nothing or failed requests (the run exits non-zero). */
  failures?: string[];
}

const format = (value: number | undefined, unit = '') => {
  if (value === undefined || Number.isNaN(value)) return '—';
  const digits = Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? 1 : 2;
  return `${value.toLocaleString('en', { maximumFractionDigits: digits, minimumFractionDigits: 0 })}${unit ? ` ${unit}` : ''}`;
};

const ratioOf = (row: Row) => (row.baseline === undefined || row.baseline === 0 ? undefined : row.service / row.baseline);

function earlierRow(before: RunRecord | undefined, scenario: string, metric: string): Row | undefined {
  const outcome = before?.outcomes.find((candidate) => candidate.name === scenario);
  // Metrics name their parameters (a rate, a count): the same name, else the same words around them
  // (so p50 and p99 rows only fall back on each other when neither name matches).
  const stem = (text: string) => text.replace(/[\d,.]+/g, '#');
  return outcome?.rows.find((row) => row.metric === metric) ?? outcome?.rows.find((row) => stem(row.metric) === stem(metric));
}

function scenarioTable(outcome: ScenarioOutcome, before: RunRecord | undefined): string[] {
  const [first, second] = outcome.columns ?? ['service', 'baseline'];
  const withBefore = before !== undefined && !outcome.columns;
  const head = ['metric', first, second, 'ratio', ...(withBefore ? [`before (${before!.commit})`, 'before ratio'] : []), 'target', 'rounds'];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`];
  for (const row of outcome.rows) {
    const ratio = ratioOf(row);
    const earlier = withBefore ? earlierRow(before, outcome.name, row.metric) : undefined;
    const earlierRatio = earlier && ratioOf(earlier);
    const target = row.target ? `${row.target.text}: ${row.target.met ? '**met**' : '**missed**'}` : row.reference ? 'not judged (see targets)' : '';
    const rounds = row.rounds ? [row.rounds.service.join(', '), row.rounds.baseline?.join(', ')].filter(Boolean).join(' / ') : '';
    const cells = [
      row.metric,
      format(row.service, row.unit),
      format(row.baseline, row.baseline === undefined ? '' : row.unit),
      ratio === undefined ? '' : `${ratio.toFixed(2)}×`,
      ...(withBefore ? [format(earlier?.service, earlier ? row.unit : ''), earlierRatio === undefined ? '' : `${earlierRatio.toFixed(2)}×`] : []),
      target,
      rounds,
    ];
    lines.push(`| ${cells.join(' | ')} |`);
  }
  return lines;
}

export function markdown(run: RunRecord, before: RunRecord | undefined, chartFile: string): string {
  const targets = run.outcomes.flatMap((outcome) =>
    outcome.rows
      .filter((row) => row.target || row.reference)
      .map((row) => {
        const ratio = ratioOf(row);
        const measured =
          ratio !== undefined ? `${ratio.toFixed(2)}× (${format(row.service, row.unit)} vs ${format(row.baseline, row.unit)})` : format(row.service, row.unit);
        if (!row.target) return `| ${outcome.title} | ${row.metric} | — (${row.reference}; the target is judged on the row above) | ${measured} | not judged |`;
        return `| ${outcome.title} | ${row.metric} | ${row.target.text} | ${measured} | ${row.target.met ? 'met' : '**missed**'} |`;
      }),
  );
  const lines = [
    '# Benchmarks',
    '',
    `Written by \`make bench\` (scripts/bench/run.ts, ${run.mode}) on ${run.date}, commit ${run.commit}, in ${Math.round(run.totalSeconds)} s.`,
    'Each scenario runs the real service (`ehr-gateway serve` as its own process) and, where there is one, its bare baseline',
    '(scripts/bench/baseline.ts: plain node:http and pg doing the same SQL and crypto) in alternating rounds on the same',
    'PostgreSQL; the figures are medians of the rounds, all on this one machine (service, PostgreSQL, load generator and',
    'callback receiver share its cores). Load generators and the receiver are scripts/bench/lib/http-load.ts and',
    'scripts/bench/receiver.ts.',
    '',
    '## Machine',
    '',
    '| CPU | cores | memory | OS | Node.js | PostgreSQL |',
    '|---|---|---|---|---|---|',
    `| ${run.machine.cpu} | ${run.machine.cores} | ${run.machine.memoryGiB} GiB | ${run.machine.os} | ${run.versions.node} | ${run.versions.postgres} |`,
    '',
    'Load average (1 min) at the start and end of each scenario group: ' +
      run.outcomes.map((outcome) => `${outcome.name} ${outcome.load[0]} → ${outcome.load[1]}`).join('; ') +
      '.',
    '',
    ...(run.failures?.length ? ['**This run is incomplete** (make bench exited non-zero):', '', ...run.failures.map((failure) => `- ${failure}`), ''] : []),
    '## Targets',
    '',
    '| scenario | metric | target | measured | |',
    '|---|---|---|---|---|',
    ...targets,
    '',
    `![throughput and latency per scenario](${chartFile})`,
    '',
  ];
  if (before)
    lines.push(
      `"before" columns: the same benchmark run against commit ${before.commit} on ${before.date} (${before.mode}; load averages ${before.outcomes.map((outcome) => `${outcome.name} ${outcome.load[0]} → ${outcome.load[1]}`).join('; ')}).`,
      '',
    );
  for (const outcome of run.outcomes) {
    lines.push(`## ${outcome.title}`, '', ...scenarioTable(outcome, before), '');
    for (const note of outcome.notes) lines.push(`- ${note}`);
    if (outcome.notes.length > 0) lines.push('');
  }
  return `${lines.join('\n')}\n`;
}

const COLORS = { service: '#2563eb', baseline: '#9ca3af', before: '#f59e0b' };

const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** One panel of horizontal bars: each entry scaled to the largest value of its own row. */
function panel(title: string, entries: Array<ChartPair & { before?: number }>, x: number, y: number, width: number): { svg: string[]; height: number } {
  const svg = [`<text x="${x}" y="${y + 14}" font-size="14" font-weight="bold">${escapeXml(title)}</text>`];
  let at = y + 30;
  const labelWidth = 190;
  const barSpace = width - labelWidth - 90;
  for (const entry of entries) {
    const bars = [
      { name: 'service', value: entry.service },
      ...(entry.baseline === undefined ? [] : [{ name: 'baseline', value: entry.baseline }]),
      ...(entry.before === undefined ? [] : [{ name: 'before', value: entry.before }]),
    ] as Array<{ name: keyof typeof COLORS; value: number }>;
    const largest = Math.max(...bars.map((bar) => bar.value), 1e-9);
    svg.push(`<text x="${x}" y="${at + 12}" font-size="12">${escapeXml(entry.label)}</text>`);
    for (const bar of bars) {
      const length = Math.max(1, (bar.value / largest) * barSpace);
      svg.push(`<rect x="${x + labelWidth}" y="${at}" width="${length.toFixed(1)}" height="14" fill="${COLORS[bar.name]}"/>`);
      svg.push(`<text x="${(x + labelWidth + length + 4).toFixed(1)}" y="${at + 11}" font-size="11">${escapeXml(format(bar.value, entry.unit))}</text>`);
      at += 17;
    }
    at += 10;
  }
  return { svg, height: at - y };
}

export function chart(run: RunRecord, before: RunRecord | undefined): string {
  const withBefore = (pick: 'throughput' | 'latency') =>
    run.outcomes.flatMap((outcome) => {
      const pair = outcome.chart[pick];
      if (!pair) return [];
      const earlier = before?.outcomes.find((candidate) => candidate.name === outcome.name)?.chart[pick];
      return [{ ...pair, ...(earlier ? { before: earlier.service } : {}) }];
    });
  const width = 1000;
  const left = panel('Throughput (higher is better)', withBefore('throughput'), 20, 50, width / 2 - 20);
  const right = panel('Latency (lower is better)', withBefore('latency'), width / 2 + 10, 50, width / 2 - 20);
  const height = Math.max(left.height, right.height) + 70;
  const legend = (Object.entries(COLORS) as Array<[string, string]>)
    .filter(([name]) => name !== 'before' || before)
    .map(
      ([name, color], index) =>
        `<rect x="${20 + index * 160}" y="${height - 22}" width="12" height="12" fill="${color}"/><text x="${36 + index * 160}" y="${height - 12}" font-size="12">${name === 'before' ? `before (${escapeXml(before!.commit)})` : name}</text>`,
    );
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="20" y="28" font-size="16" font-weight="bold">ehr-gateway benchmarks, ${escapeXml(run.date)} (${escapeXml(run.commit)})</text>`,
    ...left.svg,
    ...right.svg,
    ...legend,
    '</svg>',
    '',
  ].join('\n');
}
