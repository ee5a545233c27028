import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { freePort } from '../../src/db/embedded-postgres.js';
import { DEMO_CLINIC } from '../../src/emdr/demo/demo-clinic.js';
import { launchChromium, screenshot } from '../support/browser.js';
import { acquireMakeRunLock } from '../support/build-lock.js';
import { exitOf, repoRoot, waitForOk } from '../support/cli.js';
import { serveStarted } from '../support/processes.js';

/**
 * The README's walk-throughs, run exactly as written: every `<!-- readme-test: KIND key=value … -->`
 * comment, in order, with the ```sh block that follows it.
 * - `background` blocks are the long-running terminals (`make run`, the receiver): each runs in a
 *   bash of its own, until the end; the test waits for `ready-url` to answer 200 or for its output
 *   to show `ready-output`. `stop terminal=N` is Ctrl-C in the Nth of them, `restart terminal=N`
 *   runs its block again.
 * - `run` blocks are typed into one bash, one after the other, so variables carry over as in a
 *   terminal; each must end with status 0 and print `expect`, and waits first, as the reader does,
 *   until a background terminal has printed `after` since the run block before it began.
 * - `console request=EXPRESSION expect-button=NAME`: the reader looks at the delivery console; the
 *   test signs in there with Chromium as the demo clinic and finds the button on the request the
 *   shell's EXPRESSION names.
 * The only changes, as the README says: the ports 8080, 8081 and 9090 become free ones,
 * `walkthrough/` a temporary folder and `.data/` a fresh DATA_DIR, which `make run` gets with
 * DEMO_CALLBACK_URL (the demo clinic's callback URL on the port that replaced 9090). 8080 and 8081
 * are the ports `make run`'s service binds itself (PORT=0, INTERNAL_PORT=0), read from its start
 * line; 9090 is chosen before, as the demo clinic's callback URL is set before the receiver starts
 * and the receiver comes back on it in step 6.
 */

interface Step {
  kind: 'run' | 'background' | 'stop' | 'restart' | 'console';
  options: Record<string, string>;
  /** The ```sh block of `run` and `background` steps. */
  code: string;
  /** Line of the README where the step starts, for messages. */
  line: number;
}

