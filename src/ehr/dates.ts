/**
 * Dates of interface A: `YYYY-MM-DD`, optionally followed by `T` or a space, `HH:MM:SS`, 0 to 7
 * fractional digits and `Z` or an offset (the original's form and the peer SDK's variants).
 * Calendar dates are those of years 0001 to 9999: what PostgreSQL's date type and the
 * patient record's `YYYY-MM-DD` both hold (PostgreSQL has no year 0000).
 */
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{0,7}))?(Z|[+-]\d{2}:?\d{2})?)?$/;
const OFFSET = /^([+-])(\d{2}):?(\d{2})$/;

interface DateTime {
  /** The date part as written: YYYY-MM-DD. */
  date: string;
  /** Milliseconds since the epoch, reading the date-time as UTC when it has no zone. */
  utcMs: number;
  /** Whether the text carried `Z` or an offset, i.e. names an instant. */
  zoned: boolean;
}

/** Midnight UTC of a calendar date, or undefined when there is no such date in years 0001-9999. */
function utcMidnight(year: number, month: number, day: number): number | undefined {
  const date = new Date(0);
  // setUTCFullYear, unlike Date.UTC, reads years 0-99 as written.
  date.setUTCFullYear(year, month - 1, day);
  const exists = date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
  return exists && year >= 1 && year <= 9999 ? date.getTime() : undefined;
}

/** Offset east of UTC in milliseconds; undefined for hours past 23 or minutes past 59. */
function offsetMs(zone: string): number | undefined {
  if (zone === 'Z') return 0;
  const [, sign, hours, minutes] = OFFSET.exec(zone)!;
  if (Number(hours) > 23 || Number(minutes) > 59) return undefined;
  return (sign === '-' ? -1 : 1) * (Number(hours) * 60 + Number(minutes)) * 60_000;
}

function parseDateTime(text: string): DateTime | undefined {
  const match = DATE_TIME.exec(text);
  if (!match) return undefined;
  const [, year, month, day, hours = '00', minutes = '00', seconds = '00', fraction = '', zone] = match;
  const midnight = utcMidnight(Number(year), Number(month), Number(day));
  // Date.parse would roll 24:00 or 23:60 over into the next day; these are not times.
  if (midnight === undefined || Number(hours) > 23 || Number(minutes) > 59 || Number(seconds) > 59) return undefined;
  const offset = zone === undefined ? 0 : offsetMs(zone);
  if (offset === undefined) return undefined;
  const timeMs = ((Number(hours) * 60 + Number(minutes)) * 60 + Number(seconds)) * 1000 + Number(fraction.padEnd(3, '0').slice(0, 3));
  return { date: `${year}-${month}-${day}`, utcMs: midnight + timeMs - offset, zoned: zone !== undefined };
}

/** Whether `text` is exactly `YYYY-MM-DD` of a calendar date. */
export function isCalendarDate(text: string): boolean {
  return /^\d{4}-\d{2}-\d{2}$/.test(text) && parseDateTime(text) !== undefined;
}

/** An input date-time (e.g. authInfo.created) as epoch milliseconds, UTC when it has no zone; undefined when it is none. */
export function instantOf(text: string): number | undefined {
  return parseDateTime(text)?.utcMs;
}

const offsetFormatters = new Map<string, Intl.DateTimeFormat>();

/** The offset of `timeZone` at an instant, in milliseconds (historic offsets included, e.g. Moscow's +04:00 summers). */
function zoneOffsetMs(timeZone: string, utcMs: number): number {
  let formatter = offsetFormatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', { timeZone, timeZoneName: 'longOffset' });
    offsetFormatters.set(timeZone, formatter);
  }
  // "GMT", "GMT+03:00", "GMT+02:30:17" (local mean time before standard zones).
  const name = formatter.formatToParts(utcMs).find((part) => part.type === 'timeZoneName')!.value;
  const [, sign = '+', hours = '0', minutes = '0', seconds = '0'] = /^GMT(?:([+-])(\d{2}):(\d{2})(?::(\d{2}))?)?$/.exec(name)!;
  return (sign === '-' ? -1 : 1) * ((Number(hours) * 60 + Number(minutes)) * 60 + Number(seconds)) * 1000;
}

/**
 * The birth date (YYYY-MM-DD) that patientProperties.date stands for. Without a zone: its date
 * part, as written. With `Z` or an offset it is an instant: its calendar date in `timeZone`, so
 * that a JavaScript Date made at local midnight there (sent as the previous day's 21:00Z from
 * Moscow) gives the day it was made for. Undefined when the text is no date-time or the birth
 * date falls outside years 0001-9999.
 */
export function birthDateOf(text: string, timeZone: string): string | undefined {
  const parsed = parseDateTime(text);
  if (!parsed?.zoned) return parsed?.date;
  // Shifted by the zone's offset, the UTC fields of the instant are the local calendar date
  // (proleptic Gregorian, as PostgreSQL counts).
  const local = new Date(parsed.utcMs + zoneOffsetMs(timeZone, parsed.utcMs));
  const year = local.getUTCFullYear();
  if (year < 1 || year > 9999) return undefined;
  return `${String(year).padStart(4, '0')}-${String(local.getUTCMonth() + 1).padStart(2, '0')}-${String(local.getUTCDate()).padStart(2, '0')}`;
}
