import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { freePort } from '../../src/db/embedded-postgres.js';
import { exitOf, repoRoot, spawnCli, waitForOk } from './cli.js';
import { createTestDatabase } from './database.js';
import { LOOPBACK_CALLBACKS } from './service.js';

export interface ServeProcess {
  child: ChildProcess;
  env: Record<string, string>;
  publicUrl: string;
  internalUrl: string;
  output(): string;
  stop(): Promise<void>;
}

/** `ehr-gateway serve` as its own process, on a fresh test database and free loopback ports. */
export async function startServeProcess(extraEnv: Record<string, string> = {}, args: string[] = ['serve']): Promise<ServeProcess> {
  const env: Record<string, string> = {
    DATABASE_URL: await createTestDatabase(),
    DATA_KEY: randomBytes(32).toString('hex'),
    PORT: String(await freePort()),
    INTERNAL_PORT: String(await freePort()),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    ...LOOPBACK_CALLBACKS,
    ...extraEnv,
  };
  const child = spawnCli(args, env);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const publicUrl = `http://127.0.0.1:${env.PORT}`;
  const internalUrl = `http://127.0.0.1:${env.INTERNAL_PORT}`;
  await waitForOk(`${publicUrl}/readyz`).catch((error: Error) => {
    child.kill('SIGKILL');
    throw new Error(`${error.message}; serve said: ${output}`);
  });
  return {
    child,
    env,
    publicUrl,
    internalUrl,
    output: () => output,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exitOf(child);
    },
  };
}

/** A TypeScript program of the repository (an example) as its own process. */
export function spawnTsProgram(file: string, args: readonly string[], env: Record<string, string> = {}): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', path.join(repoRoot, file), ...args], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}
