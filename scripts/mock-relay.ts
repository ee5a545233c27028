/**
 * The mock of interface B as a partner meets it (`make mock`): Prism, behind a small relay that
 * makes it behave like the service.
 *
 * - Requests go to Prism, which validates them against specs/openapi.yaml and answers with the
 *   spec's examples. A 400 names the request's real violations (Prism's `sl-violations`, in the
 *   service's error shape), not the spec's example.
 * - RegisterDocument and DemandContent: the acknowledgement carries a fresh queueMessageId and the
 *   request's own localUid / clientMessageId, and Prism's callbacks (the spec's example bodies) come
 *   back to the relay, which puts the request's ids in them and delivers them like the service: to
 *   `<callbackUrl>/api/<Name>` (the request's, else the demo clinic's http://127.0.0.1:9090), signed
 *   (Standard Webhooks `webhook-id`, `webhook-timestamp`, `webhook-signature`, with the mock's
 *   public secret, MOCK_SIGNING_SECRET in src/emdr/demo/demo-clinic.ts, unless the variable MOCK_SIGNING_SECRET
 *   says otherwise) with the callback headers
 *   `businessId` (the request's), `user` `ehr-gateway` and `token` (MOCK_CALLBACK_TOKEN, default
 *   the demo clinic's `demo-callback-token`); the acceptance callback first, the result only once
 *   it was delivered; a callback not answered 200 `{"status":"Success"}` is retried after 1 s, 5 s
 *   and 30 s, then given up.
 *
 *   tsx scripts/mock-relay.ts --port 4010 [--host 127.0.0.1]
 */
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { signWebhook } from '../src/callbacks/signing.ts';
import { isCallbackUrl } from '../src/emdr/accounts/callback-url.ts';
import { CALLBACK_USER } from '../src/emdr/accounts/clients.ts';
import { DEMO_CLINIC, MOCK_SIGNING_SECRET } from '../src/emdr/demo/demo-clinic.ts';
import { commandLine } from './lib/command-line.ts';

const root = path.resolve(import.meta.dirname, '..');
const HELP = `usage: tsx scripts/mock-relay.ts [--port 4010] [--host 127.0.0.1]

Prism behind a relay that signs its callbacks like ehr-gateway (see the comment at the top).

options:
  --port N     where the relay listens (default 4010; 0: a free port, printed when it listens)
  --host ADDR  its address (default 127.0.0.1)
  -h, --help   this text

example: tsx scripts/mock-relay.ts --port 4010 (scripts/mock.sh starts it beside interface A's mock)`;

const { values } = commandLine('mock-relay', HELP, {
  options: { port: { type: 'string', default: '4010' }, host: { type: 'string', default: '127.0.0.1' } },
});
const signingSecret = process.env.MOCK_SIGNING_SECRET ?? MOCK_SIGNING_SECRET;
const callbackToken = process.env.MOCK_CALLBACK_TOKEN ?? DEMO_CLINIC.callbackToken;
const RETRY_DELAYS_MS = [1_000, 5_000, 30_000];
const ACCEPTANCE = new Set(['SendRegisterDocumentResponse', 'SendDemandContentResponse']);
/** RegisterDocument carries the document (BODY_LIMIT of the service); nothing else comes near. */
const BODY_LIMIT = 32 * 1024 * 1024;

/** What the relay remembers of a request whose callbacks Prism will fire. */
interface Pending {
  target: string;
  businessId: string;
  /** The ids the service would put in every callback of this request. */
  ids: Record<string, string>;
  acceptanceDelivered: Promise<void>;
  settleAcceptance: () => void;
}
const pending = new Map<string, Pending>();

function log(line: string): void {
  console.log(`mock: ${line}`);
}

async function readBody(request: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > BODY_LIMIT) throw new Error('body too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** Prism's `sl-violations` as the service's error items: `{code, message, path}`. */
function violationsToErrors(header: string): Array<{ code: string; message: string; path: string }> {
  const violations = JSON.parse(header) as Array<{ location: string[]; message: string; code: string | number }>;
  return violations
    .filter((violation) => typeof violation.code === 'string')
    .map((violation) => {
      const [, where, ...rest] = violation.location;
      const missing = /must have required property '([^']+)'/.exec(violation.message)?.[1];
      const segments = [where === 'body' ? 'requestBody' : (where ?? 'request'), ...rest, ...(missing ? [missing] : [])];
      const message = violation.message.replace(/^Request (body|query parameter|path parameter|header parameter)( property)?( \S+)? (?=must|should)/, '');
      return { code: 'VALIDATION_ERROR', message, path: `/${segments.join('/')}` };
    });
}

