import { describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from '../../src/db/database.js';
import { isJsonMediaType } from '../../src/http/json-body.js';
import { hasLoneSurrogate, textPaths, unstorableTextPaths } from '../../src/validation/text.js';

describe('what a request may carry', () => {
  it('takes application/json with no charset or utf-8 only', () => {
    for (const type of ['application/json', 'application/json;charset=UTF-8', 'APPLICATION/JSON ; charset="utf-8"', 'application/json; foo=bar'])
      expect(isJsonMediaType(type), type).toBe(true);
    for (const type of [
      'application/json; charset=latin1',
      'application/json; charset=utf-16',
      'text/plain',
      'application/jsonx',
      'application/merge-patch+json',
      '',
      ';',
    ])
      expect(isJsonMediaType(type), type).toBe(false);
  });

  it('finds lone surrogates anywhere, but not surrogate pairs', () => {
    expect(textPaths({ a: 'emoji 😀 fine', b: ['ok', { 'c/d': 'x\ud800y' }], e: '\udc00' }, hasLoneSurrogate)).toEqual(['/b/1/c~1d', '/e']);
    expect(textPaths('\udc00\ud800', hasLoneSurrogate)).toEqual(['/']);
    expect(unstorableTextPaths({ a: 'nul \u0000', b: 'ok' })).toEqual(['/a']);
  });

  it('walks a deeply nested body in linear time, without overflowing the stack', () => {
    let deep: unknown = '\ud800';
    for (let depth = 0; depth < 200_000; depth += 1) deep = [deep];
    // A pointer built for every node would be quadratic: tens of gigabytes of strings at this depth.
    expect(textPaths(deep, hasLoneSurrogate)).toHaveLength(1);
  });

  it('tells an unreachable database from a wrong request', () => {
    expect(isDatabaseUnavailable(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }))).toBe(true);
    expect(isDatabaseUnavailable(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }))).toBe(true);
    expect(isDatabaseUnavailable(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isDatabaseUnavailable(Object.assign(new Error('Knex: Timeout acquiring a connection.'), { name: 'KnexTimeoutError' }))).toBe(true);
    expect(isDatabaseUnavailable(Object.assign(new Error('duplicate key value violates unique constraint'), { code: '23505' }))).toBe(false);
    expect(isDatabaseUnavailable(new Error('invalid input syntax for type json'))).toBe(false);
    expect(isDatabaseUnavailable(undefined)).toBe(false);
  });
});
