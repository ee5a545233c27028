import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import express, { Router } from 'express';
import { openApiSpecPath, openRpcSpecPath, packageRoot } from '../config/paths.js';
import { CLASSIFIER_305, CLASSIFIER_305_VERSION, CLASSIFIER_BY_MNEMONIC } from '../emdr/errors/classifier-305.js';
import { ERROR_CODES, type ErrorCode, type GatewayCode, type GatewayUse } from '../emdr/errors/codes.js';
import type { FallbackBody } from '../http/fallback.js';
import { GATEWAY_CODE_MEANINGS_RU } from './error-codes-ru.js';
import { flowFile } from './flows.js';
import { GETTING_STARTED_STYLE, GETTING_STARTED_TITLE, gettingStarted } from './getting-started.js';
import type { Language } from './language.js';
import { CONTENT_SECURITY_POLICY, FAVICON_SVG, htmlPage, negotiateLanguage } from './page.js';

/** Bundles written by scripts/build-docs.ts (`make build`). */
const assetsDir = path.join(packageRoot, 'dist', 'docs');

const ERROR_TABLE_STYLE = `nav.page-toc{padding:12px 0} .error-codes{padding:0 0 48px} details.error-codes{padding:8px 24px;border-bottom:1px solid #d0d7de} details.error-codes summary{cursor:pointer} details.error-codes summary h2{display:inline;font-size:18px} .error-codes table{border-collapse:collapse;max-width:1400px} .error-codes th,.error-codes td{border:1px solid #d0d7de;padding:6px 10px;text-align:left;vertical-align:top} .error-codes th{background:#f6f8fa}`;

/** Redoc pins its badge to the window's bottom (position: fixed), over whatever else the page shows there: it goes to the menu's end. */
const REDOC_STYLE = '#redoc div:has(> a[href*="redocly.com"]){position:static}';

/** The getting-started page's diagram `id` in `language`, built to dist/docs/flows/ (a note in its place when the build is missing). */
function diagram(id: string, language: Language): string {
  try {
    return readFileSync(path.join(assetsDir, 'flows', flowFile(id, language, 'svg')), 'utf8');
  } catch {
    return `<p>(the diagram ${id} is not built: run <code>make build</code>)</p>`;
  }
}

const escapeHtml = (text: string) => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

const PAGE_TEXT = {
  en: { interfaceA: 'Interface A: EHR server', interfaceB: 'Interface B: ЭМД registry gateway' },
  ru: { interfaceA: 'Интерфейс A: сервер ЭМК', interfaceB: 'Интерфейс B: шлюз реестра ЭМД' },
} as const;

/** In Russian: a classifier code's meaning in the classifier's words, a gateway code's from error-codes-ru.ts. */
export function registryCodeMeaningRu(code: ErrorCode): string {
  const entry = CLASSIFIER_BY_MNEMONIC.get(code);
  if (!entry) return GATEWAY_CODE_MEANINGS_RU[code as GatewayCode];
  return entry.meaningRu ?? `вторая запись ${code} в классификаторе; её описание в публичной выгрузке не приведено`;
}

const USE_LABELS: Record<Language, Record<GatewayUse, string>> = {
  en: { http: 'HTTP answer', acceptance: 'acceptance callback', result: 'result callback' },
  ru: { http: 'ответ HTTP', acceptance: 'обратный вызов приёма', result: 'обратный вызов результата' },
};

/** Who reports a code: the gateway (where), or only the registry. */
export function reporterOf(code: ErrorCode, language: Language): string {
  const entry = ERROR_CODES[code];
  if (entry.id === null) return language === 'ru' ? 'шлюз' : 'the gateway';
  if (entry.uses.length === 0) return language === 'ru' ? 'реестр' : 'the registry';
  return `${language === 'ru' ? 'шлюз' : 'the gateway'}: ${entry.uses.map((use) => USE_LABELS[language][use]).join(', ')}`;
}

/**
 * Interface B's error codes (src/emdr/errors/codes.ts: the classifier's 128, then the gateway's) as a
 * table with their meanings in both languages, the page's own first, and who reports each; the
 * `message` on the wire stays English.
 */
