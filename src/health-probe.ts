import { loadConfig } from './config/config.js';

/**
 * The container's HEALTHCHECK: GET /healthz on this process's liveness listener (HEALTH_PORT, when
 * set: answered beside the event loop, from its heartbeat), else on its internal listener (every
 * role has it); exit 0 when it answers 200, else 1. The address is the listener's own (INTERNAL_HOST, or loopback
 * when it binds every address), so it works whatever the deployment sets. It loads the configuration
 * only, not the service: it runs every few seconds.
 */
const PROBE_TIMEOUT_MS = 2000;
const EVERY_ADDRESS = new Set(['0.0.0.0', '::', '']);

try {
  const { internalHost, internalPort, healthPort } = loadConfig();
  const host = EVERY_ADDRESS.has(internalHost) ? '127.0.0.1' : internalHost;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${healthPort ?? internalPort}/healthz`;
  const response = await fetch(url, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
  process.exitCode = response.ok ? 0 : 1;
} catch (error) {
  process.stderr.write(`health probe: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
