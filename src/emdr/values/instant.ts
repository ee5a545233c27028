/** An RFC 3339 date-time as JSON Schema's `format: date-time` (ajv-formats) accepts it. */
const RFC3339 = /^(\d{4})-(\d\d)-(\d\d)[T\s](\d\d):(\d\d):(\d\d)(\.\d+)?(?:Z|([+-])(\d\d)(?::?(\d\d))?)$/i;

/**
 * Milliseconds since the Unix epoch of a date-time the spec accepts. Date.parse returns NaN for a
 * leap second (`23:59:60`) and PostgreSQL refuses offsets beyond ±15:59 and the year 0000, all
 * valid RFC 3339; this takes every one of them (a leap second counts as the next second).
 */
export function instantMs(value: string): number {
  const match = RFC3339.exec(value);
  if (!match) throw new Error('not an RFC 3339 date-time');
  const [, year, month, day, hour, minute, second, fraction, sign, offsetHours, offsetMinutes] = match;
  const date = new Date(0);
  // setUTCFullYear, unlike Date.UTC, does not map the years 0-99 to 1900-1999.
  date.setUTCFullYear(Number(year), Number(month) - 1, Number(day));
  date.setUTCHours(Number(hour), Number(minute), Number(second), fraction ? Math.floor(Number(fraction) * 1000) : 0);
  const offsetMs = sign ? (sign === '-' ? -1 : 1) * (Number(offsetHours) * 60 + Number(offsetMinutes ?? 0)) * 60_000 : 0;
  return date.getTime() - offsetMs;
}
