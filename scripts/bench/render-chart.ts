/**
 * Renders the benchmark chart (an SVG) to PNG with Debian's Chromium, to look at it:
 *   tsx scripts/bench/render-chart.ts [docs/benchmarks.svg] [OUT.png]   (default OUT: the SVG's name with .png)
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { launchChromium } from '../../test/support/browser.js';
import { commandLine } from '../lib/command-line.js';

const HELP = `usage: tsx scripts/bench/render-chart.ts [SVG] [PNG]

Renders the benchmark chart (an SVG, default docs/benchmarks.svg) to PNG (default: the SVG's name
with .png) with Debian's Chromium (make browser), to look at it.

options:
  -h, --help   this text

example: tsx scripts/bench/render-chart.ts /tmp/bench/benchmarks.svg`;

const { positionals } = commandLine('render-chart', HELP, { options: {}, allowPositionals: true });
const svgFile = path.resolve(positionals[0] ?? 'docs/benchmarks.svg');
const pngFile = path.resolve(positionals[1] ?? svgFile.replace(/\.svg$/, '.png'));
const svg = await fs.readFile(svgFile, 'utf8');
const [, width, height] = /width="(\d+)" height="(\d+)"/.exec(svg) ?? [];
const browser = await launchChromium();
try {
  const page = await browser.newPage({ viewport: { width: Number(width ?? 1000), height: Number(height ?? 600) } });
  await page.setContent(`<html><body style="margin:0">${svg}</body></html>`);
  await page.locator('svg').screenshot({ path: pngFile });
  console.log(pngFile);
} finally {
  await browser.close();
}
