import { existsSync } from 'node:fs';
import path from 'node:path';
import { Router } from 'express';
import { packageRoot } from '../config/paths.js';
import { CONTENT_SECURITY_POLICY, htmlPage, negotiateLanguage } from '../docs/page.js';
import type { FallbackBody } from '../http/fallback.js';

/** The console's script, bundled by scripts/build-docs.ts beside the docs' (served at /docs/assets/console.js). */
const script = path.join(packageRoot, 'dist', 'docs', 'console.js');

const STYLE = `#console{max-width:1200px;padding:8px 24px 48px} header{display:flex;gap:16px;align-items:baseline} header .who{color:#57606a} .toolbar{display:flex;gap:12px;align-items:center;margin:8px 0}
form.sign-in{display:flex;flex-direction:column;gap:10px;max-width:360px} form.sign-in label{display:flex;flex-direction:column;font-size:14px;gap:4px} form.sign-in input{padding:6px;font-size:15px}
button{padding:5px 12px;font-size:14px;cursor:pointer} .problem{color:#b42318} .status{color:#57606a}
details.request{border:1px solid #d0d7de;border-radius:6px;margin:8px 0;padding:6px 12px} details.request summary{cursor:pointer;display:flex;gap:12px;align-items:center;flex-wrap:wrap}
.badge{font-size:12px;padding:1px 8px;border-radius:10px;background:#eaeef2} .badge.delivered,.badge.completed,.badge.accepted{background:#dafbe1;color:#116329} .badge.failed,.badge.rejected{background:#ffebe9;color:#b42318} .badge.pending,.badge.waiting,.badge.received{background:#fff8c5;color:#7d4e00}
.callback{border-left:3px solid #d0d7de;margin:10px 0 10px 4px;padding-left:12px} .callback.state-failed{border-left-color:#b42318} .callback h4{margin:4px 0} .callback .url{font-family:monospace;font-size:13px;color:#57606a;margin:2px 0}
table.attempts{border-collapse:collapse;font-size:13px} .retrying{color:#7d4e00;font-size:14px} table.attempts th,table.attempts td{border:1px solid #d0d7de;padding:3px 8px;text-align:left}`;

/**
 * GET /console: the delivery console, a page for a clinic's integrator (model: Svix's consumer app
 * portal). It is a bundled script over the public API of interface B; the page's policy allows no
 * inline script and nothing from elsewhere.
 */
export function consoleRoutes(fallback: (status: number, message?: string) => FallbackBody): Router {
  const router = Router();
  router.get(['/console', '/console/'], (req, res) => {
    res.setHeader('Content-Security-Policy', CONTENT_SECURITY_POLICY);
    if (!existsSync(script)) {
      res.status(503).json(fallback(503, 'the console page is not built: run `make build`'));
      return;
    }
    const language = negotiateLanguage(req, res);
    const [title, loading] = language === 'ru' ? ['ehr-gateway: консоль доставки', 'Загрузка…'] : ['ehr-gateway: delivery console', 'Loading…'];
    res.type('html').send(
      htmlPage(title, `<main id="console"><p>${loading}</p></main>\n<script src="/docs/assets/console.js"></script>`, {
        language,
        path: '/console',
        style: STYLE,
      }),
    );
  });
  // Express would answer OPTIONS itself, in text.
  router.all(['/console', '/console/'], (_req, res) => {
    res.status(405).setHeader('Allow', 'GET, HEAD').json(fallback(405));
  });
  return router;
}
