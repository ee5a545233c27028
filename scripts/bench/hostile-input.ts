/**
 * Hostile and careless input against `ehr-gateway serve`, measured from outside the process
 * (issue 9). Each scenario prints one JSON line. `--root DIR` runs the `serve` of another
 * checkout (e.g. an older commit) so that before and after are measured the same way.
 *
 *   tsx scripts/bench/hostile-input.ts [--root DIR] SCENARIO...
 *
 * Scenarios:
 *   gzip-bomb          32 KB of gzip inflating to 32 MB of [{},{},…], no credentials, to RegisterDocument
 *                      and to /api/nope: time to the answer, peak RSS growth, /healthz latency meanwhile
 *   slow-clients       one byte every SLOW_INTERVAL (default 10s) in the headers, and in a body with valid
 *                      credentials: how long the connection stays open (capped at SLOW_CAP, default 400s)
 *   import-trace       which packages importing src/service.ts loads (node-ipc, ws, connect, cors, json-schema-faker)
 *   outage             the database connection cut for 15 s while interface A and B are called: answers, and
 *                      the log lines that are not one JSON object
 *   port-in-use        `serve` on a taken PORT, PORT_TRIES times (default 17): exits, hangs, lines printed
 *   sigterm-keepalive  keep-alive clients during a SIGTERM, 5 rounds: requests that failed with a reset
 *   readonly-datadir   `serve` on a DATA_DIR whose cluster it cannot write: exit code and what it printed
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { EmbeddedPostgres, ensureDatabase, freePort } from '../../src/db/embedded-postgres.js';
import { createLogger } from '../../src/logging/logger.js';
import { packagesLoadedBy } from '../../test/support/import-trace.js';
import { keepAliveClients, trickle } from '../../test/support/raw-http.js';
import { startTcpProxy } from '../../test/support/tcp-proxy.js';
import { commandLine } from '../lib/command-line.js';

const HELP = `usage: tsx scripts/bench/hostile-input.ts [--root DIR] [scenario ...]

Hostile and careless input against \`ehr-gateway serve\`, measured from outside the process; one JSON
line per scenario. Scenarios (default all): gzip-bomb, import-trace, outage, port-in-use,
sigterm-keepalive, readonly-datadir, slow-clients (the comment at the top of the file says what each
measures; the environment's SLOW_INTERVAL_MS, SLOW_CAP_MS and PORT_TRIES tune some).

options:
  --root DIR   the checkout whose serve is measured (default this one), e.g. an older commit
  -h, --help   this text

example: tsx scripts/bench/hostile-input.ts gzip-bomb port-in-use`;

const { values, positionals } = commandLine('hostile-input', HELP, { options: { root: { type: 'string' } }, allowPositionals: true });
const root = path.resolve(values.root ?? path.join(import.meta.dirname, '../..'));
const scenarios =
  positionals.length > 0 ? positionals : ['gzip-bomb', 'import-trace', 'outage', 'port-in-use', 'sigterm-keepalive', 'readonly-datadir', 'slow-clients'];
const ORGANIZATION = '1.2.643.5.1.13.13.12.2.77.7973';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Serve {
  child: ChildProcess;
  stdout: string[];
  stderr: string[];
  url: string;
  internalUrl: string;
  env: Record<string, string>;
}

function spawnRoot(cliArgs: string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', path.join(root, 'src/main.ts'), ...cliArgs], {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

function collectLines(child: ChildProcess): { stdout: string[]; stderr: string[] } {
  const lines = { stdout: [] as string[], stderr: [] as string[] };
  for (const stream of ['stdout', 'stderr'] as const) {
    if (!child[stream]) continue;
    let rest = '';
    child[stream]!.on('data', (chunk: Buffer) => {
      const parts = (rest + chunk.toString()).split('\n');
      rest = parts.pop()!;
      lines[stream].push(...parts);
    });
    child[stream]!.on('end', () => rest && lines[stream].push(rest));
  }
  return lines;
}

async function exitWithin(child: ChildProcess, ms: number): Promise<number | null | 'hung'> {
  if (child.exitCode !== null) return child.exitCode;
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve('hung'), ms);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

async function waitReady(url: string, ms = 60_000): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (
      await fetch(`${url}/readyz`).then(
        (response) => response.ok,
        () => false,
      )
    )
      return;
    await sleep(200);
  }
  throw new Error(`${url} not ready`);
}

const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ehr-gateway-hostile-'));
const embedded = process.env.DATABASE_URL ? undefined : new EmbeddedPostgres(dataDir, createLogger('warn', process.stderr));
const serverUrl = process.env.DATABASE_URL
  ? process.env.DATABASE_URL.slice(0, process.env.DATABASE_URL.lastIndexOf('/'))
  : (await embedded!.start({ adopt: true })).replace(/\/[^/]*$/, '');

async function newDatabase(): Promise<string> {
  const name = `hostile_${randomUUID().slice(0, 8)}`;
  await ensureDatabase(serverUrl, name);
  return `${serverUrl}/${name}`;
}

async function startServe(extraEnv: Record<string, string> = {}): Promise<Serve> {
  const env: Record<string, string> = {
    DATABASE_URL: await newDatabase(),
    USER_SIGN_KEY: randomBytes(32).toString('hex'),
    PORT: String(await freePort()),
    INTERNAL_PORT: String(await freePort()),
    HOST: '127.0.0.1',
    INTERNAL_HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    INTERNAL_USERS: 'bench:bench-password',
    ...extraEnv,
  };
  const child = spawnRoot(['serve'], env);
  const lines = collectLines(child);
  const url = `http://127.0.0.1:${env.PORT}`;
  await waitReady(url);
  return { child, ...lines, url, internalUrl: `http://127.0.0.1:${env.INTERNAL_PORT}`, env };
}

async function stopServe(serve: Serve): Promise<void> {
  serve.child.kill('SIGTERM');
  if ((await exitWithin(serve.child, 30_000)) === 'hung') serve.child.kill('SIGKILL');
}

/** A clinic account by the checkout's own CLI; `key` is the serve's data key (DATA_KEY, once USER_SIGN_KEY), which seals its callback secrets. */
async function addClinic(databaseUrl: string, key: string): Promise<{ businessId: string; user: string; token: string }> {
  const businessId = `bench-${randomUUID().slice(0, 8)}`;
  const child = spawnRoot(
    ['clients', 'add', '--business-id', businessId, '--user', 'mis', '--callback-url', 'http://127.0.0.1:9', '--organization', ORGANIZATION],
    { DATABASE_URL: databaseUrl, USER_SIGN_KEY: key, LOG_LEVEL: 'warn' },
  );
  const lines = collectLines(child);
  await exitWithin(child, 60_000);
  return JSON.parse(lines.stdout.join('\n')) as { businessId: string; user: string; token: string };
}

