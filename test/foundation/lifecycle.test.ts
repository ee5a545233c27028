import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { promisify } from 'node:util';
import { exitOf, runCli } from '../support/cli.js';
import { spawnServe } from '../support/processes.js';

const execFileAsync = promisify(execFile);

/** `serve` as an operator runs it: its own process, the embedded PostgreSQL under a fresh DATA_DIR. */
describe('serve on the embedded PostgreSQL', () => {
  let dataDir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ehr-gateway-lifecycle-'));
    // Each serve binds ports of its own (0: the OS picks them when it binds), read from its start line:
    // nothing here needs the same ports across the restarts, only the same DATA_DIR.
    env = { DATA_DIR: dataDir, PORT: '0', INTERNAL_PORT: '0', HOST: '127.0.0.1', DATABASE_URL: '' };
  });

  afterAll(async () => {
    await fs.rm(dataDir, { recursive: true, force: true });
  });

  const postmasterPid = async () => Number((await fs.readFile(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8')).split('\n')[0]);
  const isAlive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  // Started once migrated, on both listeners; a new cluster takes a minute or more on a loaded machine.
  // One that does not start is killed (the next test starts its own serve on the same DATA_DIR).
  const startServe = () => spawnServe('serve', ['serve'], env, { startTimeoutMs: 240_000 });

  it('serves healthz and readyz on both listeners, and the CLI attaches to its database', async () => {
    const serve = await startServe();
    for (const url of [serve.publicUrl, serve.internalUrl]) {
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      const ready = await fetch(`${url}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({ status: 'ready' });
    }
    const migrate = await runCli(['migrate'], env);
    expect(migrate.code).toBe(0);
    expect(JSON.parse(migrate.stdout)).toEqual({ applied: [] });
    // The CLI attached: the cluster serve started is the one still running.
    expect(isAlive(await postmasterPid())).toBe(true);
    expect((await fetch(`${serve.publicUrl}/readyz`)).status).toBe(200);

    serve.child.kill('SIGKILL');
    await exitOf(serve.child);
  });

  it('starts cleanly after kill -9, adopting the PostgreSQL left running', async () => {
    const orphan = await postmasterPid();
    expect(isAlive(orphan)).toBe(true);
    const serve = await startServe();
    expect((await fetch(`${serve.publicUrl}/readyz`)).status).toBe(200);
    expect(serve.output()).toContain('adopting a cluster left running by a stopped process');
    serve.child.kill('SIGKILL');
    await exitOf(serve.child);
  });

  it('starts cleanly when the PostgreSQL was killed too and left a stale postmaster.pid, and stops cleanly on a repeated SIGTERM', async () => {
    const pid = await postmasterPid();
    process.kill(pid, 'SIGKILL');
    while (isAlive(pid)) await new Promise((resolve) => setTimeout(resolve, 50));
    // The pid file stays behind; its children may still hold shared memory for a moment.
    await expect(fs.access(path.join(dataDir, 'pg', 'postmaster.pid'))).resolves.toBeUndefined();
    const serve = await startServe();
    expect((await fetch(`${serve.internalUrl}/readyz`)).status).toBe(200);
    expect(await postmasterPid()).not.toBe(pid);

    // Twice at once, as make or a terminal passes one stop request on to the whole process group.
    serve.child.kill('SIGTERM');
    serve.child.kill('SIGTERM');
    expect(await exitOf(serve.child)).toBe(0);
    expect(serve.output()).toContain('ehr-gateway stopped');
    // serve owned the cluster, so a clean shutdown stops it.
    await expect(fs.access(path.join(dataDir, 'pg', 'postmaster.pid'))).rejects.toThrow();
  });

  it('says in one line why the cluster cannot start when its directory is read-only, not what its old log says', async () => {
    // The cluster's server.log ends with the clean shutdown of the test before.
    expect(await fs.readFile(path.join(dataDir, 'pg', 'server.log'), 'utf8')).toMatch(/shut down/);
    await execFileAsync('chmod', ['-R', 'a-w', path.join(dataDir, 'pg')]);
    try {
      const result = await runCli(['serve'], env);
      expect(result.code).toBe(1);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).toMatch(/^ehr-gateway: embedded PostgreSQL did not start under .*Permission denied/);
      expect(result.stderr).not.toMatch(/shut down|shutting down/);
    } finally {
      await execFileAsync('chmod', ['-R', 'u+w', path.join(dataDir, 'pg')]);
    }
  });
});
