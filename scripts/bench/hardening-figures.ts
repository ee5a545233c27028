/**
 * The figures of issue 9's interface B items, measured against `ehr-gateway serve` as its own process
 * (the numbers the closing note quotes, before and after):
 *   access       another organization's document demanded without / with the patient's SNILS
 *   nested       a 420 KB document of nested elements: acceptance time, /healthz latency meanwhile, peak RSS
 *   retention    rows and document bytes kept after a request completes, and after RETENTION
 *   quota        1 MiB documents sent in one minute by one clinic under BYTE_QUOTA=4mb
 *   defaults     clients add without --organization, seed-demo on DATABASE_URL, clinic secrets at rest
 *   idempotency  the same RegisterDocument body with its members in another order
 *   tsx scripts/bench/hardening-figures.ts [section ...]   (DATABASE_URL, or an embedded PostgreSQL in a temp dir)
 */
import fs from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import knexFactory from 'knex';
import { EmbeddedPostgres, ensureDatabase, freePort } from '../../src/db/embedded-postgres.js';
import { createLogger } from '../../src/logging/logger.js';
import { exitOf, runCli, spawnCli, waitForOk } from '../../test/support/cli.js';
import { startCallbackReceiver as startReceiver, SUCCESS, type CallbackReceiver } from '../../test/support/callback-receiver.js';
import { authHeaders, largeXml, post, registerBody, VALID_SNILS } from '../../test/support/emdr.js';
import { commandLine } from '../lib/command-line.js';

const SECTIONS = ['access', 'nested', 'retention', 'quota', 'defaults', 'idempotency'] as const;
const HELP = `usage: tsx scripts/bench/hardening-figures.ts [section ...]

The figures of issue 9's interface B items, measured against \`ehr-gateway serve\` as its own process,
on DATABASE_URL's server or an embedded PostgreSQL in a temporary directory. Sections (default all):
  access       another organization's document demanded without / with the patient's SNILS
  nested       a 420 KB document of nested elements: acceptance time, /healthz latency meanwhile, peak RSS
  retention    rows and document bytes kept after a request completes, and after RETENTION
  quota        1 MiB documents sent in one minute by one clinic under BYTE_QUOTA=4mb
  defaults     clients add without --organization, seed-demo on DATABASE_URL, clinic secrets at rest
  idempotency  the same RegisterDocument body with its members in another order

options:
  -h, --help   this text

example: tsx scripts/bench/hardening-figures.ts access idempotency`;

const { positionals } = commandLine('hardening-figures', HELP, { options: {}, allowPositionals: true });
const chosen = positionals.length > 0 ? positionals : [...SECTIONS];
for (const section of chosen) {
  if (!(SECTIONS as readonly string[]).includes(section)) {
    console.error(`hardening-figures: unknown section ${section}; one of ${SECTIONS.join(', ')}`);
    process.exit(2);
  }
}

const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ehr-gateway-figures-'));
const embedded = process.env.DATABASE_URL ? undefined : new EmbeddedPostgres(dataDir, createLogger('warn', process.stderr));
const serverUrl = process.env.DATABASE_URL ?? (await embedded!.start({ adopt: true }));
const serverBase = serverUrl.slice(0, serverUrl.lastIndexOf('/'));

const ORG_A = '1.2.643.5.1.13.13.12.2.77.7973';
const ORG_B = '1.2.643.5.1.13.13.12.2.77.1111';
/** A SNILS with a valid check number that is not VALID_SNILS's patient. */
const OTHER_SNILS = '08765432110';

/** A clinic receiver that takes every callback: these figures are not about signatures (the tests check those). */
async function startCallbackReceiver(): Promise<CallbackReceiver> {
  const receiver = await startReceiver();
  receiver.reply = () => SUCCESS;
  return receiver;
}

async function freshDatabase(): Promise<string> {
  const name = `figures_${randomUUID().slice(0, 8)}`;
  await ensureDatabase(serverBase, name);
  return `${serverBase}/${name}`;
}

interface Gateway {
  url: string;
  env: Record<string, string>;
  pid: number;
  stop(): Promise<void>;
}