async function procStatus(pid: number, field: 'VmRSS' | 'VmHWM'): Promise<number> {
  const status = await fs.readFile(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)![1]) / 1024;
}

const round = (value: number) => Math.round(value * 10) / 10;
const isJsonLine = (line: string) => {
  try {
    const value = JSON.parse(line) as unknown;
    return typeof value === 'object' && value !== null;
  } catch {
    return false;
  }
};

async function gzipBomb(): Promise<unknown> {
  const inflated = Buffer.from(`[${'{},'.repeat(10_666_666)}{}]`);
  const body = gzipSync(inflated, { level: 9 });
  const serve = await startServe({ RATE_LIMIT: '0' });
  const results: unknown[] = [];
  try {
    for (const route of ['/api/RegisterDocument', '/api/nope']) {
      await sleep(2000);
      const pid = serve.child.pid!;
      await fs.writeFile(`/proc/${pid}/clear_refs`, '5');
      const rssBefore = await procStatus(pid, 'VmRSS');
      let polling = true;
      let healthMaxMs = 0;
      const poller = (async () => {
        while (polling) {
          const started = performance.now();
          await fetch(`${serve.url}/healthz`).then(
            (response) => response.arrayBuffer(),
            () => undefined,
          );
          healthMaxMs = Math.max(healthMaxMs, performance.now() - started);
          await sleep(50);
        }
      })();
      const started = performance.now();
      const response = await fetch(`${serve.url}${route}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
        body,
      });
      const text = await response.text();
      const answerMs = performance.now() - started;
      polling = false;
      await poller;
      results.push({
        route,
        gzipBytes: body.length,
        inflatedBytes: inflated.length,
        status: response.status,
        answer: text.slice(0, 160),
        answerMs: Math.round(answerMs),
        rssGrowthMiB: round((await procStatus(pid, 'VmHWM')) - rssBefore),
        healthzMaxLatencyMs: Math.round(healthMaxMs),
      });
    }
  } finally {
    await stopServe(serve);
  }
  return results;
}

async function slowClients(): Promise<unknown> {
  const intervalMs = Number(process.env.SLOW_INTERVAL_MS ?? 10_000);
  const capMs = Number(process.env.SLOW_CAP_MS ?? 400_000);
  const serve = await startServe();
  try {
    const clinic = await addClinic(serve.env.DATABASE_URL!, serve.env.USER_SIGN_KEY!);
    const headers = `POST /api/RegisterDocument HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: `;
    const body = `POST /api/RegisterDocument HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\nbusinessId: ${clinic.businessId}\r\nuser: ${clinic.user}\r\ntoken: ${clinic.token}\r\n\r\n{`;
    const port = Number(serve.env.PORT);
    const held = async (head: string, byte: string) => {
      const { heldMs, closedByServer, answer } = await trickle(port, head, byte, intervalMs, capMs);
      return { heldSeconds: Math.round(heldMs / 100) / 10, closedByServer, answered: answer.split('\r\n')[0] ?? '' };
    };
    const [slowHeaders, slowBody] = await Promise.all([held(headers, 'a'), held(body, ' ')]);
    const normal = await fetch(`${serve.url}/healthz`).then((response) => response.status);
    return { intervalSeconds: intervalMs / 1000, capSeconds: capMs / 1000, slowHeaders, slowBody, normalRequestStatusAfterwards: normal };
  } finally {
    await stopServe(serve);
  }
}

async function importTrace(): Promise<unknown> {
  const packages = await packagesLoadedBy(path.join(root, 'src/service.ts'), root);
  const unwanted = ['@open-rpc/server-js', 'node-ipc', 'ws', 'connect', 'cors', 'json-schema-faker'];
  return { packagesLoaded: packages.length, unwantedLoaded: unwanted.filter((name) => packages.includes(name)) };
}

async function outage(): Promise<unknown> {
  const databaseUrl = await newDatabase();
  const target = new URL(databaseUrl);
  const proxy = await startTcpProxy('127.0.0.1', Number(target.port));
  const proxied = new URL(databaseUrl);
  proxied.port = String(proxy.port);
  const serve = await startServe({ DATABASE_URL: proxied.toString(), LOG_LEVEL: 'info' });
  const clinic = await addClinic(databaseUrl, serve.env.USER_SIGN_KEY!);
  const version = JSON.parse(await fs.readFile(path.join(root, 'specs/openrpc.json'), 'utf8')).info.version as string;
  const calls = {
    emdr: async () => {
      const response = await fetch(`${serve.url}/api/DemandContent`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', businessId: clinic.businessId, user: clinic.user, token: clinic.token },
        body: JSON.stringify({ emdrId: '26.11.000000001' }),
      });
      const body = (await response.json()) as { errors?: Array<{ code: string }> };
      return `${response.status} ${body.errors?.[0]?.code ?? 'ok'}${response.headers.get('retry-after') ? ' Retry-After' : ''}`;
    },
    ehr: async () => {
      const response = await fetch(`${serve.url}/${version}/`, {
        method: 'POST',
        headers: { 'content-type': 'application/json;charset=UTF-8' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'patient.get_patient', params: {}, cred: { user: 'u', token: 't' } }),
      });
      const body = (await response.json()) as { error?: { code: number; data?: { reason?: string } } };
      return `${response.status} ${body.error?.code ?? 'ok'} ${body.error?.data?.reason ?? ''}`.trim();
    },
  };
  const answers: Record<string, Record<string, number>> = { emdr: {}, ehr: {} };
  const linesBefore = serve.stdout.length + serve.stderr.length;
  try {
    await proxy.cutOff();
    const until = Date.now() + 15_000;
    while (Date.now() < until) {
      for (const [name, call] of Object.entries(calls)) {
        const answer = await call().catch((error: Error) => `no answer: ${error.message}`);
        answers[name]![answer] = (answers[name]![answer] ?? 0) + 1;
      }
      await sleep(500);
    }
    await proxy.restore();
    await sleep(3000);
    const afterwards = { emdr: await calls.emdr(), ehr: await calls.ehr() };
    const lines = [...serve.stdout, ...serve.stderr].slice(linesBefore).filter((line) => line.trim() !== '');
    const nonJson = lines.filter((line) => !isJsonLine(line));
    const messages = [
      ...new Set(
        lines.filter(isJsonLine).map((line) => {
          const entry = JSON.parse(line) as { msg?: string; err?: { message?: string } };
          return `${entry.msg}${entry.err?.message ? `: ${entry.err.message}` : ''}`;
        }),
      ),
    ];
    return {
      answersDuringOutage: answers,
      answersAfterRestore: afterwards,
      logLines: lines.length,
      nonJsonLines: nonJson.length,
      sampleNonJson: nonJson.slice(0, 3),
      distinctJsonMessages: messages.slice(0, 12),
    };
  } finally {
    await stopServe(serve);
    await proxy.close();
  }
}

async function portInUse(): Promise<unknown> {
  const tries = Number(process.env.PORT_TRIES ?? 17);
  const blocker = net.createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', () => resolve()));
  const taken = (blocker.address() as net.AddressInfo).port;
  const databaseUrl = await newDatabase();
  const outcomes: Record<string, number> = {};
  const printed = new Set<string>();
  for (let attempt = 0; attempt < tries; attempt += 1) {
    const env = {
      DATABASE_URL: databaseUrl,
      USER_SIGN_KEY: randomBytes(32).toString('hex'),
      PORT: String(taken),
      INTERNAL_PORT: String(await freePort()),
      HOST: '127.0.0.1',
      INTERNAL_HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
    };
    const child = spawnRoot(['serve'], env);
    const lines = collectLines(child);
    const exit = await exitWithin(child, 20_000);
    if (exit === 'hung') child.kill('SIGKILL');
    const key = exit === 'hung' ? 'hung (killed after 20 s)' : `exit ${exit}`;
    outcomes[key] = (outcomes[key] ?? 0) + 1;
    printed.add(`${lines.stderr.filter(Boolean).length} stderr line(s): ${lines.stderr.filter(Boolean).join(' | ').slice(0, 200)}`);
  }
  blocker.close();
  return { tries, outcomes, printed: [...printed] };
}

async function sigtermKeepAlive(): Promise<unknown> {
  const rounds = 5;
  const failures: Record<string, number> = {};
  let requests = 0;
  let closeAnnounced = 0;
  for (let round = 0; round < rounds; round += 1) {
    const serve = await startServe();
    const clients = keepAliveClients(`${serve.url}/healthz`, 4);
    await sleep(1000);
    serve.child.kill('SIGTERM');
    await sleep(2000);
    const tally = await clients.stop();
    requests += tally.answered;
    closeAnnounced += tally.closeAnnounced;
    for (const code of tally.failures) failures[code] = (failures[code] ?? 0) + 1;
    if ((await exitWithin(serve.child, 30_000)) === 'hung') serve.child.kill('SIGKILL');
  }
  return { rounds, requests, responsesAnnouncingClose: closeAnnounced, failures, resets: (failures.ECONNRESET ?? 0) + (failures.EPIPE ?? 0) };
}

async function readonlyDataDir(): Promise<unknown> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'ehr-gateway-readonly-'));
  const env = {
    DATA_DIR: dir,
    DATABASE_URL: '',
    PORT: String(await freePort()),
    INTERNAL_PORT: String(await freePort()),
    HOST: '127.0.0.1',
    INTERNAL_HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
  };
  try {
    const first = spawnRoot(['serve'], env);
    await waitReady(`http://127.0.0.1:${env.PORT}`);
    first.kill('SIGTERM');
    await exitWithin(first, 30_000);
    await new Promise<void>((resolve, reject) =>
      spawn('chmod', ['-R', 'a-w', dir]).on('exit', (code) => (code === 0 ? resolve() : reject(new Error('chmod')))),
    );
    const second = spawnRoot(['serve'], env);
    const lines = collectLines(second);
    const exit = await exitWithin(second, 60_000);
    if (exit === 'hung') second.kill('SIGKILL');
    const printed = [...lines.stdout, ...lines.stderr].filter(Boolean);
    return {
      exit,
      linesPrinted: printed.length,
      mentionsOldShutdown: printed.some((line) => /shut down|shutting down/i.test(line)),
      printed: printed.map((line) => line.slice(0, 300)),
    };
  } finally {
    await new Promise((resolve) => spawn('chmod', ['-R', 'u+w', dir]).on('exit', resolve));
    await fs.rm(dir, { recursive: true, force: true });
  }
}

const runners: Record<string, () => Promise<unknown>> = {
  'gzip-bomb': gzipBomb,
  'slow-clients': slowClients,
  'import-trace': importTrace,
  outage,
  'port-in-use': portInUse,
  'sigterm-keepalive': sigtermKeepAlive,
  'readonly-datadir': readonlyDataDir,
};

try {
  for (const scenario of scenarios) {
    const runner = runners[scenario];
    if (!runner) throw new Error(`unknown scenario ${scenario}; one of ${Object.keys(runners).join(', ')}`);
    const started = Date.now();
    const result = await runner();
    console.log(JSON.stringify({ scenario, root, seconds: Math.round((Date.now() - started) / 100) / 10, result }));
  }
} finally {
  await embedded?.stop();
  await fs.rm(dataDir, { recursive: true, force: true });
}
