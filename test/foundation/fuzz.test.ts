import fs from 'node:fs';
import http from 'node:http';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openRpcSpecPath } from '../../src/config/paths.js';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { responseProblems } from '../support/contract.js';
import { addClinic, registerBody } from '../support/emdr.js';
import { startServeProcess, type ServeProcess } from '../support/processes.js';

/**
 * Property-based test of both listeners of a live `serve`: arbitrary methods, paths (bad escapes
 * among them), headers (Content-Type, Content-Encoding, Content-Length, credentials) and bodies.
 * Whatever comes in, the answer comes in time, with a documented status, a JSON body in the
 * documented shape (interface B's error shape, a JSON-RPC envelope, or `{error, supportedVersions}`),
 * nosniff, no 5xx, no stack trace or file path; and the process stays up.
 *
 * make test: FUZZ_RUNS (default 3000) cases from FUZZ_SEED (default fixed). make fuzz: a long run.
 * FUZZ_CENSUS=1 runs every case and counts the ones that break the invariant, by kind, instead of
 * stopping at the first (to measure a build, old or new).
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 3000);
const SEED = Number(process.env.FUZZ_SEED ?? 20261121);
const CENSUS = process.env.FUZZ_CENSUS === '1';
const CASE_TIMEOUT_MS = 5000;
const VERSION = (JSON.parse(fs.readFileSync(openRpcSpecPath, 'utf8')) as { info: { version: string } }).info.version;
const UUID = '9d2e7c41-5a3b-4f08-b6c1-0e9f8a7b6c5d';

const OPERATIONS: Array<{ method: string; template: string; pattern: RegExp }> = [
  { method: 'POST', template: '/api/RegisterDocument', pattern: /^\/api\/RegisterDocument\/?$/ },
  { method: 'POST', template: '/api/DemandContent', pattern: /^\/api\/DemandContent\/?$/ },
  { method: 'POST', template: '/api/SearchRegistryItem', pattern: /^\/api\/SearchRegistryItem\/?$/ },
  { method: 'POST', template: '/api/GetRegistryItem', pattern: /^\/api\/GetRegistryItem\/?$/ },
  { method: 'GET', template: '/api/messages/{queueMessageId}', pattern: /^\/api\/messages\/[^/]+\/?$/ },
  { method: 'GET', template: '/api/messages', pattern: /^\/api\/messages\/?$/ },
  { method: 'POST', template: '/api/messages/{queueMessageId}/replay', pattern: /^\/api\/messages\/[^/]+\/replay\/?$/ },
];

interface Case {
  listener: 'public' | 'internal';
  method: string;
  path: string;
  credentials: 'none' | 'valid' | 'wrong' | 'partial';
  contentType: string | undefined;
  contentEncoding: string | undefined;
  body: { text: Buffer; gzip: boolean } | undefined;
  /** Declare a huge Content-Length and send no body: the answer must not wait for it. */
  hugeLength: boolean;
}

const segment = fc.oneof(
  fc.constantFrom(
    'api',
    'RegisterDocument',
    'DemandContent',
    'SearchRegistryItem',
    'GetRegistryItem',
    'messages',
    UUID,
    VERSION,
    'healthz',
    'readyz',
    'docs',
    'assets',
    'openapi.yaml',
    'openrpc',
    'console',
    'replay',
    '..',
    '.',
    '',
  ),
  fc.constantFrom('%', '%ff', '%zz', '%c3%28', '%00', '%2F', '%e2%82', '%25', 'a%', '%%'),
  fc.stringMatching(/^[A-Za-z0-9._~!$&'()*+,;=:@-]{0,12}$/),
);
const path = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      `/${VERSION}/`,
      `/${VERSION}/`,
      '/api/RegisterDocument',
      '/api/DemandContent',
      '/api/SearchRegistryItem',
      '/api/GetRegistryItem',
      `/api/messages/${UUID}`,
      '/api/messages',
      `/api/messages/${UUID}/replay`,
    ),
  },
  fc.constantFrom(
    `/${VERSION}/`,
    `/${VERSION}`,
    '/api/RegisterDocument',
    '/api/DemandContent',
    '/api/SearchRegistryItem',
    `/api/messages/${UUID}`,
    '/api/messages/%',
    '/%ff/',
    '/healthz',
    '/readyz',
    '/docs/nope',
    '/console',
    '/',
  ),
  fc.array(segment, { minLength: 1, maxLength: 5 }).map((segments) => `/${segments.join('/')}`),
  fc.tuple(fc.constantFrom('/api/', `/${VERSION}/`, '/'), fc.array(segment, { maxLength: 3 })).map(([prefix, segments]) => prefix + segments.join('/')),
);
const query = fc.option(
  fc.constantFrom('?a=1', '?%zz', '?x=%ff&y', '?queueMessageId=1', '?limit=0', '?limit=5&state=failed', '?cursor=%ff', `?cursor=1_${UUID}`, '?callbackState=x'),
  { nil: '' },
);

