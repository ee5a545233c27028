import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';

describe('ehr-gateway CLI', () => {
  it.each([[['--help']], [['serve', '--help']], [['migrate', '--help']]])('answers %j with usage and exit code 0', async (args) => {
    const result = await runCli(args);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/Usage: ehr-gateway/);
  });

  it('documents the environment in serve --help', async () => {
    const result = await runCli(['serve', '--help']);
    for (const variable of ['PORT', 'INTERNAL_PORT', 'DATABASE_URL', 'DATA_DIR', 'INTERNAL_USERS', 'EXCHANGE_TOKEN_TTL', 'CALLBACK_RETRY_SCHEDULE', 'AUTH_TTL_UNIT']) {
      expect(result.stdout).toContain(variable);
    }
  });

  it.each([
    [['frobnicate'], /unknown command/],
    [['serve', '--only', 'everything'], /--only/],
    [['serve', '--colour'], /unknown option/],
    [['clients'], /name a subcommand \((?=[^)]*\badd\b)(?=[^)]*\bdisable\b)(?=[^)]*\brotate-signing-secret\b)/],
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