async function startGateway(extraEnv: Record<string, string> = {}): Promise<Gateway> {
  const key = randomBytes(32).toString('hex');
  const port = await freePort();
  // Both names of the data key: the code before issue 9 reads USER_SIGN_KEY, after it DATA_KEY.
  const env = {
    DATABASE_URL: await freshDatabase(),
    DATA_KEY: key,
    USER_SIGN_KEY: key,
    PORT: String(port),
    INTERNAL_PORT: String(await freePort()),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    CALLBACK_RETRY_SCHEDULE: '0,200ms',
    CALLBACK_ALLOWED_NETWORKS: '127.0.0.0/8',
    ...extraEnv,
  };
  const child = spawnCli(['serve'], env);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const url = `http://127.0.0.1:${port}`;
  await waitForOk(`${url}/readyz`, 60_000).catch((error: Error) => {
    child.kill('SIGKILL');
    throw new Error(`${error.message}: ${output}`);
  });
  return {
    url,
    env,
    pid: child.pid!,
    async stop() {
      child.kill('SIGTERM');
      await exitOf(child, 60_000).catch(() => child.kill('SIGKILL'));
    },
  };
}

async function addClinic(gateway: Gateway, receiver: CallbackReceiver, organization: string) {
  const result = await runCli(
    ['clients', 'add', '--business-id', `b-${randomUUID().slice(0, 8)}`, '--user', 'mis', '--callback-url', receiver.url, '--organization', organization],
    gateway.env,
  );
  if (result.code !== 0) throw new Error(`clients add: ${result.stderr}`);
  return JSON.parse(result.stdout);
}

async function callbacksOf(receiver: CallbackReceiver, queueMessageId: string, count: number, timeoutMs = 60_000) {
  const of = (received: CallbackReceiver['received']) => received.filter((callback) => callback.body.queueMessageId === queueMessageId);
  return of(await receiver.waitFor((received) => of(received).length >= count, timeoutMs));
}

async function peakRssMiB(pid: number): Promise<number> {
  const status = await fs.readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

async function registered(
  gateway: Gateway,
  receiver: CallbackReceiver,
  clinic: Parameters<typeof authHeaders>[0],
  overrides: Record<string, unknown> = {},
): Promise<string> {
  const { body: ack } = await post(
    gateway.url,
    '/api/RegisterDocument',
    authHeaders(clinic),
    registerBody({ organization: clinic.organizations?.[0] ?? ORG_A, ...overrides }),
  );
  const [, result] = await callbacksOf(receiver, ack.queueMessageId, 2);
  if (result?.body.status !== 'success') throw new Error(`registration failed: ${JSON.stringify(result?.body)}`);
  return result.body.emdrId as string;
}

/** What DemandContent of `emdrId` by `clinic` ends in: the callbacks' statuses and codes, and whether the file came. */
async function demandOutcome(gateway: Gateway, receiver: CallbackReceiver, clinic: Parameters<typeof authHeaders>[0], body: Record<string, unknown>) {
  const answer = await post(gateway.url, '/api/DemandContent', authHeaders(clinic), body);
  if (answer.status !== 200) return { http: answer.status, errors: answer.body.errors.map((error: { code: string }) => error.code) };
  const [acceptance] = await callbacksOf(receiver, answer.body.queueMessageId, 1);
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const callbacks = receiver.received.filter((callback) => callback.body.queueMessageId === answer.body.queueMessageId);
  const file = callbacks.find((callback) => callback.name === 'SendDocumentFileResultResponse');
  return {
    http: 200,
    acceptance: acceptance!.body.status,
    acceptanceErrors: acceptance!.body.errors ?? [],
    fileDelivered: Boolean(file?.body.document),
    fileBytes: file?.body.document ? Buffer.from((file.body.document as { content: string }).content, 'base64').length : 0,
  };
}

async function access(): Promise<unknown> {
  const receiver = await startCallbackReceiver();
  const gateway = await startGateway();
  try {
    const owner = await addClinic(gateway, receiver, ORG_A);
    const other = await addClinic(gateway, receiver, ORG_B);
    const emdrId = await registered(gateway, receiver, owner);
    return {
      ownOrganization: await demandOutcome(gateway, receiver, owner, { emdrId }),
      otherOrganizationWithoutSnils: await demandOutcome(gateway, receiver, other, { emdrId }),
      otherOrganizationWrongSnils: await demandOutcome(gateway, receiver, other, { emdrId, patientSnils: OTHER_SNILS }),
      otherOrganizationPatientSnils: await demandOutcome(gateway, receiver, other, { emdrId, patientSnils: VALID_SNILS }),
      unknownEmdrId: await demandOutcome(gateway, receiver, other, { emdrId: '26.01.999999999' }),
      searchByOtherWithoutSnils: (await post(gateway.url, '/api/SearchRegistryItem', authHeaders(other), {})).body.items?.length,
      searchByOtherWithSnils: (await post(gateway.url, '/api/SearchRegistryItem', authHeaders(other), { patientSnils: VALID_SNILS })).body.items?.length,
    };
  } finally {
    await gateway.stop();
    await receiver.close();
  }
}

/** GET /healthz on a connection of its own (a kept-alive one may be closed by a server whose event loop was blocked). */
async function healthz(url: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    http.get(`${url}/healthz`, { agent: false }, (response) => response.resume().on('end', resolve)).on('error', reject);
  });
}

