import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { startServe, type ServiceProcess } from '../../scripts/bench/lib/processes.js';
import { freePort } from '../../src/db/embedded-postgres.js';
import { repoRoot } from '../support/cli.js';
import { createTestDatabase } from '../support/database.js';

/**
 * The benches choose serve's ports before serve binds them, so another process may take one
 * meanwhile (HEALTH_PORT "already in use" about once in 30 starts): startServe starts again on other
 * ports rather than failing the bench.
 */
describe('the benches starting serve, a port taken meanwhile', () => {
  const taken = net.createServer();
  let service: ServiceProcess | undefined;

  afterAll(async () => {
    await service?.stop();
    await new Promise((resolve) => taken.close(resolve));
  });

  it('starts again on other ports', async () => {
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const takenPort = (taken.address() as net.AddressInfo).port;
    const chosen: number[][] = [];
    service = await startServe(
      repoRoot,
      { DATABASE_URL: await createTestDatabase(), DATA_KEY: randomBytes(32).toString('hex') },
      {
        only: 'ehr',
        // The first start's health port is the one held above, as if taken between choosing and binding.
        choosePorts: async () => {
          const ports: [number, number, number] = [await freePort(), await freePort(), chosen.length === 0 ? takenPort : await freePort()];
          chosen.push(ports);
          return ports;
        },
      },
    );
    expect(chosen).toHaveLength(2);
    expect(service.healthPort).not.toBe(takenPort);
    const ready = await fetch(`http://127.0.0.1:${service.publicPort}/readyz`);
    expect(ready.status).toBe(200);
  }, 180_000);
});