const jsonRpcCall = fc.record({
  jsonrpc: fc.constantFrom('2.0', '1.0', 2),
  id: fc.oneof(fc.integer(), fc.string({ maxLength: 8 }), fc.constant(null)),
  method: fc.constantFrom('patient.get_patient', 'embedded_storage.authenticate', 'embedded_storage.save_auth_info', 'rpc.discover', 'nope', ''),
  params: fc.oneof(
    fc.constant({}),
    fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
    fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 3 }),
  ),
  cred: fc.option(fc.record({ user: fc.string({ maxLength: 8 }), token: fc.string({ maxLength: 8 }) }), { nil: undefined }),
});
const loneSurrogate = fc.constantFrom('\\ud800', '\\udfff', '\\ud83d x', '\\u0000');
const bodyText = fc.oneof(
  fc.constant(''),
  fc.constantFrom('null', 'true', '42', '"text"', '[]', '{}', '{"emdrId":', '<xml/>', 'a=1&b=2'),
  jsonRpcCall.map((call) => JSON.stringify(call)),
  fc.array(jsonRpcCall, { maxLength: 3 }).map((calls) => JSON.stringify(calls)),
  fc
    .record({ emdrId: fc.constantFrom('26.11.000000001', '', 'x'.repeat(80)), clientMessageId: fc.option(fc.uuid(), { nil: undefined }) })
    .map((body) => JSON.stringify(body)),
  fc
    .record({
      creationDateTime: fc.constantFrom('0000-01-01T00:00:00Z', '2026-01-15T09:30:00+03:00', '2026-01-15T09:30:00+23:00', '9999-12-31T23:59:60Z', 'yesterday'),
    })
    .map((overrides) => JSON.stringify(registerBody(overrides))),
  fc
    .tuple(fc.constantFrom('documentNumber', 'kind', 'localUid'), loneSurrogate)
    .map(([member, value]) => JSON.stringify(registerBody()).replace('{', `{"${member}":"${value}",`)),
  fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value)),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.integer({ min: 1, max: 3000 }).map((depth) => '['.repeat(depth) + ']'.repeat(depth)),
  fc.constant(`{"emdrId":"26.11.000000001"${' '.repeat(70 * 1024)}}`),
);
const body = fc.option(
  fc.record({
    text: fc.oneof(
      bodyText.map((text) => Buffer.from(text, 'utf8')),
      fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)),
    ),
    gzip: fc.boolean(),
  }),
  { nil: undefined },
);

const fuzzCase: fc.Arbitrary<Case> = fc.record({
  listener: fc.constantFrom('public', 'public', 'internal'),
  method: fc.constantFrom('GET', 'POST', 'POST', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'),
  path: fc.tuple(path, query).map(([p, q]) => p + q),
  credentials: fc.constantFrom('none', 'valid', 'valid', 'wrong', 'partial'),
  contentType: fc.option(
    fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'application/json;charset=UTF-8',
      'application/json; charset=latin1',
      'application/json; charset=utf-16',
      'text/plain',
      'text/plain;charset=UTF-8',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/xml',
      'application/merge-patch+json',
      ';',
      'garbage',
    ),
    { nil: undefined },
  ),
  contentEncoding: fc.option(fc.constantFrom('identity', 'gzip', 'deflate', 'br', 'gzip, identity', 'x-unknown', ''), { nil: undefined, freq: 3 }),
  body,
  hugeLength: fc.constantFrom(false, false, false, false, false, false, false, true),
});

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

