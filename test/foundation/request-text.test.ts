import { describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from '../../src/db/database.js';
import { isJsonMediaType } from '../../src/http/json-body.js';
import { loneSurrogates } from '../../src/validation/unicode.js';

describe('what a request may carry', () => {
  it('takes application/json with no charset or utf-8 only', () => {
    for (const type of ['application/json', 'application/json;charset=UTF-8', 'APPLICATION/JSON ; charset="utf-8"', 'application/json; foo=bar']) expect(isJsonMediaType(type), type).toBe(true);
    for (const type of ['application/json; charset=latin1', 'application/json; charset=utf-16', 'text/plain', 'application/jsonx', 'application/merge-patch+json', '', ';']) expect(isJsonMediaType(type), type).toBe(false);
  });

  it('finds lone surrogates anywhere, keys included, but not surrogate pairs', () => {
    const found = loneSurrogates({ a: 'emoji 😀 fine', b: ['ok', { c: 'x\ud800y' }], 'd\udfff': 1 }, '/requestBody');
    expect(found).toHaveLength(2);
    expect(found).toEqual(
      expect.arrayContaining([
        { path: '/requestBody/b/1/c', message: expect.stringMatching(/lone UTF-16 surrogate/) },
        { path: '/requestBody/d\udfff', message: expect.stringMatching(/member name/) },
      ]),
    );
    expect(loneSurrogates('\udc00\ud800')).toHaveLength(1);
    expect(loneSurrogates({ 'a/b~c': '\ud800' })[0]!.path).toBe('/a~1b~0c');
  });

  it('walks a deeply nested body without overflowing the stack', () => {
    let deep: unknown = '\ud800';
    for (let depth = 0; depth < 100_000; depth += 1) deep = [deep];
    expect(loneSurrogates(deep)).toHaveLength(1);
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
