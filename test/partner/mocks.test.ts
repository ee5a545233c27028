import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { createEhrClient } from '../../generated/ehr-client.js';
import { openApiSpecPath, openRpcSpecPath } from '../../src/config/paths.js';
import { freePort } from '../../src/db/embedded-postgres.js';
import { startCallbackReceiver, type CallbackReceiver } from '../support/callback-receiver.js';
import { exitOf, repoRoot, waitForOk } from '../support/cli.js';
import { responseProblems } from '../support/contract.js';
import { registerBody } from '../support/emdr.js';

interface CallbackOperation {
  post: { requestBody: { content: { 'application/json': { schema: { $ref: string } } } } };
}
const openapi = parseYaml(await fs.readFile(openApiSpecPath, 'utf8')) as {
  paths: Record<string, { post: { callbacks?: Record<string, Record<string, CallbackOperation>> } }>;
  components: { schemas: Record<string, { examples?: unknown[] }> };
};

/** The example payloads of every callback of an operation (its body schema's `examples`), by callback name. */
function callbackExamples(route: string): Map<string, unknown[]> {
  const callbacks = openapi.paths[route]!.post.callbacks ?? {};
  const schemaExamples = (ref: string) => openapi.components.schemas[ref.replace('#/components/schemas/', '')]?.examples ?? [];
  return new Map(
    Object.entries(callbacks).map(([name, expressions]) => [
      name,
      Object.values(expressions).flatMap((operation) => schemaExamples(operation.post.requestBody.content['application/json'].schema.$ref)),
    ]),
  );
}

/** `make mock` as a partner uses it: the mocks of both interfaces, a receiver for Prism's callbacks. */
describe('make mock', () => {
  let mock: ChildProcess;
  let output = '';
  let apiUrl: string;
  let rpcUrl: string;
  let receiver: CallbackReceiver;
  const headers = { 'content-type': 'application/json', businessId: '4000125', user: 'demo-clinic', token: 'demo-clinic-token' };

  beforeAll(async () => {
    const apiPort = await freePort();
    const rpcPort = await freePort();
    apiUrl = `http://127.0.0.1:${apiPort}`;
    rpcUrl = `http://127.0.0.1:${rpcPort}`;
    mock = spawn('scripts/mock.sh', [], { cwd: repoRoot, env: { ...process.env, MOCK_API_PORT: String(apiPort), MOCK_RPC_PORT: String(rpcPort) }, stdio: ['ignore', 'pipe', 'pipe'] });
    mock.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    mock.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    receiver = await startCallbackReceiver({ acceptUnsigned: true });
    await waitForOk(`${apiUrl}/healthz`, 60_000).catch((error: Error) => {
      throw new Error(`${error.message}; mock said: ${output}`);
    });
  });

  afterAll(async () => {
    mock?.kill('SIGTERM');
    if (mock) await exitOf(mock);
    await receiver?.close();
  });

  it.each([
    ['/api/RegisterDocument', () => registerBody()],
    ['/api/DemandContent', () => ({ emdrId: '26.11.000000154' })],
  ])('answers %s from the spec and fires both callbacks with example payloads to the callbackUrl', async (route, body) => {
    const response = await fetch(`${apiUrl}${route}`, { method: 'POST', headers, body: JSON.stringify({ ...body(), callbackUrl: receiver.url }) });
    expect(response.status).toBe(200);
    expect(responseProblems('POST', route, 200, await response.json())).toEqual([]);

    const examples = callbackExamples(route);
    expect(examples.size).toBe(2);
    const before = receiver.received.length;
    await receiver.waitFor((received) => received.length >= before + 2);
    const fired = receiver.received.slice(before);
    expect(fired.map((callback) => callback.name).sort()).toEqual([...examples.keys()].sort());
    for (const callback of fired) expect(examples.get(callback.name)).toContainEqual(callback.body);
  });

  it('refuses a request the spec does not allow', async () => {
    const response = await fetch(`${apiUrl}/api/RegisterDocument`, { method: 'POST', headers, body: JSON.stringify({ localUid: 'not-a-uuid' }) });
    // Prism answers with the spec's documented 400 (the error shape), as the real service would.
    expect(response.status).toBe(400);
    expect(responseProblems('POST', '/api/RegisterDocument', 400, await response.json())).toEqual([]);
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

  it('sent callback bodies that match their schemas', () => {
    expect(receiver.received.length).toBe(4);
    expect(receiver.schemaViolations).toEqual([]);
  });
});
