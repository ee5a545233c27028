/** The shell of the service's web pages (/docs, /console): one style, one navigation. */
export function htmlPage(title: string, body: string, style = ''): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<style>body{margin:0;font-family:system-ui,sans-serif;color:#1b1f24} nav.site{padding:12px 24px;background:#1d3557} nav.site a{color:#fff;margin-right:24px;text-decoration:none}${style}</style>
</head>
<body>
<nav class="site"><a href="/docs/">Getting started</a><a href="/docs/openrpc">Interface A (JSON-RPC)</a><a href="/docs/openapi">Interface B (HTTP/JSON)</a><a href="/console">Delivery console</a></nav>
${body}
</body>
</html>`;
}

/**
 * What the pages may load: script files of the service only (no inline script, no eval), styles of
 * the service and the inline ones the renderers inject, images of the service or inline; no frames,
 * forms, plugins or base URL. Redoc's search index runs in a blob: worker.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');
