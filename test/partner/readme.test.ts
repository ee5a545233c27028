import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { openDatabase } from '../../src/db/database.js';
import { freePort } from '../../src/db/embedded-postgres.js';
import { DEMO_CLINIC } from '../../src/emdr/demo.js';
import { createLogger } from '../../src/logging/logger.js';
import { acquireMakeRunLock } from '../support/build-lock.js';
import { exitOf, repoRoot, waitForOk } from '../support/cli.js';

/**
 * The README's walk-throughs, run exactly as written: every ```sh block after a
 * `<!-- readme-test: KIND key=value … -->` comment, in order.
 * - `background` blocks are the long-running terminals (`make run`, the receiver): each runs in a
 *   bash of its own, until the end; the test waits for `ready-url` to answer 200 or for its output
 *   to show `ready-output`.
 * - `run` blocks are typed into one bash, one after the other, so variables carry over as in a
 *   terminal; each must end with status 0 and print `expect`, and waits first, as the reader does,
 *   until a background terminal has printed `after`.
 * The only changes, as the README says: the ports 8080, 8081 and 9090 become free ones (the demo
 * clinic's callback URL too), `walkthrough/` becomes a temporary folder, and `make run` gets a
 * fresh DATA_DIR.
 */

interface Step {
  kind: 'run' | 'background';
  options: Record<string, string>;
  code: string;
  /** Line of the README where the block starts, for messages. */
  line: number;
}

