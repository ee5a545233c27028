import { describe, expect, it } from 'vitest';
import { birthDateOf, instantOf, isCalendarDate } from '../../src/ehr/dates.js';

describe('birthDateOf', () => {
  it.each([
    // Without a zone: the date part as written, whatever the time.
    ['1990-05-17 00:00:00.000', '1990-05-17'],
    ['1990-05-17T23:59:59', '1990-05-17'],
    ['1990-05-17 00:00:00.', '1990-05-17'],
    ['1990-05-17', '1990-05-17'],
    // With Z or an offset: the calendar date of the instant in Moscow, historic offsets included.
    ['1985-11-01T21:00:00.000Z', '1985-11-02'],
    ['1990-05-16T20:00:00.000Z', '1990-05-17'],
    ['2024-05-16T21:00:00.000Z', '2024-05-17'],
    ['1945-08-15 04:40:32.4570000Z', '1945-08-15'],
    ['1990-01-01 00:00:00Z', '1990-01-01'],
    ['1990-05-17 00:00:00.1Z', '1990-05-17'],
    ['1990-05-16T22:00:00-05:00', '1990-05-17'],
    ['1990-05-17T02:00:00+0500', '1990-05-17'],
    ['0001-01-01T00:00:00Z', '0001-01-01'],
  ])('reads %s as %s in Europe/Moscow', (text, date) => {
    expect(birthDateOf(text, 'Europe/Moscow')).toBe(date);
  });

  it('reads an instant in the configured zone', () => {
    expect(birthDateOf('1985-11-01T21:00:00.000Z', 'UTC')).toBe('1985-11-01');
    expect(birthDateOf('1985-11-02T03:00:00.000Z', 'America/New_York')).toBe('1985-11-01');
  });

  it.each([
    '1990-02-30 00:00:00.000',
    '1990-13-01',
    '0000-05-17 00:00:00.000',
    // In Moscow this instant is still year 0; in UTC, 9999-12-31 23:00 is already year 10000 in Moscow.
    '0001-01-01T00:00:00+14:00',
    '9999-12-31T23:00:00Z',
    '1990-05-17T24:00:00Z',
    '1990-05-17T23:60:00',
    '1990-05-17T00:00:00+25:00',
    '1990-05-17T00:00:00.12345678Z',
    '17.05.1990',
  ])('refuses %s', (text) => {
    expect(birthDateOf(text, 'Europe/Moscow')).toBeUndefined();
  });
});

describe('isCalendarDate and instantOf', () => {
  it('accept calendar dates of years 0001 to 9999 only', () => {
    expect(['2000-02-29', '0005-01-01', '9999-12-31'].map(isCalendarDate)).toEqual([true, true, true]);
    expect(['1990-13-01', '2001-02-29', '0000-01-01', '1990-05-17 00:00:00.000'].map(isCalendarDate)).toEqual([false, false, false, false]);
  });

  it('read authInfo.created as UTC without a zone, and the peer SDK forms', () => {
    expect(instantOf('2025-03-01T09:30:00.000Z')).toBe(Date.parse('2025-03-01T09:30:00.000Z'));
    expect(instantOf('2025-03-01 09:30:00.1234567')).toBe(Date.parse('2025-03-01T09:30:00.123Z'));
    expect(instantOf('2025-03-01T12:30:00+03:00')).toBe(Date.parse('2025-03-01T09:30:00Z'));
    expect(instantOf('2025-02-30T00:00:00Z')).toBeUndefined();
  });
});