/** The steps of a README, in order: markers with their code blocks (run, background), markers alone (the others). */
async function readmeSteps(file: string): Promise<Step[]> {
  const text = await fs.readFile(path.join(repoRoot, file), 'utf8');
  const steps: Step[] = [];
  for (const match of text.matchAll(/<!-- readme-test: (run|background|stop|restart|console)([^>]*?)-->(?:\n```sh\n([\s\S]*?)\n```)?/g)) {
    const kind = match[1] as Step['kind'];
    const withCode = kind === 'run' || kind === 'background';
    if (withCode !== (match[3] !== undefined))
      throw new Error(`${file}: the ${kind} marker at line ${text.slice(0, match.index).split('\n').length} ${withCode ? 'lacks' : 'has'} a sh block`);
    const options = Object.fromEntries(
      [...match[2]!.matchAll(/([\w-]+)=(?:"([^"]*)"|'([^']*)'|(\S+))/g)].map((option) => [option[1]!, option[2] ?? option[3] ?? option[4]!]),
    );
    steps.push({ kind, options, code: match[3] ?? '', line: text.slice(0, match.index).split('\n').length + 2 });
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

describe('the walk-throughs in Russian', () => {
  it('README.ru.md runs the same steps as README.md: the same markers and commands, in the same order', async () => {
    const [english, russian] = await Promise.all([readmeSteps('README.md'), readmeSteps('README.ru.md')]);
    const commands = (steps: Step[]) => steps.map(({ kind, options, code }) => ({ kind, options, code }));
    expect(russian.length).toBeGreaterThan(10);
    expect(commands(russian)).toEqual(commands(english));
  });
});

describe('the README walk-throughs', () => {
  let steps: Step[];
  let browser: Browser | undefined;
  let workDir: string;
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  let substitute: (code: string) => string;
  /** The ports that replace the README's: 9090 chosen at the start, 8080 and 8081 once `make run`'s service has bound them. */
  const ports: Partial<Record<8080 | 8081 | 9090, number>> = {};
  let shell: ChildProcess;
  let shellOutput: { text: () => string };
  const background: Array<{ child: ChildProcess; output: { text: () => string } }> = [];
  let releaseLock: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    steps = await readmeSteps('README.md');
    workDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ehr-gateway-readme-'));
    // Its own temporary folder: as root the embedded PostgreSQL runs as the postgres user, who must reach it.
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ehr-gateway-readme-data-'));
    ports[9090] = await freePort();
    substitute = (code) =>
      code
        .replace(/\b(8080|8081|9090)\b/g, (port) => {
          const replaced = ports[Number(port) as 8080];
          if (replaced === undefined) throw new Error(`${code}: uses ${port} before make run's service said which port replaces it`);
          return String(replaced);
        })
        .replaceAll('walkthrough/', `${workDir}/walkthrough/`)
        .replace(/\bwalkthrough$/gm, `${workDir}/walkthrough`)
        .replaceAll('.data/', `${dataDir}/`);
    // What `make run` reads, for every terminal alike (the CLI of terminal 3 finds the same DATA_DIR).
    env = {
      ...process.env,
      DATABASE_URL: '',
      DATA_DIR: dataDir,
      PORT: '0',
      INTERNAL_PORT: '0',
      HOST: '127.0.0.1',
      DEMO_CALLBACK_URL: substitute(DEMO_CLINIC.callbackUrls[0]),
    };
    releaseLock = await acquireMakeRunLock();
  }, 600_000);

  afterAll(async () => {
    await browser?.close();
    if (shell && shell.exitCode === null) shell.kill('SIGKILL');
    for (const { child } of background.reverse()) {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGTERM');
      await exitOf(child, 60_000).catch(() => process.kill(-child.pid!, 'SIGKILL'));
    }
    await releaseLock?.();
    if (workDir) await fs.rm(workDir, { recursive: true, force: true });
    if (dataDir) await fs.rm(dataDir, { recursive: true, force: true });
  });

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

  /** A background terminal: its block in a bash of its own (its own process group, for Ctrl-C), ready when it says so. */
  async function startTerminal(step: Step): Promise<{ child: ChildProcess; output: { text: () => string }; step: Step }> {
    const child = spawn('bash', ['--noprofile', '--norc', '-c', substitute(step.code)], {
      cwd: repoRoot,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output = collect(child);
    const failed = () => `README line ${step.line} said: ${output.text().slice(-3000)}`;
    const exited = new Promise<never>((_resolve, reject) => child.on('exit', (code) => reject(new Error(`exited with ${code}; ${failed()}`))));
    exited.catch(() => undefined);
    if (step.options['ready-url']) {
      // The block of `make run`: its service binds ports of its own, which replace 8080 and 8081 from its start line on.
      if (/\b(8080|8081)\b/.test(step.options['ready-url'])) {
        const serve = await serveStarted(`README line ${step.line}`, child, { timeoutMs: 300_000 });
        ports[8080] = Number(new URL(serve.publicUrl).port);
        ports[8081] = Number(new URL(serve.internalUrl).port);
      }
      await Promise.race([waitForOk(substitute(step.options['ready-url']), 300_000), exited]).catch((error: Error) => {
        throw new Error(`${error.message}; ${failed()}`);
      });
    }
    if (step.options['ready-output']) await Promise.race([waitUntil(failed(), () => output.text().includes(step.options['ready-output']!), 120_000), exited]);
    return { child, output, step };
  }

  /** Ctrl-C in a terminal: SIGINT to its process group; it must end by itself. */
  async function interrupt(terminal: { child: ChildProcess }): Promise<void> {
    process.kill(-terminal.child.pid!, 'SIGINT');
    await exitOf(terminal.child, 60_000);
  }

  /** The reader at the console: signs in as the demo clinic and finds `button` on the request `queueMessageId`. */
  async function lookAtConsole(step: Step, queueMessageId: string): Promise<void> {
    browser ??= await launchChromium();
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    try {
      await page.goto(substitute('http://localhost:8080/console'));
      await page.getByLabel('businessId').fill(DEMO_CLINIC.businessId);
      await page.getByLabel('user').fill(DEMO_CLINIC.user);
      await page.getByLabel('token').fill(DEMO_CLINIC.token);
      await page.getByRole('button', { name: 'Sign in' }).click();
      const request = page.locator(`details.request[data-queue-message-id="${queueMessageId}"]`);
      await request.waitFor({ timeout: 30_000 });
      await request.locator('.callback.state-failed').getByRole('button', { name: step.options['expect-button']! }).waitFor({ timeout: 10_000 });
      await screenshot(page, 'readme-step-6-console');
    } finally {
      await page.close();
    }
  }

  it('runs every marked command of both walk-throughs, from make run to the files of a DemandContent and a replayed callback', {
    timeout: 900_000,
  }, async () => {
    expect(steps.filter((step) => step.kind === 'background').length).toBe(2);
    expect(steps.filter((step) => step.kind === 'run').length).toBeGreaterThan(10);
    const started = Date.now();
    let readyAt: number | undefined;

    shell = spawn('bash', ['--noprofile', '--norc'], { cwd: repoRoot, env, stdio: ['pipe', 'pipe', 'pipe'] });
    shellOutput = collect(shell);
    const terminals: Array<{ child: ChildProcess; output: { text: () => string }; step: Step }> = [];
    /** Each terminal's output length when the last run block began: `after` looks at what came since. */
    let marks = new Map<ChildProcess, number>();
    const backgroundText = () => background.map(({ output }) => output.text()).join('\n');
    const sinceLastRun = () => background.map(({ child, output }) => output.text().slice(marks.get(child) ?? 0)).join('\n');
    const terminal = (step: Step) => {
      const found = terminals[Number(step.options.terminal) - 1];
      if (!found) throw new Error(`README line ${step.line}: no terminal ${step.options.terminal}`);
      return found;
    };

    for (const step of steps) {
      if (step.kind === 'background' || step.kind === 'restart') {
        const block = step.kind === 'background' ? step : terminal(step).step;
        const opened = await startTerminal(block);
        background.push(opened);
        if (step.kind === 'background') terminals.push(opened);
        else terminals[Number(step.options.terminal) - 1] = opened;
        if (step.options['ready-url']) readyAt = Date.now();
        continue;
      }
      if (step.kind === 'stop') {
        await interrupt(terminal(step));
        continue;
      }
      if (step.kind === 'console') {
        const { output } = await typeIn({ ...step, code: `echo "console-request ${step.options.request}"` });
        await lookAtConsole(step, /console-request (\S+)/.exec(output)![1]!);
        continue;
      }
      if (step.options.after)
        await waitUntil(
          `README line ${step.line}: waiting for "${step.options.after}"; the terminals said: ${sinceLastRun().slice(-2000)}`,
          () => sinceLastRun().includes(step.options.after!),
          90_000,
        );
      marks = new Map(background.map(({ child, output }) => [child, output.text().length]));
      const { output, status } = await typeIn(step);
      expect(status, `README line ${step.line} exited ${status}: ${output}`).toBe(0);
      if (step.options.expect) expect(output, `README line ${step.line}`).toContain(step.options.expect);
    }

    // What the walk-through promises: both callbacks of both requests accepted by the verifying receiver
    // (the acceptance with its warning code), the file pair saved, the failed attempts in terminal 1.
    const everything = backgroundText();
    for (const name of ['SendRegisterDocumentResponse', 'SendRegisterDocumentResultResponse', 'SendDemandContentResponse', 'SendDocumentFileResultResponse']) {
      expect(everything).toMatch(new RegExp(`${name} msg_\\w+ accepted \\(status success`));
    }
    expect(everything).toMatch(/SendRegisterDocumentResponse msg_\w+ accepted \(status success\) warnings: CERTIFICATE_CHAIN_NOT_CHECKED/);
    expect(everything).not.toContain('rejected');
    expect(everything).toMatch(/"error":"connection failed: ECONNREFUSED".*"msg":"callback attempt failed"/);
    expect(everything).toMatch(/"method":"POST","path":"\/api\/RegisterDocument","status":200,"durationMs":[\d.]+,"msg":"request"/);
    const saved = await fs.readdir(path.join(workDir, 'walkthrough', 'received'));
    expect(saved.sort()).toEqual([expect.stringMatching(/^\d\d\.\d\d\.\d{9}\.xml$/), expect.stringMatching(/^\d\d\.\d\d\.\d{9}\.xml\.sig$/)]);

    // The clock: when the first callback was accepted, read from the receiver's own timestamp.
    const acceptedAt = Date.parse(/^(\S+) SendRegisterDocumentResponse \S+ accepted/m.exec(everything)![1]!);
    const seconds = (at: number) => ((at - started) / 1000).toFixed(1);
    process.stdout.write(
      `readme: make run ready ${seconds(readyAt!)} s after it started; first callback delivered ${seconds(acceptedAt)} s after; the whole walk-through ${seconds(Date.now())} s\n`,
    );
  });
});
