import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { outcomeOf, repoRoot, type CliResult } from './cli.js';

const build = path.join(repoRoot, '.clients/java-partner');

/** The Java partner program of test/partner/java as `make clients` builds it (.clients/java-partner), run to completion. */
export async function runJavaPartner(env: Record<string, string>, timeoutMs: number): Promise<CliResult> {
  const classpathFile = path.join(build, 'classpath.txt');
  if (!fs.existsSync(classpathFile)) throw new Error(`${classpathFile} is missing: run \`make clients\` (make test does)`);
  const classpath = [path.join(build, 'classes'), fs.readFileSync(classpathFile, 'utf8').trim()].join(path.delimiter);
  const child = spawn('java', ['-cp', classpath, 'ehrgateway.partner.ClinicPartner'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  return outcomeOf(child, timeoutMs);
}
