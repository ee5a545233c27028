import { existsSync } from 'node:fs';
import path from 'node:path';
import express, { Router } from 'express';
import { openApiSpecPath, openRpcSpecPath, packageRoot } from '../config/paths.js';

/** Bundles written by scripts/build-docs.ts (`make build`). */
const assetsDir = path.join(packageRoot, 'dist', 'docs');

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<style>body{margin:0;font-family:system-ui,sans-serif} nav{padding:12px 24px;background:#1d3557} nav a{color:#fff;margin-right:24px;text-decoration:none}</style>
</head>
<body>
<nav><a href="/docs/">ehr-gateway docs</a><a href="/docs/openrpc">Interface A (JSON-RPC)</a><a href="/docs/openapi">Interface B (HTTP/JSON)</a></nav>
${body}
</body>
</html>`;
}

/**
 * GET /docs: both specs rendered for reading, served from the package itself (no CDN):
 * Redoc for specs/openapi.yaml, the OpenRPC docs (@open-rpc/docs-react) for specs/openrpc.json,
 * and the raw specs for client generators.
 */
export function docsRoutes(): Router {
  const router = Router();
  router.get('/docs/openapi.yaml', (_req, res) => res.type('application/yaml').sendFile(openApiSpecPath));
  router.get('/docs/openrpc.json', (_req, res) => res.type('application/json').sendFile(openRpcSpecPath));
  router.use('/docs/assets', express.static(assetsDir, { fallthrough: false, maxAge: '1h' }));
  router.use('/docs', (req, res, next) => {
    if (req.method !== 'GET' || existsSync(assetsDir)) return next();
    res.status(503).type('text/plain').send('The documentation pages are not built: run `make build`.\n');
  });
  router.get(['/docs', '/docs/'], (_req, res) => {
    res.type('html').send(
      page(
        'ehr-gateway documentation',
        `<main style="padding:24px">
<h1>ehr-gateway</h1>
<ul>
<li><a href="/docs/openrpc">Interface A, the EHR server</a> (JSON-RPC 2.0; <a href="/docs/openrpc.json">openrpc.json</a>)</li>
<li><a href="/docs/openapi">Interface B, the ЭМД registry gateway</a> (OpenAPI 3.1 with callbacks; <a href="/docs/openapi.yaml">openapi.yaml</a>)</li>
</ul>
</main>`,
      ),
    );
  });
  router.get('/docs/openapi', (_req, res) => {
    res.type('html').send(
      page(
        'Interface B: ЭМД registry gateway',
        `<div id="redoc"></div>
<script src="/docs/assets/redoc.standalone.js"></script>
<script>Redoc.init('/docs/openapi.yaml', { expandResponses: '200', hideDownloadButton: false }, document.getElementById('redoc'));</script>`,
      ),
    );
  });
  router.get('/docs/openrpc', (_req, res) => {
    res.type('html').send(page('Interface A: EHR server', `<div id="openrpc-docs" data-spec="/docs/openrpc.json" style="padding:0 24px"></div>\n<script src="/docs/assets/openrpc-docs.js"></script>`));
  });
  return router;
}
