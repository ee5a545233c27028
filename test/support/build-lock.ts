import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from './cli.js';

/**
 * A lock between test files that run `make run`: its build rewrites dist/ (tsc does not write
 * atomically), which the other file's running service reads (worker threads load their modules as
 * they start). One checkout's files wait for each other; other checkouts keep their own lock.
 */
const lockDir = path.join(os.tmpdir(), `ehr-gateway-make-run-${createHash('sha256').update(repoRoot).digest('hex').slice(0, 12)}.lock`);

export async function acquireMakeRunLock(timeoutMs = 600_000): Promise<() => Promise<void>> {
  const started = Date.now();
  for (;;) {
    try {
      await fs.mkdir(lockDir);
      await fs.writeFile(path.join(lockDir, 'pid'), String(process.pid));
      return () => fs.rm(lockDir, { recursive: true, force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      // A holder that died (a killed test run) leaves its lock behind: take it over.
      const holder = Number(await fs.readFile(path.join(lockDir, 'pid'), 'utf8').catch(() => '0'));
      const alive =
        holder > 0 &&
        (() => {
          try {
            process.kill(holder, 0);
            return true;
          } catch {
            return false;
          }
        })();
      if (!alive && Date.now() - started > 2000) await fs.rm(lockDir, { recursive: true, force: true });
      if (Date.now() - started > timeoutMs) throw new Error(`${lockDir} held for ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}
