import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import express, { Router } from 'express';
import { openApiSpecPath, openRpcSpecPath, packageRoot } from '../config/paths.js';
import type { FallbackBody } from '../http/fallback.js';
import { FLOWS } from './flows.js';
import { CONTENT_SECURITY_POLICY, htmlPage } from './page.js';

/** Bundles written by scripts/build-docs.ts (`make build`). */
const assetsDir = path.join(packageRoot, 'dist', 'docs');

const GUIDE_STYLE = `main.guide{max-width:1100px;padding:8px 24px 48px;line-height:1.5} main.guide h2{margin-top:40px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
main.guide figure{margin:16px 0;border:1px solid #d0d7de;border-radius:6px;padding:8px;background:#fff} main.guide figure svg{display:block;max-width:100%;height:auto} main.guide figcaption{color:#57606a;font-size:14px;margin-top:6px}
main.guide code{background:#f6f8fa;padding:1px 4px;border-radius:4px} main.guide pre{background:#f6f8fa;padding:12px;border-radius:6px;overflow-x:auto}`;

const ERROR_TABLE_STYLE = `nav.page-toc{padding:12px 0} .error-codes{padding:0 0 48px} .error-codes table{border-collapse:collapse;max-width:1100px} .error-codes th,.error-codes td{border:1px solid #d0d7de;padding:6px 10px;text-align:left;vertical-align:top} .error-codes th{background:#f6f8fa}`;

/** The getting-started page's diagram `id`, built to dist/docs/flows/ (a note in its place when the build is missing). */
function diagram(id: string): string {
  try {
    return readFileSync(path.join(assetsDir, 'flows', `${id}.svg`), 'utf8');
  } catch {
    return `<p>(the diagram ${id} is not built: run <code>make build</code>)</p>`;
  }
}

function gettingStarted(): string {
  const [interfaceA, interfaceB] = FLOWS;
  return `<main class="guide">
<h1>ehr-gateway: getting started</h1>
<p>One service, two interfaces. <strong>Interface A</strong>, the EHR server, serves patient data over JSON-RPC 2.0 to apps whose users an authorization server of your own logs in.
<strong>Interface B</strong>, the ЭМД registry gateway, registers a clinic's electronic medical documents in the national registry and delivers document files, over HTTP/JSON, answering each request at once and calling the clinic back twice.
Both are described by their specs, the source of truth: <a href="/docs/openrpc.json">openrpc.json</a> and <a href="/docs/openapi.yaml">openapi.yaml</a>.</p>

<h2 id="interface-a">Interface A: the EHR server</h2>
<p>The authorization server stores exchange tokens and sessions on the EHR server over an internal channel, with SHA-1 credentials; the app sends the user's identifying data to the EHR server only.
Reference: <a href="/docs/openrpc">methods, params, results, examples and the error codes</a>.</p>
<figure>${diagram(interfaceA.id)}<figcaption>${interfaceA.title}</figcaption></figure>

<h2 id="interface-b">Interface B: the ЭМД registry gateway</h2>
<p>Every request is acknowledged at once and answered by two callbacks to the clinic's callback URL, acceptance first, then the result; each is retried until the clinic answers <code>200 {"status":"Success"}</code>, and a callback that failed for good can be replayed.
Reference: <a href="/docs/openapi">operations, callbacks and schemas</a>.</p>
<figure>${diagram(interfaceB.id)}<figcaption>${interfaceB.title}</figcaption></figure>

<h2 id="try-it">Try it</h2>
<ol>
<li><code>make run</code> starts the service with demo data; the README's walk-throughs take both interfaces from there to a first delivered callback, command by command (a test runs exactly those commands).</li>
<li><code>node dist/src/main.js document sample --out sample</code> writes a document signed with fresh GOST test keys and the RegisterDocument body that sends it for the demo clinic.</li>
<li><code>make mock</code> starts mocks of both interfaces from the specs; the mock of interface B signs its callbacks like the service.</li>
<li>The <a href="/console">delivery console</a> shows a clinic its requests and every callback attempt, and replays a failed callback.</li>
</ol>
</main>`;
}

/**
 * GET /docs: both specs rendered for reading, served from the package itself (no CDN):
 * Redoc for specs/openapi.yaml, the OpenRPC docs (@open-rpc/docs-react) for specs/openrpc.json,
 * and the raw specs for client generators.
 */
export function docsRoutes(fallback: (status: number, message?: string) => FallbackBody, internalPort: () => number | undefined = () => undefined): Router {
  const router = Router();
  router.use('/docs', (_req, res, next) => {
    res.setHeader('Content-Security-Policy', CONTENT_SECURITY_POLICY);
    next();
  });
  // The bundles may be cached (the listener's no-store is for API answers); express.static would
  // answer another method with an empty 405.
  router.use('/docs/assets', (req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.status(405).setHeader('Allow', 'GET, HEAD').json(fallback(405));
      return;
    }
    res.removeHeader('Cache-Control');
    next();
  });
  router.get('/docs/openapi.yaml', (_req, res) => res.type('application/yaml').sendFile(openApiSpecPath));
  router.get('/docs/openrpc.json', (_req, res) => res.type('application/json').sendFile(openRpcSpecPath));
  router.use('/docs/assets', express.static(assetsDir, { fallthrough: false, maxAge: '1h', redirect: false, index: false }));
  router.use('/docs', (req, res, next) => {
    if (req.method !== 'GET' || existsSync(assetsDir)) return next();
    res.status(503).json(fallback(503, 'the documentation pages are not built: run `make build`'));
  });
  router.get(['/docs', '/docs/'], (_req, res) => {
    res.type('html').send(htmlPage('ehr-gateway: getting started', gettingStarted(), GUIDE_STYLE));
  });
  router.get('/docs/openapi', (_req, res) => {
    res.type('html').send(
      htmlPage(
        'Interface B: ЭМД registry gateway',
        `<div id="redoc"></div>
<script src="/docs/assets/redoc.standalone.js"></script>
<script src="/docs/assets/redoc-init.js"></script>`,
      ),
    );
  });
  router.get('/docs/openrpc', (_req, res) => {
    const port = internalPort();
    res.type('html').send(
      htmlPage(
        'Interface A: EHR server',
        `<div id="openrpc-docs" data-spec="/docs/openrpc.json"${port === undefined ? '' : ` data-internal-port="${port}"`} style="padding:0 24px"></div>\n<script src="/docs/assets/openrpc-docs.js"></script>`,
        ERROR_TABLE_STYLE,
      ),
    );
  });
  // Express would answer OPTIONS on these itself, in text.
  router.all(['/docs', '/docs/', '/docs/openapi', '/docs/openrpc', '/docs/openapi.yaml', '/docs/openrpc.json'], (_req, res) => {
    res.status(405).setHeader('Allow', 'GET, HEAD').json(fallback(405));
  });
  return router;
}
