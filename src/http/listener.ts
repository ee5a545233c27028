import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RequestListener } from 'node:http';

export interface Listener {
  port: number;
  /** Stops accepting, lets in-flight requests finish (up to graceMs), then closes. */
  stop(graceMs?: number): Promise<void>;
}

export async function startListener(handler: RequestListener, host: string, port: number): Promise<Listener> {
  const server = http.createServer(handler);
  // Large documents upload slowly; keep Node's request timeout but make it generous.
  server.requestTimeout = 5 * 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    stop: (graceMs = 10_000) =>
      new Promise<void>((resolve) => {
        const force = setTimeout(() => server.closeAllConnections(), graceMs);
        force.unref();
        server.close(() => {
          clearTimeout(force);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}
