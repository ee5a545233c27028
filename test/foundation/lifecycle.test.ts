import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/db/embedded-postgres.js';
import { promisify } from 'node:util';
import { exitOf, runCli, spawnCli, waitForOk } from '../support/cli.js';

const execFileAsync = promisify(execFile);

/** `serve` as an operator runs it: its own process, the embedded PostgreSQL under a fresh DATA_DIR. */
describe('serve on the embedded PostgreSQL', () => {
  let dataDir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ehr-gateway-lifecycle-'));
    env = { DATA_DIR: dataDir, PORT: String(await freePort()), INTERNAL_PORT: String(await freePort()), HOST: '127.0.0.1', DATABASE_URL: '' };
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
  const startServe = async () => {
    const child = spawnCli(['serve'], env);
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    // Ready means migrated on both listeners; a new cluster takes a minute or more on a loaded machine.
    for (const port of [env.PORT, env.INTERNAL_PORT]) {
      await waitForOk(`http://127.0.0.1:${port}/readyz`, 240_000).catch((error: Error) => {
        // Not left running: the next test starts its own serve on the same DATA_DIR and ports.
        child.kill('SIGKILL');
        throw new Error(`${error.message}; serve said: ${output}`);
      });
    }
    return { child, output: () => output };
  };

  it('serves healthz and readyz on both listeners, and the CLI attaches to its database', async () => {
    const serve = await startServe();
    for (const port of [env.PORT, env.INTERNAL_PORT]) {
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({ status: 'ready' });
    }
    const migrate = await runCli(['migrate'], env);
    expect(migrate.code).toBe(0);
    expect(JSON.parse(migrate.stdout)).toEqual({ applied: [] });
    // The CLI attached: the cluster serve started is the one still running.
    expect(isAlive(await postmasterPid())).toBe(true);
    expect((await fetch(`http://127.0.0.1:${env.PORT}/readyz`)).status).toBe(200);

    serve.child.kill('SIGKILL');
    await exitOf(serve.child);
  });

  it('starts cleanly after kill -9, adopting the PostgreSQL left running', async () => {
    const orphan = await postmasterPid();
    expect(isAlive(orphan)).toBe(true);
    const serve = await startServe();
    expect((await fetch(`http://127.0.0.1:${env.PORT}/readyz`)).status).toBe(200);
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
    expect((await fetch(`http://127.0.0.1:${env.INTERNAL_PORT}/readyz`)).status).toBe(200);
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
