import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEhrClient } from '../../generated/ehr-client.js';
import { openRpcSpecPath } from '../../src/config/paths.js';
import { onFreePort, PortTaken } from '../../src/db/embedded-postgres.js';
import { DEMO_CLINIC, MOCK_SIGNING_SECRET } from '../../src/emdr/demo/demo-clinic.js';
import { startCallbackReceiver, type CallbackReceiver } from '../support/callback-receiver.js';
import { exitOf, repoRoot, runCli } from '../support/cli.js';
import { responseProblems } from '../support/contract.js';
import { registerBody } from '../support/emdr.js';
import { outputMatching } from '../support/processes.js';
import { until } from '../support/until.js';

/** Whether interface A's mock answers rpc.discover at `url`: it, and not another process that took the port. */
async function answersRpcDiscover(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"jsonrpc":"2.0","id":1,"method":"rpc.discover"}',
    });
    const answer = (await response.json()) as { jsonrpc?: string; result?: { openrpc?: string } };
    return answer.jsonrpc === '2.0' && answer.result?.openrpc !== undefined;
  } catch {
    return false;
  }
}

/**
 * `make mock` as a partner uses it: the mocks of both interfaces, and the reference receiver in its
 * normal, verifying mode with the demo clinic's values, which the mock signs with.
 */
