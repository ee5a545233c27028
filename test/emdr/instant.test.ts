import { describe, expect, it } from 'vitest';
import { instantMs } from '../../src/emdr/values/instant.js';

describe('instantMs', () => {
  it('reads every form JSON Schema date-time accepts', () => {
    expect(instantMs('2026-11-20T09:30:00+03:00')).toBe(Date.parse('2026-11-20T06:30:00Z'));
    expect(instantMs('2026-11-20t06:30:00.5z')).toBe(Date.parse('2026-11-20T06:30:00.500Z'));
    expect(instantMs('2026-11-20 09:30:00+0300')).toBe(Date.parse('2026-11-20T06:30:00Z'));
    expect(instantMs('2026-11-20T09:30:00+03')).toBe(Date.parse('2026-11-20T06:30:00Z'));
  });

  it('counts a leap second as the next second', () => {
    expect(instantMs('2016-12-31T23:59:60Z')).toBe(Date.parse('2017-01-01T00:00:00Z'));
  });

  it('takes offsets up to ±23:59 and the years 0000-0099 as written', () => {
    expect(instantMs('0068-09-01T04:05:20.000-23:56')).toBe(Date.parse('0068-09-02T04:01:20Z'));
    expect(new Date(instantMs('0000-01-01T00:00:00Z')).getUTCFullYear()).toBe(0);
  });

  it('refuses what is not a date-time', () => {
    expect(() => instantMs('yesterday')).toThrow('not an RFC 3339 date-time');
  });
});