function send(port: number, testCase: Case, clinic: CreatedClinicAccount): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (testCase.credentials === 'valid' || testCase.credentials === 'wrong' || testCase.credentials === 'partial') {
    headers.businessId = clinic.businessId;
    headers.user = clinic.user;
    if (testCase.credentials !== 'partial') headers.token = testCase.credentials === 'valid' ? clinic.token : 'wrong-token';
  }
  if (testCase.contentType !== undefined) headers['content-type'] = testCase.contentType;
  if (testCase.contentEncoding !== undefined) headers['content-encoding'] = testCase.contentEncoding;
  const payload =
    testCase.body === undefined || testCase.method === 'HEAD' ? undefined : testCase.body.gzip ? gzipSync(testCase.body.text) : testCase.body.text;
  if (testCase.hugeLength) headers['content-length'] = '1000000000';
  else if (payload !== undefined) headers['content-length'] = String(payload.length);
  return new Promise((resolve, reject) => {
    const request = http.request({ host: '127.0.0.1', port, method: testCase.method, path: testCase.path, headers, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        clearTimeout(timer);
        request.destroy();
        resolve({ status: response.statusCode!, headers: response.headers, body: Buffer.concat(chunks).toString('utf8') });
      });
      response.on('error', reject);
    });
    const timer = setTimeout(() => {
      request.destroy();
      reject(new Error(`no answer within ${CASE_TIMEOUT_MS} ms`));
    }, CASE_TIMEOUT_MS);
    request.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    if (testCase.hugeLength) request.flushHeaders();
    else request.end(payload);
  });
}

const STACK_OR_PATH = /^\s+at .+:\d+:\d+|\/work\/|\/tmp\/|\/home\/|\/srv\/|node_modules|<html|<pre>/im;

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const isErrorShape = (body: any) =>
  body?.status === 'Error' &&
  Array.isArray(body.errors) &&
  body.errors.length > 0 &&
  body.errors.every((item: any) => typeof item?.code === 'string' && typeof item?.message === 'string');
const isFallbackShape = (body: any) => typeof body?.error === 'string' && Array.isArray(body.supportedVersions) && Object.keys(body).length === 2;
const isEnvelope = (item: any) =>
  item?.jsonrpc === '2.0' &&
  'id' in item &&
  'result' in item !== 'error' in item &&
  (!('error' in item) || (Number.isInteger(item.error?.code) && typeof item.error?.message === 'string'));

/** What is wrong with an answer, as short kinds (empty: it keeps the invariant). */
function problemsOf(testCase: Case, answer: Answer): string[] {
  const problems: string[] = [];
  const pathname = testCase.path.split('?')[0]!;
  if (answer.status >= 500) problems.push(`5xx (${answer.status})`);
  if (answer.headers['x-content-type-options'] !== 'nosniff') problems.push('no nosniff');
  const isDocsPage =
    testCase.listener === 'public' &&
    (testCase.method === 'GET' || testCase.method === 'HEAD') &&
    answer.status === 200 &&
    /^\/(docs|console)(\/|$)/.test(pathname);
  // The docs and console pages are HTML by design; everything else must not be, nor show a stack or a path.
  if (isDocsPage ? /^\s+at .+:\d+:\d+/m.test(answer.body) : STACK_OR_PATH.test(answer.body)) problems.push('stack trace, file path or HTML on the wire');
  // Documented: /docs and /console answer 503 in the fallback shape until `make build` has bundled the pages
  // (another test's build can be under way); a HEAD's answer has no body to show its shape, only its type.
  const unbuiltPage = answer.status === 503 && /^\/(docs|console)(\/|$)/.test(pathname);
  if (unbuiltPage && testCase.method === 'HEAD' && /^application\/json/.test(answer.headers['content-type'] ?? ''))
    return problems.filter((problem) => !problem.startsWith('5xx'));
  if (testCase.method === 'HEAD' || answer.status === 204 || isDocsPage) return problems;
  if (!/^application\/json/.test(answer.headers['content-type'] ?? '')) problems.push(`not JSON (${answer.headers['content-type'] ?? 'no Content-Type'})`);
  const body = parseJson(answer.body);
  if (body === undefined) return [...problems, 'body does not parse as JSON'];

  if (testCase.listener === 'public' && (pathname === '/api' || pathname.startsWith('/api/'))) {
    const operation = OPERATIONS.find((candidate) => candidate.pattern.test(pathname) && candidate.method === testCase.method);
    if (operation && answer.status !== 404 && answer.status !== 405) {
      problems.push(
        ...responseProblems(operation.method, operation.template, answer.status, body).map(() => `interface B answer off the spec (${answer.status})`),
      );
    } else if (!isErrorShape(body) || ![400, 404, 405].includes(answer.status)) {
      problems.push(`interface B unknown route: ${answer.status} not 404/405 in the error shape`);
    }
    return problems;
  }
  if (pathname === `/${VERSION}/` || pathname === `/${VERSION}`) {
    if (testCase.method === 'POST') {
      const envelopeOk =
        answer.status === 200
          ? Array.isArray(body)
            ? body.length > 0 && body.every(isEnvelope)
            : isEnvelope(body)
          : [413, 415].includes(answer.status) && isEnvelope(body);
      if (!envelopeOk) problems.push(`JSON-RPC answer off the envelope (${answer.status})`);
    } else if (answer.status !== 405 || !isFallbackShape(body)) problems.push(`non-POST on /<version>/: ${answer.status}`);
    return problems;
  }
  // Express routes /healthz/ as /healthz.
  const health = /^\/(healthz|readyz)\/?$/.test(pathname) && testCase.method === 'GET' && answer.status === 200;
  if (unbuiltPage && isFallbackShape(body)) return problems.filter((problem) => !problem.startsWith('5xx'));
  if (!health && !isFallbackShape(body)) problems.push(`fallback answer (${answer.status}) not {error, supportedVersions}`);
  if (!health && ![400, 404, 405].includes(answer.status)) problems.push(`fallback status ${answer.status}`);
  return problems;
}