describe('make mock', () => {
  let mock: ChildProcess;
  let output = '';
  let apiUrl: string;
  let rpcUrl: string;
  let receiver: CallbackReceiver;
  let documentsDir: string;
  const headers = { 'content-type': 'application/json', businessId: DEMO_CLINIC.businessId, user: DEMO_CLINIC.user, token: DEMO_CLINIC.token };

  /**
   * scripts/mock.sh in a process group of its own. The relay of interface B (and Prism behind it) binds
   * a port of its own (MOCK_API_PORT=0), read from its start line. Interface A's mock cannot (its
   * --port 0 means 3333): it gets `rpcPort`, free a moment ago; when another process took it first,
   * the mock exits saying so and the start is tried again on another (onFreePort).
   */
  async function startMock(rpcPort: number): Promise<void> {
    output = '';
    mock = spawn('scripts/mock.sh', [], {
      cwd: repoRoot,
      detached: true,
      env: { ...process.env, MOCK_API_PORT: '0', MOCK_RPC_PORT: String(rpcPort) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const child = mock;
    let closed = false;
    child.on('close', () => (closed = true));
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      apiUrl = (await outputMatching('make mock', child, /interface B \(Prism behind a signing relay\) on (http:\/\/[\d.:]+),/, 60_000)).match[1]!;
      expect((await fetch(`${apiUrl}/healthz`)).status).toBe(200);
      // Interface A's mock says "Server Started" before it binds: it listens once it answers there.
      rpcUrl = `http://127.0.0.1:${rpcPort}`;
      const state = await until(
        "interface A's mock answers",
        async () => (child.exitCode !== null || child.signalCode !== null ? 'exited' : (await answersRpcDiscover(rpcUrl)) ? 'answers' : 'not yet'),
        (state) => state !== 'not yet',
        60_000,
      );
      if (state === 'exited') throw new Error(`make mock exited (${child.signalCode ?? child.exitCode}); it said: ${output.slice(-4000)}`);
    } catch (error) {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGTERM');
      // All it said, to the end.
      await until(
        'make mock stopped',
        async () => closed,
        (done) => done,
        60_000,
      );
      if (new RegExp(`EADDRINUSE: address already in use \\S*:${rpcPort}\\b`).test(output))
        throw new PortTaken(rpcPort, `interface A's mock: port ${rpcPort} taken; ${output.slice(-2000)}`);
      throw error;
    }
  }

  beforeAll(async () => {
    await onFreePort(startMock);
    documentsDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ehr-gateway-mock-documents-'));
    receiver = await startCallbackReceiver({
      signingSecret: MOCK_SIGNING_SECRET,
      expectedHeaders: { businessId: DEMO_CLINIC.businessId, user: 'ehr-gateway', token: DEMO_CLINIC.callbackToken },
      documentsDir,
    });
  });

  afterAll(async () => {
    if (mock && mock.exitCode === null && mock.signalCode === null) process.kill(-mock.pid!, 'SIGTERM');
    if (mock) await exitOf(mock);
    await receiver?.close();
    if (documentsDir) await fs.rm(documentsDir, { recursive: true, force: true });
  });

  async function send(route: string, body: Record<string, unknown>) {
    const response = await fetch(`${apiUrl}${route}`, { method: 'POST', headers, body: JSON.stringify({ ...body, callbackUrl: receiver.url }) });
    const answer = { status: response.status, body: (await response.json()) as Record<string, any> };
    expect(responseProblems('POST', route, answer.status, answer.body)).toEqual([]);
    return answer;
  }

  async function callbacksOf(queueMessageId: string) {
    const of = () => receiver.received.filter((callback) => callback.body.queueMessageId === queueMessageId);
    await receiver.waitFor(() => of().length >= 2);
    return of();
  }

  it("answers RegisterDocument with the request's localUid, then delivers both callbacks signed, in order, with the request's ids", async () => {
    const body = registerBody();
    const answer = await send('/api/RegisterDocument', body);
    expect(answer.status).toBe(200);
    expect(answer.body.localUid).toBe(body.localUid);
    const callbacks = await callbacksOf(answer.body.queueMessageId);
    expect(callbacks.map((callback) => callback.name)).toEqual(['SendRegisterDocumentResponse', 'SendRegisterDocumentResultResponse']);
    for (const callback of callbacks) {
      expect(callback.signatureValid).toBe(true);
      expect(callback.duplicate).toBe(false);
      expect(callback.body.localUid).toBe(body.localUid);
      expect(callback.headers.businessid).toBe(DEMO_CLINIC.businessId);
    }
    expect(new Set(callbacks.map((callback) => callback.headers['webhook-id'])).size).toBe(2);
  });

  it("delivers DemandContent's file callback, which the verifying receiver saves as .xml and .xml.sig, a pair that verifies", async () => {
    const answer = await send('/api/DemandContent', { emdrId: '26.11.000000154' });
    expect(answer.status).toBe(200);
    const callbacks = await callbacksOf(answer.body.queueMessageId);
    expect(callbacks.map((callback) => [callback.name, callback.signatureValid, callback.body.clientMessageId])).toEqual([
      ['SendDemandContentResponse', true, answer.body.clientMessageId],
      ['SendDocumentFileResultResponse', true, answer.body.clientMessageId],
    ]);
    await receiver.waitFor(() => receiver.savedDocuments.length > 0);
    const saved = receiver.savedDocuments[0]!;
    expect(path.basename(saved)).toBe('26.11.000000154.xml');
    const verified = await runCli(['document', 'verify', saved, `${saved}.sig`]);
    expect(verified.stdout, verified.stderr).toMatch(/^valid: /);
  });

  it('refuses a request the spec does not allow, naming its real violations', async () => {
    const response = await fetch(`${apiUrl}/api/RegisterDocument`, { method: 'POST', headers, body: JSON.stringify({ localUid: 'not-a-uuid', kind: 'x' }) });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { errors: Array<{ code: string; message: string; path: string }> };
    expect(responseProblems('POST', '/api/RegisterDocument', 400, body)).toEqual([]);
    expect(body.errors).toEqual(
      expect.arrayContaining([
        { code: 'VALIDATION_ERROR', message: 'must match format "uuid"', path: '/requestBody/localUid' },
        { code: 'VALIDATION_ERROR', message: 'must match pattern "^[0-9]{1,6}$"', path: '/requestBody/kind' },
        { code: 'VALIDATION_ERROR', message: "must have required property 'organization'", path: '/requestBody/organization' },
      ]),
    );
    const query = await fetch(`${apiUrl}/api/messages?limit=abc`, { headers });
    expect(query.status).toBe(400);
    expect(((await query.json()) as { errors: Array<{ path: string }> }).errors).toEqual([
      { code: 'VALIDATION_ERROR', message: 'must be integer', path: '/query/limit' },
    ]);
  });

  it('answers interface A calls whose params equal an example with its result', async () => {
    const document = JSON.parse(await fs.readFile(openRpcSpecPath, 'utf8')) as {
      methods: Array<{ name: string; examples: Array<{ params: Array<{ name: string; value: unknown }>; result: { value: unknown } }> }>;
    };
    const authenticate = document.methods.find((method) => method.name === 'embedded_storage.authenticate')!.examples[0]!;
    const params = Object.fromEntries(authenticate.params.map((param) => [param.name, param.value]));
    const app = createEhrClient({ publicUrl: rpcUrl });
    expect(await app.embeddedStorageAuthenticate(params as never)).toEqual(authenticate.result.value);
  });

  it('sent callback bodies that match their schemas, each once', () => {
    expect(receiver.received.length).toBe(4);
    expect(receiver.received.every((callback) => !callback.duplicate)).toBe(true);
    expect(receiver.schemaViolations).toEqual([]);
  });
});
