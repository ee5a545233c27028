import type { Request, Response } from 'express';
import { inLanguage, LANGUAGES, pageLanguage, type Language } from './language.js';

const SITE_NAVIGATION: Record<Language, Array<[path: string, label: string]>> = {
  en: [
    ['/docs/', 'Getting started'],
    ['/docs/openrpc', 'Interface A (JSON-RPC)'],
    ['/docs/openapi', 'Interface B (HTTP/JSON)'],
    ['/console', 'Delivery console'],
  ],
  ru: [
    ['/docs/', 'Начало работы'],
    ['/docs/openrpc', 'Интерфейс A (JSON-RPC)'],
    ['/docs/openapi', 'Интерфейс B (HTTP/JSON)'],
    ['/console', 'Консоль доставки'],
  ],
};

/** Each language's name in itself, for the switch. */
const LANGUAGE_NAMES: Record<Language, string> = { en: 'English', ru: 'Русский' };

/** The pages' icon (served at /favicon.svg and /favicon.ico): the navigation bar's blue, a white "e". */
export const FAVICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#1d3557"/><text x="16" y="23" font-family="sans-serif" font-size="20" font-weight="700" fill="#fff" text-anchor="middle">e</text></svg>';

export interface PageOptions {
  language: Language;
  /** The page's own path, which the language switch links to in the other language. */
  path: string;
  style?: string;
}

/** The shell of the service's web pages (/docs, /console): one style, one navigation, a language switch. */
export function htmlPage(title: string, body: string, { language, path, style = '' }: PageOptions): string {
  const navigation = SITE_NAVIGATION[language]
    .map(([href, label]) => `<a href="${inLanguage(href, language)}"${href === path ? ' aria-current="page"' : ''}>${label}</a>`)
    .join('');
  const switcher = LANGUAGES.map((other) =>
    other === language
      ? `<span lang="${other}" aria-current="true">${LANGUAGE_NAMES[other]}</span>`
      : `<a href="${inLanguage(path, other)}" hreflang="${other}" lang="${other}">${LANGUAGE_NAMES[other]}</a>`,
  ).join('');
  return `<!doctype html>
<html lang="${language}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<style>body{margin:0;font-family:system-ui,sans-serif;color:#1b1f24} nav.site{display:flex;align-items:center;padding:12px 24px;background:#1d3557} nav.site a{color:#fff;margin-right:24px;text-decoration:none} nav.site a[aria-current=page]{text-decoration:underline} nav.site .languages{margin-left:auto;color:#fff;display:flex;gap:12px} nav.site .languages a{margin:0;opacity:.8} nav.site .languages span{font-weight:600}${style}</style>
</head>
<body>
<nav class="site">${navigation}<span class="languages" aria-label="${language === 'ru' ? 'Язык' : 'Language'}">${switcher}</span></nav>
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

/** The language of a page request, announced on its answer: Content-Language, and Vary since it follows Accept-Language. */
export function negotiateLanguage(req: Request, res: Response): Language {
  const language = pageLanguage(req.query.lang, req.headers['accept-language']);
  res.setHeader('Content-Language', language);
  res.vary('Accept-Language');
  return language;
}
