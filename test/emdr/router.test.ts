import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmdrRouter } from '../../src/emdr/intake/router.js';
import { withHotPaths } from '../../src/http/respond.js';
import { startListener, type Listener } from '../../src/http/listener.js';
import { createLogger } from '../../src/logging/logger.js';

/** The openapi-backend router of interface B over real HTTP, on a probe definition. */
let listener: Listener;
let baseUrl: string;

beforeAll(async () => {
  const router = await createEmdrRouter({
    definition: path.join(import.meta.dirname, 'fixtures/router-probe.openapi.yaml'),
    handlers: {
      echo: async (request) => ({ status: 200, body: request.body }),
      upload: async (request) => ({ status: 200, body: { body: request.body, bytes: request.base64Member?.value.toString('latin1') ?? null } }),
      crash: async () => {
        throw new Error('secret internals at /srv/app.ts:1');
      },
    },
    bodyLimits: { default: 1024 },
    base64Members: { upload: 'data' },
    logger: createLogger('silent'),
  });
  const elsewhere = withHotPaths([], (_req, res) => {
    res.statusCode = 404;
    res.end();
  });
  listener = await startListener(withHotPaths([router], elsewhere), '127.0.0.1', 0);
  baseUrl = `http://127.0.0.1:${listener.port}`;
});

afterAll(async () => {
  await listener.stop();
});

async function post(route: string, body: string, contentType = 'application/json') {
  const response = await fetch(`${baseUrl}${route}`, { method: 'POST', headers: { 'content-type': contentType }, body });
  return { status: response.status, body: (await response.json()) as { status?: string; errors?: Array<{ code: string; path?: string }> } };
}

describe('interface B router', () => {
  it('routes a valid request to its handler, validating with JSON Schema 2020-12 and formats', async () => {
    const body = { id: '0b6c5f8e-3f5b-4c41-9d55-2d5b0c9f8a11', note: null, when: '2026-11-21T10:00:00Z' };
    expect(await post('/api/Echo', JSON.stringify(body))).toEqual({ status: 200, body });
  });

  it('answers validation failures with 400 VALIDATION_ERROR and a path per error', async () => {
    const { status, body } = await post('/api/Echo', JSON.stringify({ id: 'not-a-uuid', when: 'yesterday', extra: 1 }));
    expect(status).toBe(400);
    expect(body.status).toBe('Error');
    const paths = body.errors!.map((error) => error.path);
    expect(paths).toEqual(expect.arrayContaining(['/requestBody/id', '/requestBody/note', '/requestBody/when', '/requestBody/extra']));
    expect(body.errors!.every((error) => error.code === 'VALIDATION_ERROR')).toBe(true);
  });

  it('answers malformed JSON with 400 in the error shape', async () => {
    expect(await post('/api/Echo', '{"id":')).toMatchObject({ status: 400, body: { status: 'Error', errors: [{ code: 'VALIDATION_ERROR' }] } });
  });

  it('answers an unknown operation with 404 in the error shape', async () => {
    expect(await post('/api/Nothing', '{}')).toMatchObject({ status: 404, body: { status: 'Error', errors: [{ code: 'NOT_FOUND' }] } });
  });

  it('answers a body over the limit with 413 in the error shape', async () => {
    expect(await post('/api/Echo', JSON.stringify({ note: 'x'.repeat(2048) }))).toMatchObject({
      status: 413,
      body: { status: 'Error', errors: [{ code: 'REQUEST_TOO_LARGE' }] },
    });
  });

  it('answers a body that is not JSON with 415 in the error shape', async () => {
    expect(await post('/api/Echo', '<xml/>', 'application/xml')).toMatchObject({
      status: 415,
      body: { status: 'Error', errors: [{ code: 'UNSUPPORTED_MEDIA_TYPE' }] },
    });
  });

  it('maps a thrown error to 500 INTERNAL_ERROR without internals', async () => {
    const { status, body } = await post('/api/Crash', '{}');
    expect(status).toBe(500);
    expect(body).toEqual({ status: 'Error', errors: [{ code: 'INTERNAL_ERROR', message: 'internal error' }] });
  });

  describe('an operation with a base64 member (RegisterDocument: document)', () => {
    const data = Buffer.from([0xfb, 0xef, 0xff, 0x41]).toString('base64');

    it('hands the member to the handler as bytes, with a placeholder in the validated body', async () => {
      expect(await post('/api/Upload', JSON.stringify({ note: 'n', data }))).toEqual({ status: 200, body: { body: { note: 'n', data: 'AAAA' }, bytes: data } });
    });

    it('parses a body the scanner does not take (an escaped slash) as a whole, as before', async () => {
      expect(await post('/api/Upload', `{"data":"${data.replaceAll('/', '\\/')}"}`)).toEqual({ status: 200, body: { body: { data }, bytes: null } });
    });

    it('gives the same answers as other operations: 413, malformed JSON, empty body, schema errors', async () => {
      expect(await post('/api/Upload', JSON.stringify({ data: 'A'.repeat(2048) }))).toMatchObject({
        status: 413,
        body: { errors: [{ code: 'REQUEST_TOO_LARGE' }] },
      });
      expect(await post('/api/Upload', `{"data":"${data}"`)).toMatchObject({
        status: 400,
        body: { errors: [{ code: 'VALIDATION_ERROR', message: 'body is not valid JSON' }] },
      });
      // JSON, though not an object: the schema says so.
      expect(await post('/api/Upload', `"${data}"`)).toMatchObject({
        status: 400,
        body: { errors: [{ code: 'VALIDATION_ERROR', path: '/requestBody', message: 'must be a JSON object' }] },
      });
      expect(await post('/api/Upload', '')).toMatchObject({ status: 400, body: { errors: [{ code: 'VALIDATION_ERROR', path: '/requestBody' }] } });
      expect(await post('/api/Upload', JSON.stringify({ data, extra: 1 }))).toMatchObject({
        status: 400,
        body: { errors: [{ code: 'VALIDATION_ERROR', path: '/requestBody/extra' }] },
      });
      expect(await post('/api/Upload', '<xml/>', 'application/xml')).toMatchObject({ status: 415, body: { errors: [{ code: 'UNSUPPORTED_MEDIA_TYPE' }] } });
    });
  });

  it('refuses to start on a definition that is not valid OpenAPI', async () => {
    await expect(
      createEmdrRouter({
        definition: { openapi: '3.1.0', info: { title: 'broken' }, paths: { '/x': { get: { responses: 'none' } } } } as never,
        handlers: {},
        bodyLimits: { default: 1024 },
        logger: createLogger('silent'),
      }),
    ).rejects.toThrow();
  });
});
