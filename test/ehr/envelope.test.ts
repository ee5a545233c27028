import fs from 'node:fs/promises';
import path from 'node:path';
import express from 'express';
import { parseOpenRPCDocument } from '@open-rpc/schema-utils-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ehrRoutes } from '../../src/ehr/http.js';
import { RpcEnvelope, type MethodHandler } from '../../src/ehr/rpc/envelope.js';
import { RpcError } from '../../src/ehr/rpc/errors.js';
import { startListener, type Listener } from '../../src/http/listener.js';
import { createLogger } from '../../src/logging/logger.js';

/**
 * The envelope of interface A over real HTTP, driven by the examples of the JSON-RPC 2.0
 * specification (section 7) against a fixture OpenRPC document with the specification's methods.
 */
const handlers: Record<string, MethodHandler> = {
  subtract: async ({ minuend, subtrahend }) => (minuend as number) - (subtrahend as number),
  sum: async (params) => Object.values(params).reduce((total: number, value) => total + (value as number), 0),
  update: async () => null,
  notify_hello: async () => null,
  notify_sum: async () => null,
  get_data: async () => ['hello', 5],
  whoami: async (_params, context) => ({
    cred: context.cred ?? null,
    channel: context.channel,
    ...(context.apiKey === undefined ? {} : { apiKey: context.apiKey }),
  }),
  peer: async (_params, context) => context.clientAddress,
  echo: async ({ text }) => text,
  fail: async ({ how }) => {
    if (how === 'application') throw new RpcError(-34001, 'PatientNotAuthenticated', { reason: 'no stored session' });
    throw new Error('database password is hunter2 at /srv/app.ts:12');
  },
  'internal.ping': async () => 'pong',
};

let publicListener: Listener;
let internalListener: Listener;
let publicUrl: string;
let internalUrl: string;
const logLines: string[] = [];

async function post(body: string, url = publicUrl, contentType = 'application/json'): Promise<{ status: number; body: unknown }> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': contentType }, body });
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
}

beforeAll(async () => {
  const raw = JSON.parse(await fs.readFile(path.join(import.meta.dirname, 'fixtures/jsonrpc-spec-examples.openrpc.json'), 'utf8'));
  const document = await parseOpenRPCDocument(raw, { validate: true, dereference: true });
  const logger = createLogger('info', { write: (line: string) => logLines.push(line) } as unknown as NodeJS.WritableStream);
  const envelope = new RpcEnvelope(document, handlers, logger);
  publicListener = await startListener(express().use(ehrRoutes(envelope, 'public', ['0.0.0-test'])), '127.0.0.1', 0);
  internalListener = await startListener(express().use(ehrRoutes(envelope, 'internal', ['0.0.0-test'])), '127.0.0.1', 0);
  publicUrl = `http://127.0.0.1:${publicListener.port}/0.0.0-test/`;
  internalUrl = `http://127.0.0.1:${internalListener.port}/0.0.0-test/`;
});

afterAll(async () => {
  await publicListener.stop();
  await internalListener.stop();
});

