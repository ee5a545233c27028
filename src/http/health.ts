import { Router } from 'express';
import type { FallbackBody } from './fallback.js';

/** GET /healthz: the process is up. GET /readyz: the database answers and is migrated. */
export function healthRoutes(isReady: () => Promise<boolean>, fallback: (status: number) => FallbackBody): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    const ready = await isReady();
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not ready' });
  });
  // RFC 9110: any other method is a 405 that lists the supported ones (Express answers HEAD from GET).
  router.all(['/healthz', '/readyz'], (_req, res) => {
    res.status(405).setHeader('Allow', 'GET, HEAD').json(fallback(405));
  });
  return router;
}