describe('both listeners under arbitrary requests', () => {
  let serve: ServeProcess;
  let clinic: CreatedClinicAccount;

  beforeAll(async () => {
    serve = await startServeProcess({ RATE_LIMIT: '0', HEADERS_TIMEOUT: '3s' });
    clinic = await addClinic({ databaseUrl: serve.env.DATABASE_URL!, dataKey: Buffer.from(serve.env.DATA_KEY!, 'hex') }, 'http://127.0.0.1:9');
  });

  afterAll(async () => {
    await serve?.stop();
  });

  it(`keeps the invariant for ${RUNS} cases (seed ${SEED})`, {
    timeout: CENSUS ? RUNS * (CASE_TIMEOUT_MS + 1000) : Math.max(120_000, RUNS * 200),
  }, async () => {
    const census = new Map<string, { count: number; example: string }>();
    const statuses = new Map<string, number>();
    let broken = 0;
    const started = Date.now();
    const ports = { public: Number(new URL(serve.publicUrl).port), internal: Number(new URL(serve.internalUrl).port) };
    const property = fc.asyncProperty(fuzzCase, async (testCase) => {
      let problems: string[];
      try {
        const answer = await send(ports[testCase.listener], testCase, clinic);
        statuses.set(String(answer.status), (statuses.get(String(answer.status)) ?? 0) + 1);
        problems = problemsOf(testCase, answer);
      } catch (error) {
        problems = [`no answer: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`];
      }
      if (serve.child.exitCode !== null) problems.push('the process died');
      if (CENSUS) {
        if (problems.length > 0) broken += 1;
        for (const problem of new Set(problems)) {
          const entry = census.get(problem) ?? {
            count: 0,
            example: `${testCase.method} ${testCase.listener} ${testCase.path} ${JSON.stringify({ ...testCase, body: testCase.body?.text.toString('utf8').slice(0, 60) })}`,
          };
          entry.count += 1;
          census.set(problem, entry);
        }
        return true;
      }
      if (problems.length > 0) throw new Error(problems.join('; '));
      return true;
    });
    const result = await fc.check(property, { numRuns: RUNS, seed: SEED, endOnFailure: !CENSUS });
    const seconds = Math.round((Date.now() - started) / 100) / 10;
    const histogram = [...statuses]
      .sort()
      .map(([status, count]) => `${status}×${count}`)
      .join(' ');
    process.stdout.write(`fuzz: ${RUNS} cases, seed ${SEED}, ${seconds} s${CENSUS ? `, ${broken} broke the invariant` : ''}; statuses ${histogram}\n`);
    if (CENSUS) {
      for (const [problem, { count, example }] of [...census].sort((a, b) => b[1].count - a[1].count))
        process.stdout.write(`  ${count}\t${problem}\te.g. ${example.slice(0, 300)}\n`);
    }
    expect(result.failed, fc.defaultReportMessage(result) ?? '').toBe(false);
    expect(serve.child.exitCode).toBeNull();
    expect((await fetch(`${serve.publicUrl}/healthz`)).status).toBe(200);
    expect(broken).toBe(0);
  });
});
