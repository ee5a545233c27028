import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SaxesParser } from 'saxes';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunRecord } from '../../scripts/bench/lib/report.js';
import { launchChromium } from '../support/browser.js';
import { outcomeOf, repoRoot } from '../support/cli.js';
import { spawn } from 'node:child_process';

const SCENARIOS = [
  'get_patient',
  'save_auth_info',
  'register_document',
  'pipeline',
  'growth',
  'large_document',
  'gost_check',
  'record_import',
  'record_list',
  'record_growth',
  'tracing_register_document',
  'tracing_get_patient',
];

/**
 * `make bench` in smoke mode (tiny counts, short rounds): every scenario runs against the real
 * service and its baseline and the report comes out whole and sane. No figure is judged here: speed
 * is what the full run measures, never a test.
 */
describe('the benchmark suite, smoke run', () => {
  let out: string;
  let run: RunRecord;
  let exit: { code: number | null; stderr: string };

  beforeAll(async () => {
    out = await fs.mkdtemp(path.join(os.tmpdir(), 'ehr-gateway-bench-smoke-'));
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/bench/run.ts', '--smoke', '--out', out], {
      cwd: repoRoot,
      env: process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // About 4 min on a quiet machine, up to twice that beside a busy loop on every core; the record's
    // scenario adds Synthea's start (some 30 s of the Java program loading its modules), tracing's
    // two scenarios their own smoke rounds.
    exit = await outcomeOf(child, 800_000);
    // A failed run fails every test below with its reasons (the bench's "FAILED" lines first: a CI log
    // may show only the last test's message), then the end of its output.
    if (exit.code !== 0) {
      const reasons = exit.stderr.split('\n').filter((line) => line.includes('FAILED'));
      throw new Error(`bench --smoke exited ${exit.code}:\n${reasons.join('\n')}\n--- end of its output:\n${exit.stderr.slice(-3000)}`);
    }
    run = JSON.parse(await fs.readFile(path.join(out, 'benchmarks.json'), 'utf8')) as RunRecord;
  }, 820_000);

  afterAll(async () => {
    await fs.rm(out, { recursive: true, force: true });
  });

  it('runs every scenario and exits 0', () => {
    expect(exit.code).toBe(0);
    expect(run.outcomes.map((outcome) => outcome.name)).toEqual(SCENARIOS);
  });

  it('measures a positive figure for the service and the baseline of every row', () => {
    for (const outcome of run.outcomes) {
      expect(outcome.rows.length, outcome.name).toBeGreaterThan(0);
      for (const row of outcome.rows) {
        expect(Number.isFinite(row.service) && row.service > 0, `${outcome.name}: ${row.metric} = ${row.service}`).toBe(true);
        if (row.baseline !== undefined)
          expect(Number.isFinite(row.baseline) && row.baseline > 0, `${outcome.name}: ${row.metric} baseline = ${row.baseline}`).toBe(true);
      }
      expect(
        outcome.notes.filter((note) => /failed requests|NOT every callback/.test(note)),
        outcome.name,
      ).toEqual([]);
    }
  });

  it('exported spans with tracing on (the on side of the tracing scenario is not a second off side)', () => {
    const note = run.outcomes
      .find((outcome) => outcome.name === 'tracing_register_document')!
      .notes.find((text) => text.startsWith('spans at the collector stand-in: '));
    expect(Number(/: (\d+) for/.exec(note ?? '')?.[1])).toBeGreaterThan(0);
  });

  it('delivered every pipeline callback in order and signed, and the large document came back byte-identical', () => {
    const pipeline = run.outcomes.find((outcome) => outcome.name === 'pipeline')!;
    expect(pipeline.notes).toContain('result callbacks that arrived before their acceptance callback: 0; bad signatures: 0; duplicate deliveries: 0');
    expect(run.outcomes.find((outcome) => outcome.name === 'large_document')!.notes).toContain('file callback byte-identical to the document sent: yes');
  });

  it('writes the report: machine, versions, a table per scenario, the targets', async () => {
    const markdown = await fs.readFile(path.join(out, 'benchmarks.md'), 'utf8');
    expect(markdown).toContain(`| ${os.cpus().length} |`);
    expect(markdown).toContain(process.version);
    for (const outcome of run.outcomes) expect(markdown).toContain(`## ${outcome.title}`);
    expect(markdown).toMatch(/## Targets[\s\S]*≥ 0.8× baseline/);
    expect(markdown).toContain('![throughput and latency per scenario](benchmarks.svg)');
  });

  it('draws a chart that is well-formed SVG and renders in Chromium with a bar per figure', async () => {
    const svg = await fs.readFile(path.join(out, 'benchmarks.svg'), 'utf8');
    const parser = new SaxesParser();
    parser.on('error', (error) => {
      throw error;
    });
    parser.write(svg).close();
    const charted = run.outcomes.flatMap((outcome) => [outcome.chart.throughput, outcome.chart.latency]).filter(Boolean);
    const bars = charted.reduce((sum, pair) => sum + 1 + (pair!.baseline === undefined ? 0 : 1), 0);
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      await page.setContent(`<html><body>${svg}</body></html>`);
      const widths = await page.locator('svg rect[height="14"]').evaluateAll((rects) => rects.map((rect) => rect.getBoundingClientRect().width));
      expect(widths).toHaveLength(bars);
      expect(widths.every((width) => width >= 1)).toBe(true);
    } finally {
      await browser.close();
    }
  });
});
