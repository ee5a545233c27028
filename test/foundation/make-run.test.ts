import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireMakeRunLock } from '../support/build-lock.js';
import { exitOf, repoRoot } from '../support/cli.js';
import { serveStarted } from '../support/processes.js';

/** `make run` as the README tells a newcomer: build, demo data, the whole service on the embedded PostgreSQL. */
describe('make run', () => {
  let make: ChildProcess;
  let output = '';
  let dataDir: string;
  let publicUrl: string;
  let internalUrl: string;
  let releaseLock: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    releaseLock = await acquireMakeRunLock();
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ehr-gateway-make-run-'));
    // Its own process group, so that SIGTERM reaches make and the service it started, as Ctrl-C would.
    // The service binds ports of its own (0: the OS picks them when it binds), read from its start line.
    const env = { DATABASE_URL: '', DATA_DIR: dataDir, PORT: '0', INTERNAL_PORT: '0', HOST: '127.0.0.1' };
    make = spawn('make', ['--no-print-directory', 'run'], {
      cwd: repoRoot,
      detached: true,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    make.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    make.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    // Started once migrated, on both listeners (afterAll stops the process group, started or not).
    ({ publicUrl, internalUrl } = await serveStarted('make run', make, { env, timeoutMs: 180_000 }));
  }, 600_000);

  afterAll(async () => {
    if (make && make.exitCode === null && make.signalCode === null) process.kill(-make.pid!, 'SIGTERM');
    if (make) await exitOf(make, 60_000);
    await fs.rm(dataDir, { recursive: true, force: true });
    await releaseLock?.();
  });

  it('serves healthz and readyz on both ports', async () => {
    for (const base of [publicUrl, internalUrl]) {
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      expect(await (await fetch(`${base}/readyz`)).json()).toEqual({ status: 'ready' });
    }
  });

  it('has the demo data and the built docs', async () => {
    const search = await fetch(`${publicUrl}/api/SearchRegistryItem`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', businessId: '4000125', user: 'demo-clinic', token: 'demo-clinic-token' },
      body: '{}',
    });
    expect(search.status).toBe(200);
    expect((await fetch(`${publicUrl}/docs/assets/openrpc-docs.js`)).status).toBe(200);
    expect(output).toContain('"patients":3');
  });

  it('gives the data directory a demo signing secret of its own, readable by its owner only, and says where', async () => {
    const file = path.join(dataDir, 'demo-signing-secret');
    const stat = await fs.stat(file);
    expect(stat.mode & 0o777).toBe(0o600);
    const secret = (await fs.readFile(file, 'utf8')).trim();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(secret).not.toBe('whsec_ZGVtby1zaWduaW5nLXNlY3JldC1ub3QtZm9yLXByb2R1Y3Rpb24=');
    expect(output).toContain(`"signingSecretFile":"${file}"`);
  });

  it('stops cleanly on SIGTERM, and so does the embedded PostgreSQL it started', async () => {
    // Output closes once every process of the group has exited, the service included.
    const closed = new Promise((resolve) => make.stdout!.on('close', resolve));
    process.kill(-make.pid!, 'SIGTERM');
    await closed;
    expect(output).toContain('ehr-gateway stopped');
    expect(output).toContain('embedded PostgreSQL: stopped');
    await expect(fs.access(path.join(dataDir, 'pg', 'postmaster.pid'))).rejects.toThrow();
  });
});