async function readmeSteps(): Promise<Step[]> {
  const text = await fs.readFile(path.join(repoRoot, 'README.md'), 'utf8');
  const steps: Step[] = [];
  for (const match of text.matchAll(/<!-- readme-test: (run|background)([^>]*?)-->\n```sh\n([\s\S]*?)\n```/g)) {
    const options = Object.fromEntries([...match[2]!.matchAll(/([\w-]+)=(?:"([^"]*)"|'([^']*)'|(\S+))/g)].map((option) => [option[1]!, option[2] ?? option[3] ?? option[4]!]));
    steps.push({ kind: match[1] as Step['kind'], options, code: match[3]!, line: text.slice(0, match.index).split('\n').length + 2 });
  }
  return steps;
}

/** Lines of output from a child, as they come, for waiting on. */
function collect(child: ChildProcess): { text: () => string } {
  let text = '';
  child.stdout!.on('data', (chunk: Buffer) => (text += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return { text: () => text };
}

async function waitUntil(what: string, done: () => boolean, timeoutMs: number): Promise<void> {
  const started = Date.now();
  while (!done()) {
    if (Date.now() - started > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('the README walk-throughs', () => {
  let steps: Step[];
  let workDir: string;
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  let substitute: (code: string) => string;
  let shell: ChildProcess;
  let shellOutput: { text: () => string };
  const background: Array<{ child: ChildProcess; output: { text: () => string } }> = [];
  let releaseLock: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    steps = await readmeSteps();
    workDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ehr-gateway-readme-'));
    // Its own temporary folder: as root the embedded PostgreSQL runs as the postgres user, who must reach it.
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ehr-gateway-readme-data-'));
    const ports = { 8080: await freePort(), 8081: await freePort(), 9090: await freePort() };
    substitute = (code) => code.replace(/\b(8080|8081|9090)\b/g, (port) => String(ports[Number(port) as 8080])).replaceAll('walkthrough/', `${workDir}/walkthrough/`).replace(/\bwalkthrough$/gm, `${workDir}/walkthrough`);
    // What `make run` reads, for every terminal alike (the CLI of terminal 3 finds the same DATA_DIR).
    env = { ...process.env, DATABASE_URL: '', DATA_DIR: dataDir, PORT: String(ports[8080]), INTERNAL_PORT: String(ports[8081]), HOST: '127.0.0.1' };
    releaseLock = await acquireMakeRunLock();
  }, 600_000);

  afterAll(async () => {
    if (shell && shell.exitCode === null) shell.kill('SIGKILL');
    for (const { child } of background.reverse()) {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGTERM');
      await exitOf(child, 60_000).catch(() => process.kill(-child.pid!, 'SIGKILL'));
    }
    await releaseLock?.();
    if (workDir) await fs.rm(workDir, { recursive: true, force: true });
    if (dataDir) await fs.rm(dataDir, { recursive: true, force: true });
  });

  /** The demo clinic calls back http://127.0.0.1:9090; the receiver listens on the port that replaced 9090. */
  async function registerSubstitutedCallbackUrl(): Promise<void> {
    const config = loadConfig(env as Record<string, string>);
    const database = await openDatabase(config, createLogger('warn', process.stderr), { adopt: false });
    try {
      const url = substitute(DEMO_CLINIC.callbackUrls[0]);
      const updated = await database.knex('emdr_clients')
        .where({ business_id: DEMO_CLINIC.businessId })
        .update({ callback_urls: database.knex.raw('array_replace(callback_urls, ?, ?)', [DEMO_CLINIC.callbackUrls[0], url]) });
      expect(updated).toBe(1);
    } finally {
      await database.close();
    }
  }

  let stepNumber = 0;
  /** Types a block into the shell; its output and exit status. */
  async function typeIn(step: Step): Promise<{ output: string; status: number }> {
    stepNumber += 1;
    const file = path.join(workDir, `step-${stepNumber}.sh`);
    await fs.writeFile(file, `${substitute(step.code)}\n`);
    const before = shellOutput.text().length;
    const marker = `__readme_step_${stepNumber}_done__`;
    shell.stdin!.write(`source ${file}; echo "${marker} $?"\n`);
    await waitUntil(`README line ${step.line}`, () => shellOutput.text().includes(marker), 120_000);
    const output = shellOutput.text().slice(before);
    const status = Number(new RegExp(`${marker} (\\d+)`).exec(output)![1]);
    return { output: output.slice(0, output.indexOf(marker)), status };
  }

  it('runs every marked command of both walk-throughs, from make run to the files of a DemandContent', { timeout: 900_000 }, async () => {
    expect(steps.filter((step) => step.kind === 'background').length).toBe(2);
    expect(steps.filter((step) => step.kind === 'run').length).toBeGreaterThan(10);
    const started = Date.now();
    let readyAt: number | undefined;

    shell = spawn('bash', ['--noprofile', '--norc'], { cwd: repoRoot, env, stdio: ['pipe', 'pipe', 'pipe'] });
    shellOutput = collect(shell);
    const backgroundText = () => background.map(({ output }) => output.text()).join('\n');

    for (const step of steps) {
      if (step.kind === 'background') {
        const child = spawn('bash', ['--noprofile', '--norc', '-c', substitute(step.code)], { cwd: repoRoot, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
        const output = collect(child);
        background.push({ child, output });
        const failed = () => `README line ${step.line} said: ${output.text().slice(-3000)}`;
        const exited = new Promise<never>((_resolve, reject) => child.on('exit', (code) => reject(new Error(`exited with ${code}; ${failed()}`))));
        exited.catch(() => undefined);
        if (step.options['ready-url']) {
          await Promise.race([waitForOk(substitute(step.options['ready-url']), 300_000), exited]).catch((error: Error) => {
            throw new Error(`${error.message}; ${failed()}`);
          });
          readyAt = Date.now();
          await registerSubstitutedCallbackUrl();
        }
        if (step.options['ready-output']) await Promise.race([waitUntil(failed(), () => output.text().includes(step.options['ready-output']!), 60_000), exited]);
        continue;
      }
      if (step.options.after) await waitUntil(`README line ${step.line}: waiting for "${step.options.after}"; the terminals said: ${backgroundText().slice(-2000)}`, () => backgroundText().includes(step.options.after!), 60_000);
      const { output, status } = await typeIn(step);
      expect(status, `README line ${step.line} exited ${status}: ${output}`).toBe(0);
      if (step.options.expect) expect(output, `README line ${step.line}`).toContain(step.options.expect);
    }

    // What the walk-through promises: both callbacks of both requests accepted by the verifying receiver, the file pair saved.
    const terminals = backgroundText();
    for (const name of ['SendRegisterDocumentResponse', 'SendRegisterDocumentResultResponse', 'SendDemandContentResponse', 'SendDocumentFileResultResponse']) {
      expect(terminals).toMatch(new RegExp(`${name} msg_\\w+ accepted \\(status success`));
    }
    expect(terminals).not.toContain('rejected');
    const saved = await fs.readdir(path.join(workDir, 'walkthrough', 'received'));
    expect(saved.sort()).toEqual([expect.stringMatching(/^\d\d\.\d\d\.\d{9}\.xml$/), expect.stringMatching(/^\d\d\.\d\d\.\d{9}\.xml\.sig$/)]);

    // The clock: when the first callback was accepted, read from the receiver's own timestamp.
    const acceptedAt = Date.parse(/^(\S+) SendRegisterDocumentResponse \S+ accepted/m.exec(terminals)![1]!);
    const seconds = (at: number) => ((at - started) / 1000).toFixed(1);
    process.stdout.write(`readme: make run ready ${seconds(readyAt!)} s after it started; first callback delivered ${seconds(acceptedAt)} s after; the whole walk-through ${seconds(Date.now())} s\n`);
  });
});