/** `<a>` nested `depth` deep: 7 bytes per level. */
function nestedXml(depth: number): Buffer {
  return Buffer.from(`<?xml version="1.0"?>${'<a>'.repeat(depth)}${'</a>'.repeat(depth)}`);
}

async function nested(): Promise<unknown> {
  const receiver = await startCallbackReceiver();
  const gateway = await startGateway();
  try {
    const clinic = await addClinic(gateway, receiver, ORG_A);
    const xml = nestedXml(60_000);
    const baseline = await peakRssMiB(gateway.pid);
    let worstHealthMs = 0;
    let probes = 0;
    let done = false;
    const started = Date.now();
    const { body: ack } = await post(gateway.url, '/api/RegisterDocument', authHeaders(clinic), registerBody({ document: xml.toString('base64') }));
    const probe = (async () => {
      while (!done) {
        const sent = Date.now();
        await healthz(gateway.url);
        worstHealthMs = Math.max(worstHealthMs, Date.now() - sent);
        probes += 1;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    const [acceptance] = await callbacksOf(receiver, ack.queueMessageId, 1, 600_000);
    done = true;
    await probe;
    return {
      documentBytes: xml.length,
      depth: 60_000,
      acceptanceCallbackAfterMs: Date.now() - started,
      acceptance: acceptance!.body.status,
      errors: acceptance!.body.errors,
      healthzWorstMs: worstHealthMs,
      healthzProbes: probes,
      peakRssGrowthMiB: +((await peakRssMiB(gateway.pid)) - baseline).toFixed(1),
    };
  } finally {
    await gateway.stop();
    await receiver.close();
  }
}

interface Kept {
  requests: number;
  requestFileBytes: number;
  callbacks: number;
  attempts: number;
  registryDocuments: number;
  registryFileBytes: number;
  sessions: number;
  exchangeTokens: number;
}

async function kept(databaseUrl: string): Promise<Kept> {
  const knex = knexFactory({ client: 'pg', connection: databaseUrl, pool: { min: 0, max: 1 } });
  try {
    const { rows } = await knex.raw(`select
      (select count(*) from emdr_requests)::int as requests,
      (select coalesce(sum(coalesce(octet_length(document), 0) + coalesce(octet_length(signature), 0) + coalesce(octet_length(personal_signatures::text), 0)), 0) from emdr_requests)::int as "requestFileBytes",
      (select count(*) from emdr_callbacks)::int as callbacks,
      (select count(*) from emdr_callback_attempts)::int as attempts,
      (select count(*) from emdr_registry_documents)::int as "registryDocuments",
      (select coalesce(sum(octet_length(content) + octet_length(signature)), 0) from emdr_registry_documents)::int as "registryFileBytes",
      (select count(*) from ehr_sessions)::int as sessions,
      (select count(*) from ehr_exchange_tokens)::int as "exchangeTokens"`);
    return rows[0];
  } finally {
    await knex.destroy();
  }
}

/** An expired session and a used exchange token of interface A, expired an hour ago. */
async function addExpiredInterfaceARows(databaseUrl: string): Promise<void> {
  const knex = knexFactory({ client: 'pg', connection: databaseUrl, pool: { min: 0, max: 1 } });
  try {
    const user = `u-${randomUUID()}`;
    await knex('ehr_user_links').insert({ user_id: user, patient_id: 'demo-1', user_sign_sealed: randomBytes(60) });
    await knex('ehr_sessions').insert({ token_hash: randomBytes(32), user_id: user, expires_at: knex.raw("now() - interval '1 hour'") });
    await knex('ehr_exchange_tokens').insert({
      token_hash: randomBytes(32),
      user_id: user,
      session_token_hash: randomBytes(32),
      session_expires_at: knex.raw("now() - interval '1 hour'"),
      expires_at: knex.raw("now() - interval '1 hour'"),
      state: 'used',
    });
  } finally {
    await knex.destroy();
  }
}

async function retention(): Promise<unknown> {
  const receiver = await startCallbackReceiver();
  const gateway = await startGateway({ RETENTION: '5s' });
  try {
    const clinic = await addClinic(gateway, receiver, ORG_A);
    const xml = largeXml(1024 * 1024);
    const { body: ack } = await post(gateway.url, '/api/RegisterDocument', authHeaders(clinic), registerBody({ document: xml.toString('base64') }));
    const [, result] = await callbacksOf(receiver, ack.queueMessageId, 2);
    const { body: demand } = await post(gateway.url, '/api/DemandContent', authHeaders(clinic), { emdrId: result!.body.emdrId });
    await callbacksOf(receiver, demand.queueMessageId, 2);
    await addExpiredInterfaceARows(gateway.env.DATABASE_URL!);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const afterCompletion = await kept(gateway.env.DATABASE_URL!);
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    return { documentBytes: xml.length, retention: '5s', afterCompletion, after10s: await kept(gateway.env.DATABASE_URL!) };
  } finally {
    await gateway.stop();
    await receiver.close();
  }
}

async function quota(): Promise<unknown> {
  const receiver = await startCallbackReceiver();
  const gateway = await startGateway({ BYTE_QUOTA: '4mb', BODY_LIMIT: '4mb' });
  try {
    const clinic = await addClinic(gateway, receiver, ORG_A);
    const document = largeXml(768 * 1024).toString('base64');
    const statuses: number[] = [];
    for (let i = 0; i < 8; i += 1) statuses.push((await post(gateway.url, '/api/RegisterDocument', authHeaders(clinic), registerBody({ document }))).status);
    return { bodyBytes: document.length, sent: statuses.length, statuses };
  } finally {
    await gateway.stop();
    await receiver.close();
  }
}

async function defaults(): Promise<unknown> {
  const gateway = await startGateway();
  const cliEnv = { DATABASE_URL: gateway.env.DATABASE_URL!, DATA_KEY: gateway.env.DATA_KEY!, USER_SIGN_KEY: gateway.env.USER_SIGN_KEY!, LOG_LEVEL: 'silent' };
  try {
    const withoutOrganization = await runCli(['clients', 'add', '--business-id', 'b-any', '--user', 'mis', '--callback-url', 'http://127.0.0.1:9'], cliEnv);
    const seedDemo = await runCli(['seed-demo'], cliEnv);
    const added = await runCli(
      ['clients', 'add', '--business-id', 'b-one', '--user', 'mis', '--callback-url', 'http://127.0.0.1:9', '--organization', ORG_A],
      cliEnv,
    );
    const printed = JSON.parse(added.stdout);
    const knex = knexFactory({ client: 'pg', connection: gateway.env.DATABASE_URL!, pool: { min: 0, max: 1 } });
    try {
      const row = await knex('emdr_clients').where({ business_id: 'b-one' }).first();
      const stored = JSON.stringify(row, (_key, value) => (value?.type === 'Buffer' ? Buffer.from(value.data).toString('latin1') : value));
      return {
        clientsAddWithoutOrganization: {
          exitCode: withoutOrganization.code,
          stderr: withoutOrganization.stderr.trim(),
          organizations: withoutOrganization.code === 0 ? JSON.parse(withoutOrganization.stdout).organizations : undefined,
        },
        seedDemoOnDatabaseUrl: { exitCode: seedDemo.code, output: (seedDemo.stdout + seedDemo.stderr).trim() },
        callbackTokenStoredInClear: stored.includes(printed.callbackCredentials.token),
        signingSecretStoredInClear: stored.includes(printed.signingSecret),
      };
    } finally {
      await knex.destroy();
    }
  } finally {
    await gateway.stop();
  }
}

async function idempotency(): Promise<unknown> {
  const receiver = await startCallbackReceiver();
  const gateway = await startGateway();
  try {
    const clinic = await addClinic(gateway, receiver, ORG_A);
    const body = registerBody();
    const reordered = Object.fromEntries(Object.entries(body).reverse());
    const first = await post(gateway.url, '/api/RegisterDocument', authHeaders(clinic), body);
    const second = await post(gateway.url, '/api/RegisterDocument', authHeaders(clinic), reordered);
    const [acceptance] = await callbacksOf(receiver, second.body.queueMessageId, 1);
    return {
      sameQueueMessageId: first.body.queueMessageId === second.body.queueMessageId,
      secondAcceptance: acceptance!.body.status,
      secondErrors: acceptance!.body.errors ?? [],
    };
  } finally {
    await gateway.stop();
    await receiver.close();
  }
}

const runners: Record<(typeof SECTIONS)[number], () => Promise<unknown>> = { access, nested, retention, quota, defaults, idempotency };
try {
  for (const section of chosen) {
    const started = Date.now();
    const figures = await runners[section as (typeof SECTIONS)[number]]();
    console.log(JSON.stringify({ section, ms: Date.now() - started, figures }));
  }
} finally {
  await embedded?.stop();
  await fs.rm(dataDir, { recursive: true, force: true });
}
