import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONFIG_VARIABLES, loadConfig } from '../../src/config/config.js';
import { packageRoot } from '../../src/config/paths.js';
import { ERROR_CODES } from '../../src/emdr/errors/codes.js';

/**
 * docs/security.md tells operators what to set and cites the code for every claim: a variable,
 * constant or file it names that does not exist, or a default that is not the loader's, would send
 * an operator the wrong way. These checks keep those names true; the prose is for review.
 */

const document = readFileSync(path.join(packageRoot, 'docs', 'security.md'), 'utf8');
/** Everything written in backticks. */
const quoted = [...document.matchAll(/`([^`\n]+)`/g)].map((match) => match[1]!);

/** Names of the variables the loader reads that are not in the table: the old name of DATA_KEY. */
const OLD_NAMES = ['USER_SIGN_KEY'];

function sourceFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(directory, entry.name);
    return entry.isDirectory() ? sourceFiles(full) : entry.name.endsWith('.ts') ? [full] : [];
  });
}

const declaredConstants = new Set(
  sourceFiles(path.join(packageRoot, 'src')).flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(/\bconst\s+([A-Z][A-Z0-9_]*)\b/g)].map((match) => match[1]!),
  ),
);

const OPERATOR_TABLE_HEADER = '| Variable | Default | In production |';

/** The rows of the operator table of section 5 (`| `NAME` | default | … |`), up to the blank line that ends it. */
function operatorTable(): Array<{ name: string; fallback: string }> {
  const start = document.indexOf(OPERATOR_TABLE_HEADER);
  expect(start).toBeGreaterThan(document.indexOf('## 5. '));
  const table = document.slice(start, document.indexOf('\n\n', start));
  return [...table.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \| ([^|]+) \|/gm)].map((match) => ({ name: match[1]!, fallback: match[2]!.trim() }));
}

describe('docs/security.md', () => {
  it('names only configuration variables, constants and error codes that exist', () => {
    const variables = new Set([...CONFIG_VARIABLES.map((variable) => variable.name), ...OLD_NAMES]);
    // Capitals with an underscore: a variable, a constant of src/, or an error code on the wire.
    const names = [...new Set(quoted.filter((text) => /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$/.test(text)))];
    expect(names.length).toBeGreaterThan(20);
    const unknown = names.filter((name) => !variables.has(name) && !declaredConstants.has(name) && !(name in ERROR_CODES));
    expect(unknown).toEqual([]);
  });

  it("gives the loader's defaults in the operator table, for variables the loader has", () => {
    const rows = operatorTable();
    expect(rows.map((row) => row.name)).toEqual(
      expect.arrayContaining([
        'DATA_KEY',
        'INTERNAL_USERS',
        'INTERNAL_HOST',
        'DATABASE_URL',
        'BODY_LIMIT',
        'RATE_LIMIT',
        'BYTE_QUOTA',
        'MAX_CONNECTIONS',
        'RETENTION',
      ]),
    );
    for (const row of rows) {
      const variable = CONFIG_VARIABLES.find((candidate) => candidate.name === row.name);
      expect(variable, row.name).toBeDefined();
      // A default that is a value is the same value; an absent one ("(unset)", "(none)") is written as absent.
      if (variable!.fallback.startsWith('(')) expect(row.fallback, row.name).toMatch(/^\(/);
      else expect(row.fallback, row.name).toBe(`\`${variable!.fallback.replace(/ \(.*\)$/, '')}\``);
    }
  });

  it('still reads USER_SIGN_KEY as the old name of DATA_KEY, as it says', () => {
    const key = 'ab'.repeat(32);
    expect(loadConfig({ USER_SIGN_KEY: key }).dataKey).toEqual(Buffer.from(key, 'hex'));
    expect(loadConfig({ DATA_KEY: key }).dataKey).toEqual(Buffer.from(key, 'hex'));
  });

  it('cites only files and folders that exist', () => {
    const cited = [
      ...new Set(
        quoted.filter((text) => /^(?:src|specs|test|examples|scripts|tools|docs)\/[\w./-]*$/.test(text) || text === 'README.md' || text === 'Makefile'),
      ),
    ];
    expect(cited.length).toBeGreaterThan(20);
    expect(cited.filter((file) => !existsSync(path.join(packageRoot, file)))).toEqual([]);
  });
});
