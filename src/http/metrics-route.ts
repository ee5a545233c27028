import { Router } from 'express';
import type { Metrics } from '../metrics/metrics.js';
import type { FallbackBody } from './fallback.js';

/** GET /metrics: the Prometheus text format (internal listener only: it names methods, operations and queue depths). */
export function metricsRoutes(metrics: Metrics, fallback: (status: number) => FallbackBody): Router {
  const router = Router();
  router.get('/metrics', async (_req, res) => {
    const { contentType, body } = await metrics.text();
    res.status(200).setHeader('Content-Type', contentType).send(body);
  });
  router.all('/metrics', (_req, res) => {
    res.status(405).setHeader('Allow', 'GET, HEAD').json(fallback(405));
  });
  return router;
}