function registryErrorTable(language: Language): string {
  const english = (code: ErrorCode) => ERROR_CODES[code].meaning;
  const columns =
    language === 'ru'
      ? ([
          ['значение (по-русски)', registryCodeMeaningRu],
          ['meaning (English)', english],
        ] as const)
      : ([
          ['meaning (English)', english],
          ['значение (по-русски)', registryCodeMeaningRu],
        ] as const);
  const rows = (Object.keys(ERROR_CODES) as ErrorCode[]).map(
    (code) =>
      `<tr><td><code>${code}</code></td><td>${ERROR_CODES[code].id ?? '—'}</td>${columns.map(([, meaning]) => `<td>${escapeHtml(meaning(code))}</td>`).join('')}<td>${escapeHtml(reporterOf(code, language))}</td></tr>`,
  );
  const intro =
    language === 'ru'
      ? `Каждый код <code>errors[].code</code> интерфейса B: в ответах об ошибке и в обратных вызовах. Все ${CLASSIFIER_305.length} кодов классификатора 1.2.643.5.1.13.13.99.2.305 версии ${CLASSIFIER_305_VERSION} (значение — словами классификатора), каждый — только в его значении; затем коды шлюза для условий, которых классификатор не называет. Последний столбец: сообщает ли код сам шлюз (и где) или только реестр. Поле <code>message</code> всегда на английском: оно для журналов.`
      : `Every <code>errors[].code</code> of interface B, in error answers and in callbacks: the ${CLASSIFIER_305.length} codes of classifier 1.2.643.5.1.13.13.99.2.305 version ${CLASSIFIER_305_VERSION} (the Russian meaning in the classifier's words), each used only with its classifier meaning, then the gateway's own codes for conditions the classifier does not name. The last column: whether the gateway reports a code itself (and where) or only the registry does. The <code>message</code> is always English: it is for logs.`;
  // Above Redoc, folded, where a reader finds it without scrolling past the whole reference.
  return `<details id="error-codes" class="error-codes">
<summary><h2>${language === 'ru' ? 'Коды ошибок' : 'Error codes'}</h2></summary>
<p>${intro}</p>
<table>
<thead><tr><th>code</th><th>${language === 'ru' ? 'номер в классификаторе 305' : 'classifier 305 id'}</th>${columns.map(([title]) => `<th>${title}</th>`).join('')}<th>${language === 'ru' ? 'кто сообщает' : 'reported by'}</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table>
</details>`;
}

/**
 * GET /docs: both specs rendered for reading, served from the package itself (no CDN):
 * Redoc for specs/openapi.yaml, the OpenRPC docs (@open-rpc/docs-react) for specs/openrpc.json,
 * and the raw specs for client generators; each page in Russian or English.
 */
export function docsRoutes(fallback: (status: number, message?: string) => FallbackBody, internalPort: () => number | undefined = () => undefined): Router {
  const router = Router();
  router.get(['/favicon.svg', '/favicon.ico'], (_req, res) => {
    res.type('image/svg+xml').setHeader('Cache-Control', 'max-age=86400').send(FAVICON_SVG);
  });
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
  router.get(['/docs', '/docs/'], (req, res) => {
    const language = negotiateLanguage(req, res);
    const body = gettingStarted(language, (id) => diagram(id, language));
    res.type('html').send(htmlPage(GETTING_STARTED_TITLE[language], body, { language, path: '/docs/', style: GETTING_STARTED_STYLE }));
  });
  router.get('/docs/openapi', (req, res) => {
    const language = negotiateLanguage(req, res);
    const text = PAGE_TEXT[language];
    res.type('html').send(
      htmlPage(
        text.interfaceB,
        `${registryErrorTable(language)}
<div id="redoc"></div>
<script src="/docs/assets/redoc.standalone.js"></script>
<script src="/docs/assets/redoc-init.js"></script>`,
        { language, path: '/docs/openapi', style: `${ERROR_TABLE_STYLE} ${REDOC_STYLE}` },
      ),
    );
  });
  router.get('/docs/openrpc', (req, res) => {
    const language = negotiateLanguage(req, res);
    const port = internalPort();
    res
      .type('html')
      .send(
        htmlPage(
          PAGE_TEXT[language].interfaceA,
          `<div id="openrpc-docs" data-spec="/docs/openrpc.json"${port === undefined ? '' : ` data-internal-port="${port}"`} style="padding:0 24px"></div>\n<script src="/docs/assets/openrpc-docs.js"></script>`,
          { language, path: '/docs/openrpc', style: ERROR_TABLE_STYLE },
        ),
      );
  });
  // Express would answer OPTIONS on these itself, in text.
  router.all(['/docs', '/docs/', '/docs/openapi', '/docs/openrpc', '/docs/openapi.yaml', '/docs/openrpc.json', '/favicon.svg', '/favicon.ico'], (_req, res) => {
    res.status(405).setHeader('Allow', 'GET, HEAD').json(fallback(405));
  });
  return router;
}
