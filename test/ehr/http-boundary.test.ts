import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statusLineOf } from '../support/raw-http.js';
import { startTestService, type TestService } from '../support/service.js';
import { SERVED_VERSIONS, VERSION } from './support/rpc.js';

const portOf = (url: string) => Number(new URL(url).port);
const CALL = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'patient.get_patient', params: {}, cred: { user: 'u', token: 't' } });

/** Interface A's HTTP boundary and both listeners' answers outside the interfaces: always JSON, never Express's HTML. */
describe('interface A over HTTP, and the listeners around it', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({}, ['ehr', 'emdr']);
  });

  afterAll(async () => {
    await service?.stop();
  });

  const call = async (headers: Record<string, string>, body = CALL, url = `${service.publicUrl}/${VERSION}/`) => {
    const response = await fetch(url, { method: 'POST', headers, body });
    return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, any> };
  };

  it('takes application/json with or without charset=utf-8 (the peer SDK sends application/json;charset=UTF-8)', async () => {
    for (const type of ['application/json', 'application/json;charset=UTF-8', 'Application/JSON; charset="utf-8"']) {
      const answer = await call({ 'content-type': type });
      expect(answer.status).toBe(200);
      // Read and judged as a call: no session for these credentials, not a refusal of the request.
      expect(answer.body).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: expect.any(Number), data: { reason: expect.stringMatching(/session/) } } });
    }
  });

  it.each([
    ['text/plain', { 'content-type': 'text/plain;charset=UTF-8' }],
    ['a form', { 'content-type': 'application/x-www-form-urlencoded' }],
    ['no Content-Type', {}],
    ['another charset', { 'content-type': 'application/json; charset=latin1' }],
    ['gzip', { 'content-type': 'application/json', 'content-encoding': 'gzip' }],
  ])('refuses %s with 415 and a JSON-RPC error (id null), so a browser cannot send it a simple cross-site request', async (_name, headers) => {
    // fetch adds text/plain to a string body without a type; a Blob without one sends none.
    const answer = await call(headers as Record<string, string>, new Blob([CALL]) as unknown as string);
    expect(answer.status).toBe(415);
    expect(answer.body).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request', data: { reason: expect.any(String) } } });
  });

  it('answers a Content-Length over 1 MiB with 413 before the body arrives, and an unknown version with 404 without reading it', async () => {
    expect(
      await statusLineOf(
        portOf(service.publicUrl),
        `POST /${VERSION}/ HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2000000\r\n\r\n`,
      ),
    ).toBe('HTTP/1.1 413 Payload Too Large');
    expect(
      await statusLineOf(portOf(service.internalUrl), 'POST /9.9.9/ HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n'),
    ).toBe('HTTP/1.1 404 Not Found');
  });

  it.each(['GET', 'PUT', 'DELETE'])('answers %s on /<version>/ with 405, Allow: POST and JSON', async (method) => {
    for (const base of [service.publicUrl, service.internalUrl]) {
      const response = await fetch(`${base}/${VERSION}/`, { method });
      expect(response.status).toBe(405);
      expect(response.headers.get('allow')).toBe('POST');
      expect(await response.json()).toEqual({ error: expect.any(String), supportedVersions: SERVED_VERSIONS });
    }
  });

  it.each([
    ['an unknown path', '/nope/deeper', 404],
    ['an unknown version', '/9.9.9/', 404],
    ['a bad percent-escape', '/%ff/', 400],
    ['a bad percent-escape in the docs', '/docs/assets/%ff', 400],
    ['an unknown docs file', '/docs/assets/nope.js', 404],
    ['the docs assets directory', '/docs/assets', 404],
  ])('answers %s on both listeners in JSON, without a stack or a file path', async (_name, path, status) => {
    const docs = path.startsWith('/docs');
    for (const base of docs ? [service.publicUrl] : [service.publicUrl, service.internalUrl]) {
      for (const method of docs ? ['GET'] : ['GET', 'POST']) {
        const response = await fetch(`${base}${path}`, { method, headers: { 'content-type': 'application/json' }, body: method === 'POST' ? '{}' : undefined });
        const text = await response.text();
        expect(response.status).toBe(status);
        expect(response.headers.get('content-type')).toMatch(/^application\/json/);
        expect(JSON.parse(text)).toEqual({ error: expect.any(String), supportedVersions: SERVED_VERSIONS });
        expect(text).not.toMatch(/^\s+at .+:\d+:\d+|\/work\/|\/tmp\/|node_modules|<html/im);
      }
    }
  });

  it('answers another method on the docs assets with 405 in JSON', async () => {
    const response = await fetch(`${service.publicUrl}/docs/assets/redoc.standalone.js`, { method: 'POST' });
    expect(response.status).toBe(405);
    expect(await response.json()).toEqual({ error: expect.any(String), supportedVersions: SERVED_VERSIONS });
  });

  it('puts nosniff and no-store on JSON-RPC answers', async () => {
    const answer = await call({ 'content-type': 'application/json' });
    expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
    expect(answer.headers.get('cache-control')).toBe('no-store');
  });
});
