import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import express, { Router } from 'express';
import { openApiSpecPath, openRpcSpecPath, packageRoot } from '../config/paths.js';
import type { FallbackBody } from '../http/fallback.js';

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

const REDOC_INIT = `Redoc.init('/docs/openapi.yaml', { expandResponses: '200', hideDownloadButton: false }, document.getElementById('redoc'));`;

/**
 * What the pages may load: scripts of the service only (and the one inline Redoc.init, by its
 * hash), styles of the service and the inline ones the renderers inject, images of the service or
 * inline; no frames, forms, plugins or base URL. The search index of Redoc runs in a blob: worker.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  `script-src 'self' 'sha256-${createHash('sha256').update(REDOC_INIT).digest('base64')}'`,
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

/**
 * GET /docs: both specs rendered for reading, served from the package itself (no CDN):
 * Redoc for specs/openapi.yaml, the OpenRPC docs (@open-rpc/docs-react) for specs/openrpc.json,
 * and the raw specs for client generators.
 */
export function docsRoutes(fallback: (status: number, message?: string) => FallbackBody): Router {
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
<script>${REDOC_INIT}</script>`,
      ),
    );
  });
  router.get('/docs/openrpc', (_req, res) => {
    res.type('html').send(page('Interface A: EHR server', `<div id="openrpc-docs" data-spec="/docs/openrpc.json" style="padding:0 24px"></div>\n<script src="/docs/assets/openrpc-docs.js"></script>`));
  });
  // Express would answer OPTIONS on these itself, in text.
  router.all(['/docs', '/docs/', '/docs/openapi', '/docs/openrpc', '/docs/openapi.yaml', '/docs/openrpc.json'], (_req, res) => {
    res.status(405).setHeader('Allow', 'GET, HEAD').json(fallback(405));
  });
  return router;
}
