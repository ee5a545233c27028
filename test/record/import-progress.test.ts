import { spawn } from 'node:child_process';
import path from 'node:path';
import { IMPORTED } from './support.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outcomeOf, repoRoot, runCli, type CliResult } from '../support/cli.js';
import { startTestService, type TestService } from '../support/service.js';
import { resourcesOf, syntheaPopulation, type SyntheaPopulation } from '../support/synthea.js';

/**
 * `records import` shows its progress on a terminal and nowhere else: run under a pseudo-terminal
 * (util-linux `script`, as a user at a terminal runs it) its stderr carries the progress line,
 * rewritten in place, whose last state gives the totals; with stdout and stderr piped it prints the
 * JSON summary alone and not one escape. Synthea's Bulk Data NDJSON, made at test time.
 */

const ORGANIZATION = '1.2.643.5.1.13.13.12.2.77.1002';
const ESCAPE = '\u001b';
// Written in place: a carriage return, the text, erase to the end of the line.
const PROGRESS_LINE = /\r([^\r\n\u001b]*)\u001b\[K/g;

let service: TestService;
let population: SyntheaPopulation;
let resources: Array<Record<string, any>>;

beforeAll(async () => {
  population = await syntheaPopulation({ patients: 3, seed: 11, bulk: true });
  resources = await resourcesOf(population);
  service = await startTestService({}, ['ehr']);
}, 300_000);

afterAll(async () => {
  await service?.stop();
});

const quote = (word: string) => `'${word.replaceAll("'", "'\\''")}'`;

/** The command at a terminal: `script` gives it a pseudo-terminal as stdin, stdout and stderr, and writes what the terminal shows to its own stdout. */
async function importOnTerminal(args: readonly string[]): Promise<CliResult> {
  const command = [process.execPath, '--import', 'tsx', path.join(repoRoot, 'src/main.ts'), ...args].map(quote).join(' ');
  const child = spawn('script', ['--quiet', '--flush', '--return', '--command', command, '/dev/null'], {
    cwd: repoRoot,
    env: { ...process.env, LOG_LEVEL: 'info', ...service.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return outcomeOf(child, 240_000);
}

function summaryOf(output: string): any {
  const line = output.split(/\r?\n/).find((text) => text.startsWith('{"imported"'));
  if (!line) throw new Error(`no JSON summary in: ${output.slice(-3000)}`);
  return JSON.parse(line);
}

describe('records import progress', () => {
  it('on a terminal: the progress line names files, resources and rate, ends with the totals, and the summary follows', async () => {
    const result = await importOnTerminal(['records', 'import', ...population.files, '--organization', ORGANIZATION, '--source', 'terminal']);
    expect(result.code, result.stdout.slice(-3000) + result.stderr).toBe(0);
    const states = [...result.stdout.matchAll(PROGRESS_LINE)].map((match) => match[1]!);
    const files = population.files.length;
    const read = resources.length;
    const patients = resources.filter((resource) => resource.resourceType === 'Patient').length;
    const reading = states.filter((state) => state.startsWith('files '));
    expect(reading.length, states.join('\n')).toBeGreaterThan(0);
    for (const state of reading) expect(state).toMatch(/^files \d+\/\d+ · [\d,]+ resources · [\d,]+\/s$/);
    expect(reading.at(-1)).toContain(`files ${files}/${files} · ${read.toLocaleString('en-US')} resources · `);
    expect(states.at(-1)).toBe(`assembling the record of ${patients} patients · ${read.toLocaleString('en-US')} resources read`);
    const summary = summaryOf(result.stdout);
    const imported = resources.filter((resource) => IMPORTED.has(resource.resourceType)).length;
    expect(summary).toMatchObject({ imported, updated: 0, rejected: [], rejectedTotal: 0, patients, files });
    // The summary starts on a line of its own, after the progress line.
    expect(result.stdout.indexOf('{"imported"')).toBeGreaterThan(result.stdout.lastIndexOf(`${ESCAPE}[K`));
  }, 300_000);

  it('piped: the JSON summary alone on stdout, no progress and no escape on stderr', async () => {
    const result = await runCli(['records', 'import', ...population.files, '--organization', ORGANIZATION, '--source', 'piped'], service.env, 240_000);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).not.toContain(ESCAPE);
    expect(result.stderr).not.toContain('\r');
    expect(result.stderr).not.toMatch(/resources · /);
    expect(result.stdout.trim().split('\n')).toHaveLength(1);
    const summary = JSON.parse(result.stdout);
    const imported = resources.filter((resource) => IMPORTED.has(resource.resourceType)).length;
    expect(summary).toMatchObject({ imported, updated: 0, rejectedTotal: 0, files: population.files.length });
  }, 300_000);
});