describe('JSON-RPC 2.0 specification examples', () => {
  it('rpc call with positional parameters', async () => {
    expect(await post('{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}')).toEqual({
      status: 200,
      body: { jsonrpc: '2.0', result: 19, id: 1 },
    });
    expect(await post('{"jsonrpc": "2.0", "method": "subtract", "params": [23, 42], "id": 2}')).toEqual({
      status: 200,
      body: { jsonrpc: '2.0', result: -19, id: 2 },
    });
  });

  it('rpc call with named parameters', async () => {
    expect((await post('{"jsonrpc": "2.0", "method": "subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}')).body).toEqual({
      jsonrpc: '2.0',
      result: 19,
      id: 3,
    });
    expect((await post('{"jsonrpc": "2.0", "method": "subtract", "params": {"minuend": 42, "subtrahend": 23}, "id": 4}')).body).toEqual({
      jsonrpc: '2.0',
      result: 19,
      id: 4,
    });
  });

  it('a notification gets no response (HTTP 204)', async () => {
    expect(await post('{"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}')).toEqual({ status: 204, body: undefined });
    expect(await post('{"jsonrpc": "2.0", "method": "foobar"}')).toEqual({ status: 204, body: undefined });
  });

  it('rpc call of non-existent method', async () => {
    const { body } = await post('{"jsonrpc": "2.0", "method": "foobar", "id": "1"}');
    expect(body).toMatchObject({ jsonrpc: '2.0', error: { code: -32601, message: 'Method not found' }, id: '1' });
  });

  it('rpc call with invalid JSON', async () => {
    expect(await post('{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]')).toEqual({
      status: 200,
      body: { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' }, id: null },
    });
  });

  it('rpc call with invalid Request object', async () => {
    const { status, body } = await post('{"jsonrpc": "2.0", "method": 1, "params": "bar"}');
    expect(status).toBe(200);
    expect(body).toMatchObject({ jsonrpc: '2.0', error: { code: -32600, message: 'Invalid Request' }, id: null });
  });

  it('rpc call Batch, invalid JSON', async () => {
    const { body } = await post('[\n  {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},\n  {"jsonrpc": "2.0", "method"\n]');
    expect(body).toEqual({ jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' }, id: null });
  });

  it('rpc call with an empty Array', async () => {
    expect((await post('[]')).body).toMatchObject({ jsonrpc: '2.0', error: { code: -32600, message: 'Invalid Request' }, id: null });
  });

  it('rpc call with an invalid Batch (but not empty)', async () => {
    const { body } = await post('[1]');
    expect(body).toHaveLength(1);
    expect(body).toMatchObject([{ jsonrpc: '2.0', error: { code: -32600, message: 'Invalid Request' }, id: null }]);
  });

  it('rpc call with invalid Batch', async () => {
    const { body } = await post('[1,2,3]');
    expect(body).toHaveLength(3);
    for (const response of body as unknown[]) expect(response).toMatchObject({ jsonrpc: '2.0', error: { code: -32600 }, id: null });
  });

  it('rpc call Batch', async () => {
    const { status, body } = await post(`[
      {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},
      {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},
      {"jsonrpc": "2.0", "method": "subtract", "params": [42,23], "id": "2"},
      {"foo": "boo"},
      {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},
      {"jsonrpc": "2.0", "method": "get_data", "id": "9"}
    ]`);
    expect(status).toBe(200);
    expect(body).toMatchObject([
      { jsonrpc: '2.0', result: 7, id: '1' },
      { jsonrpc: '2.0', result: 19, id: '2' },
      { jsonrpc: '2.0', error: { code: -32600, message: 'Invalid Request' }, id: null },
      { jsonrpc: '2.0', error: { code: -32601, message: 'Method not found' }, id: '5' },
      { jsonrpc: '2.0', result: ['hello', 5], id: '9' },
    ]);
    expect(body).toHaveLength(5);
  });

  it('rpc call Batch (all notifications)', async () => {
    const response = await post('[{"jsonrpc": "2.0", "method": "notify_sum", "params": [1,2,4]}, {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}]');
    expect(response).toEqual({ status: 204, body: undefined });
  });
});

describe('the envelope of interface A', () => {
  it('hands cred, apiKey and the channel to the handler and ignores other envelope members', async () => {
    const { body } = await post('{"jsonrpc":"2.0","id":"a-1","method":"whoami","cred":{"user":"u1","token":"t1"},"apiKey":"peer-sdk","extra":1}');
    expect(body).toEqual({ jsonrpc: '2.0', id: 'a-1', result: { cred: { user: 'u1', token: 't1' }, channel: 'public', apiKey: 'peer-sdk' } });
  });

  it('refuses an apiKey that is no string (-32600)', async () => {
    expect((await post('{"jsonrpc":"2.0","id":"a-3","method":"whoami","apiKey":42}')).body).toMatchObject({ id: 'a-3', error: { code: -32600 } });
  });

  it('counts null members as absent, as the peer SDK sends them, but keeps id: null a request', async () => {
    const { body } = await post('{"jsonrpc":"2.0","id":"a-2","method":"whoami","params":null,"cred":null,"apiKey":null}');
    expect(body).toEqual({ jsonrpc: '2.0', id: 'a-2', result: { cred: null, channel: 'public' } });
    expect((await post('{"jsonrpc":"2.0","id":null,"method":"get_data"}')).body).toEqual({ jsonrpc: '2.0', id: null, result: ['hello', 5] });
    expect((await post('{"jsonrpc":null,"id":1,"method":"get_data"}')).body).toMatchObject({ id: 1, error: { code: -32600 } });
  });

  it('hands the client address to the handler', async () => {
    expect((await post('{"jsonrpc":"2.0","id":1,"method":"peer"}')).body).toMatchObject({ result: expect.stringMatching(/127\.0\.0\.1$/) });
  });

  it('refuses text the database cannot store: a NUL or a lone surrogate, at its path', async () => {
    for (const text of ['"a\\u0000b"', '"a\\ud800b"', '"\\udc00"']) {
      const { body } = await post(`{"jsonrpc":"2.0","id":1,"method":"echo","params":{"text":${text}}}`);
      expect(body).toEqual({
        jsonrpc: '2.0',
        id: 1,
        error: { code: -32602, message: 'Invalid params', data: { errors: [{ path: '/text', message: 'contains a NUL character or a lone surrogate' }] } },
      });
    }
    expect((await post('{"jsonrpc":"2.0","id":1,"method":"echo","params":["\\ud83d\\ude00 ok"]}')).body).toEqual({
      jsonrpc: '2.0',
      id: 1,
      result: '\u{1F600} ok',
    });
    expect((await post('{"jsonrpc":"2.0","id":1,"method":"whoami","cred":{"user":"u\\u0000","token":"t"}}')).body).toMatchObject({
      id: 1,
      error: { code: -32600 },
    });
  });

  it('accepts application/json with a charset parameter', async () => {
    const { body } = await post('{"jsonrpc":"2.0","id":7,"method":"get_data"}', publicUrl, 'application/json;charset=UTF-8');
    expect(body).toEqual({ jsonrpc: '2.0', id: 7, result: ['hello', 5] });
  });

  it('rejects a malformed cred as an invalid request', async () => {
    const { body } = await post('{"jsonrpc":"2.0","id":1,"method":"whoami","cred":{"user":1}}');
    expect(body).toMatchObject({ id: 1, error: { code: -32600 } });
  });

  it('reports invalid params with a path for each error', async () => {
    const { body } = await post('{"jsonrpc":"2.0","id":1,"method":"subtract","params":{"minuend":"forty-two"}}');
    expect(body).toMatchObject({ id: 1, error: { code: -32602, message: 'Invalid params' } });
    const errors = (body as { error: { data: { errors: Array<{ path: string; message: string }> } } }).error.data.errors;
    expect(errors.map((error) => error.path).sort()).toEqual(['/minuend', '/subtrahend']);
    expect(JSON.stringify(errors)).not.toContain('forty-two');
  });

  it('passes application errors through with their code and data', async () => {
    const { body } = await post('{"jsonrpc":"2.0","id":1,"method":"fail","params":{"how":"application"}}');
    expect(body).toEqual({ jsonrpc: '2.0', id: 1, error: { code: -34001, message: 'PatientNotAuthenticated', data: { reason: 'no stored session' } } });
  });

  it('maps anything else to -32603 without internals on the wire, and logs it', async () => {
    const { body } = await post('{"jsonrpc":"2.0","id":1,"method":"fail","params":{"how":"crash"}}');
    expect(body).toEqual({ jsonrpc: '2.0', id: 1, error: { code: -32603, message: 'Internal error' } });
    expect(logLines.some((line) => line.includes('JSON-RPC method failed'))).toBe(true);
  });

  it('answers internal methods only on the internal channel', async () => {
    expect((await post('{"jsonrpc":"2.0","id":1,"method":"internal.ping"}')).body).toMatchObject({ error: { code: -32601 } });
    expect((await post('{"jsonrpc":"2.0","id":1,"method":"internal.ping"}', internalUrl)).body).toEqual({ jsonrpc: '2.0', id: 1, result: 'pong' });
    expect((await post('{"jsonrpc":"2.0","id":1,"method":"get_data"}', internalUrl)).body).toMatchObject({ error: { code: -32601 } });
  });

  it('serves rpc.discover on both channels', async () => {
    for (const url of [publicUrl, internalUrl]) {
      const { body } = await post('{"jsonrpc":"2.0","id":1,"method":"rpc.discover"}', url);
      expect((body as { result: { info: { version: string } } }).result.info.version).toBe('0.0.0-test');
    }
  });

  it('takes a batch of 100 calls and refuses 101', async () => {
    const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'subtract', params: [id, 1] });
    const hundred = await post(JSON.stringify(Array.from({ length: 100 }, (_, index) => call(index))));
    expect(hundred.body).toHaveLength(100);
    expect((hundred.body as Array<{ result: number }>)[99]!.result).toBe(98);
    const tooMany = await post(JSON.stringify(Array.from({ length: 101 }, (_, index) => call(index))));
    expect(tooMany.body).toMatchObject({ id: null, error: { code: -32600 } });
  });

  it('answers an unknown version with 404 naming the supported one', async () => {
    const response = await fetch(publicUrl.replace('0.0.0-test', '9.9.9'), { method: 'POST', body: '{}' });
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ supportedVersions: ['0.0.0-test'] });
  });
});