async function deliver(target: string, name: string, businessId: string, payload: Record<string, unknown>): Promise<boolean> {
  const body = JSON.stringify(payload);
  const webhookId = `msg_${randomBytes(16).toString('hex')}`;
  for (let attempt = 0; attempt <= RETRY_DELAYS_MS.length; attempt += 1) {
    if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, RETRY_DELAYS_MS[attempt - 1]));
    const timestamp = Math.floor(Date.now() / 1000);
    let outcome: string;
    try {
      const response = await fetch(`${target.replace(/\/+$/, '')}/api/${name}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          businessId,
          user: CALLBACK_USER,
          token: callbackToken,
          'webhook-id': webhookId,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signWebhook(signingSecret, webhookId, timestamp, body),
        },
        body,
        signal: AbortSignal.timeout(15_000),
      });
      const text = await response.text();
      let status: unknown;
      try {
        status = (JSON.parse(text) as { status?: unknown }).status;
      } catch {
        status = undefined;
      }
      if (response.status === 200 && status === 'Success') {
        log(`${name} ${webhookId} delivered to ${target}`);
        return true;
      }
      outcome = `HTTP ${response.status}`;
    } catch (error) {
      outcome = `connection failed: ${(error as Error & { cause?: { code?: string } }).cause?.code ?? (error as Error).message}`;
    }
    log(`${name} ${webhookId} to ${target}: ${outcome}${attempt < RETRY_DELAYS_MS.length ? ', retrying' : ', given up'}`);
  }
  return false;
}

/** A callback Prism fired at the relay: answered at once, then delivered like the service would. */
async function relayCallback(id: string, name: string, rawBody: Buffer): Promise<void> {
  const request = pending.get(id);
  if (!request) return;
  let payload: Record<string, unknown>;
  try {
    payload = JSON.parse(rawBody.toString('utf8')) as Record<string, unknown>;
  } catch {
    return;
  }
  for (const [member, value] of Object.entries(request.ids)) if (member in payload) payload[member] = value;
  if (ACCEPTANCE.has(name)) {
    await deliver(request.target, name, request.businessId, payload);
    request.settleAcceptance();
    return;
  }
  // The result callback waits for the acceptance callback, as the service holds it.
  await request.acceptanceDelivered;
  pending.delete(id);
  await deliver(request.target, name, request.businessId, payload);
}

/** The request body as Prism gets it: its callbackUrl pointed at the relay, remembered under a fresh id. */
function interceptCallbacks(
  route: string,
  body: Buffer,
  headers: http.IncomingHttpHeaders,
  relayUrl: string,
): { body: Buffer; id?: string; ids?: Record<string, string> } {
  if (route !== '/api/RegisterDocument' && route !== '/api/DemandContent') return { body };
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
  } catch {
    return { body };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return { body };
  const requested = parsed.callbackUrl;
  // A callbackUrl the spec refuses goes to Prism as it is, so that its 400 names it.
  if (requested !== undefined && (typeof requested !== 'string' || !isCallbackUrl(requested))) return { body };
  const id = randomUUID();
  const ids: Record<string, string> = { queueMessageId: randomUUID() };
  if (typeof parsed.localUid === 'string') ids.localUid = parsed.localUid;
  if (typeof parsed.emdrId === 'string') ids.emdrId = parsed.emdrId;
  if (route === '/api/DemandContent') ids.clientMessageId = typeof parsed.clientMessageId === 'string' ? parsed.clientMessageId : randomUUID();
  let settleAcceptance!: () => void;
  const acceptanceDelivered = new Promise<void>((resolve) => (settleAcceptance = resolve));
  const businessId = typeof headers.businessid === 'string' ? headers.businessid : DEMO_CLINIC.businessId;
  pending.set(id, { target: typeof requested === 'string' ? requested : DEMO_CLINIC.callbackUrls[0], businessId, ids, acceptanceDelivered, settleAcceptance });
  // Forgotten if Prism never fires (an invalid request).
  setTimeout(() => pending.delete(id), 10 * 60_000).unref();
  return { body: Buffer.from(JSON.stringify({ ...parsed, callbackUrl: `${relayUrl}/__callbacks/${id}` })), id, ids };
}

/**
 * Prism, on a port it binds itself (--port 0): the one it prints once it listens ("Prism is listening
 * on http://127.0.0.1:PORT"), so that no other process can take it between a choice and the bind.
 */
async function startPrism(): Promise<number> {
  const prism = spawn(path.join(root, 'node_modules/.bin/prism'), ['mock', '--host', '127.0.0.1', '--port', '0', path.join(root, 'specs/openapi.yaml')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stopping = false;
  // What it printed until it listens: shown when it fails to start. Its request log after that is not shown.
  let output: string | undefined = '';
  // Once its output is read to the end, so that what it said before it exited is all there.
  prism.on('close', (code) => {
    if (stopping) process.exit(0);
    console.error(`mock: Prism exited (${code})${output ? `; it said:\n${output}` : ''}`);
    process.exit(1);
  });
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      stopping = true;
      prism.kill('SIGTERM');
    });
  }
  return new Promise((resolve) => {
    // Stopped, it exits, and this process with it, printing what it said.
    const timer = setTimeout(() => {
      console.error('mock: Prism did not start within 60 s');
      prism.kill('SIGTERM');
    }, 60_000);
    prism.stdout.on('data', (chunk: Buffer) => {
      if (output === undefined) return;
      output += chunk.toString();
      const listening = /Prism is listening on http:\/\/[^\s:]+:(\d+)/.exec(output);
      if (!listening) return;
      output = undefined;
      clearTimeout(timer);
      resolve(Number(listening[1]));
    });
  });
}

const prismPort = await startPrism();
// Where Prism reaches the relay with its callbacks: set once the relay listens, before any request reaches it.
let relayUrl = '';
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'host']);

const server = http.createServer(async (request, response) => {
  try {
    const url = new URL(request.url ?? '/', relayUrl);
    const body = await readBody(request);
    const callback = /^\/__callbacks\/([0-9a-f-]{36})\/api\/([A-Za-z]+)$/.exec(url.pathname);
    if (callback) {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"Success"}');
      void relayCallback(callback[1]!, callback[2]!, body);
      return;
    }
    const intercepted = request.method === 'POST' ? interceptCallbacks(url.pathname, body, request.headers, relayUrl) : { body };
    const headers = Object.fromEntries(Object.entries(request.headers).filter(([name]) => !HOP_BY_HOP.has(name))) as Record<string, string>;
    const upstream = await fetch(`http://127.0.0.1:${prismPort}${url.pathname}${url.search}`, {
      method: request.method,
      headers,
      ...(request.method === 'GET' || request.method === 'HEAD' ? {} : { body: new Uint8Array(intercepted.body) }),
    });
    let answer = Buffer.from(await upstream.arrayBuffer());
    const violations = upstream.headers.get('sl-violations');
    if (upstream.status === 400 && violations) {
      answer = Buffer.from(JSON.stringify({ status: 'Error', errors: violationsToErrors(violations) }));
    } else if (upstream.status === 200 && intercepted.ids) {
      const acknowledgement = JSON.parse(answer.toString('utf8')) as Record<string, unknown>;
      for (const member of ['queueMessageId', 'localUid', 'clientMessageId'])
        if (member in acknowledgement && intercepted.ids[member]) acknowledgement[member] = intercepted.ids[member];
      answer = Buffer.from(JSON.stringify(acknowledgement));
      log(`${url.pathname.slice('/api/'.length)} ${intercepted.ids.queueMessageId}: callbacks follow to ${pending.get(intercepted.id!)!.target}`);
    }
    const outgoing = Object.fromEntries([...upstream.headers].filter(([name]) => !HOP_BY_HOP.has(name) && name !== 'content-encoding'));
    response.writeHead(upstream.status, { ...outgoing, 'content-length': String(answer.length) }).end(answer);
  } catch (error) {
    response
      .writeHead(502, { 'content-type': 'application/json' })
      .end(JSON.stringify({ status: 'Error', errors: [{ code: 'INTERNAL_ERROR', message: `mock relay: ${(error as Error).message}` }] }));
  }
});
// The port bound, which --port 0 leaves to the OS.
server.listen(Number(values.port), values.host, () => {
  const { port } = server.address() as AddressInfo;
  relayUrl = `http://${values.host === '0.0.0.0' ? '127.0.0.1' : values.host}:${port}`;
  log(`interface B (Prism behind a signing relay) on http://${values.host}:${port}, signing callbacks with ${signingSecret}`);
});
