import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { repoRoot, runCli } from '../support/cli.js';

describe('ehr-gateway CLI', () => {
  it.each([[['--help']], [['serve', '--help']], [['migrate', '--help']]])('answers %j with usage and exit code 0', async (args) => {
    const result = await runCli(args);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/Usage: ehr-gateway/);
  });

  it('documents in serve --help every variable the configuration loader reads, LOG_LEVEL among them', async () => {
    const result = await runCli(['serve', '--help']);
    const source = await fs.readFile(path.join(repoRoot, 'src/config/config.ts'), 'utf8');
    const loaderReads = new Set([...source.matchAll(/\benv\.([A-Z_]+)|\(env, '([A-Z_]+)'/g)].map((match) => match[1] ?? match[2]!));
    expect(loaderReads).toContain('LOG_LEVEL');
    const listed = new Set([...result.stdout.matchAll(/^ {2}([A-Z_]+) /gm)].map((match) => match[1]!));
    // USER_SIGN_KEY is DATA_KEY's old name, named under DATA_KEY.
    for (const variable of loaderReads) if (variable !== 'USER_SIGN_KEY') expect(listed, variable).toContain(variable);
  });

  it('shows each default of audit --help once, and --since as a duration', async () => {
    const result = await runCli(['audit', '--help']);
    expect(result.code).toBe(0);
    const help = result.stdout.replace(/\s+/g, ' ');
    expect(help).toContain('--since <duration> rows of this last period (e.g. 15m, 1h, 7d) (default: 24h)');
    expect(help).not.toContain('86400000');
    expect(help.match(/10000/g)).toHaveLength(1);
  });

  it('ends quietly when the reader of its output stops early (a pipe to head)', async () => {
    const result = await new Promise<{ status: number; stderr: string }>((resolve) => {
      const child = spawn(
        'bash',
        ['-c', `set -o pipefail; node --import tsx src/main.ts serve --help | head -1 >/dev/null; echo "status \${PIPESTATUS[0]}" >&2`],
        { cwd: repoRoot },
      );
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.on('close', () => resolve({ status: Number(/status (\d+)/.exec(stderr)?.[1]), stderr }));
    });
    expect(result.stderr).not.toContain('EPIPE');
    expect(result.status).toBe(0);
  });

  it.each([
    [['frobnicate'], /unknown command/],
    [['serve', '--only', 'everything'], /--only/],
    [['serve', '--colour'], /unknown option/],
    [['clients'], /name a subcommand \((?=[^)]*\badd\b)(?=[^)]*\bupdate\b)(?=[^)]*\bdisable\b)(?=[^)]*\brotate-signing-secret\b)/],
  ])('rejects %j with one line and exit code 2', async (args, message) => {
    const result = await runCli(args);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(message);
  });

  it('fails fast with one line naming DATABASE_URL when it is malformed', async () => {
    const result = await runCli(['serve'], { DATABASE_URL: 'postgres//nowhere' }, 15_000);
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toMatch(/^ehr-gateway: DATABASE_URL: /);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('fails fast with one line naming the variable of a bad duration', async () => {
    const result = await runCli(['serve'], { EXCHANGE_TOKEN_TTL: '10 minutes' }, 15_000);
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe('ehr-gateway: EXCHANGE_TOKEN_TTL: "10 minutes" is not a duration (use e.g. 500ms, 5s, 10m, 2h, 1d)');
  });

  it('fails with one line, without the password, when DATABASE_URL points at no server', async () => {
    const result = await runCli(['serve'], { DATABASE_URL: 'postgres://ehr:hunter2@127.0.0.1:1/ehr', PORT: '0', INTERNAL_PORT: '0' }, 30_000);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^ehr-gateway: database unreachable: ECONNREFUSED/m);
    expect(result.stderr).not.toContain('hunter2');
  });
});
