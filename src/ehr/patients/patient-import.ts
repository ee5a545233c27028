import type { Gender } from '../../../generated/ehr-types.js';
import { isStorableText, UNSTORABLE_TEXT } from '../../validation/text.js';
import { isCalendarDate } from '../dates.js';
import { toE164, type PatientRecord } from './patients.js';

/** Columns of a CSV import (header row) and members of a JSON import. */
export const IMPORT_FIELDS = ['id', 'surname', 'name', 'middleName', 'birthDate', 'gender', 'phone', 'email', 'snils', 'medcardNumber', 'active'] as const;
const REQUIRED_FIELDS = ['id', 'surname', 'name', 'birthDate', 'gender'];

/** One rejected row: its 1-based position among the records and why; never the values themselves. */
export interface RejectedRow {
  row: number;
  field: string;
  reason: string;
}

/** RFC 4180 CSV: quoted fields, doubled quotes, CRLF or LF; returns records of text cells. */
export function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let cell = '';
  let quoted = false;
  for (let index = 0; index < text.length; index += 1) {
    const char = text[index]!;
    if (quoted) {
      if (char === '"' && text[index + 1] === '"') {
        cell += '"';
        index += 1;
      } else if (char === '"') quoted = false;
      else cell += char;
    } else if (char === '"' && cell === '') quoted = true;
    else if (char === ',') {
      record.push(cell);
      cell = '';
    } else if (char === '\n' || char === '\r') {
      if (char === '\r' && text[index + 1] === '\n') index += 1;
      record.push(cell);
      records.push(record);
      record = [];
      cell = '';
    } else cell += char;
  }
  if (cell !== '' || record.length > 0) records.push([...record, cell]);
  return records.filter((cells) => cells.some((value) => value.trim() !== ''));
}

/** The records of a JSON array or a CSV file with a header row, as loose objects. */
export function readImportRecords(text: string): Array<Record<string, unknown>> {
  const content = text.replace(/^\uFEFF/, '');
  if (content.trimStart().startsWith('[')) {
    const parsed = JSON.parse(content) as unknown;
    if (!Array.isArray(parsed)) throw new Error('a JSON import must be an array of patients');
    return parsed.map((item) => (item && typeof item === 'object' && !Array.isArray(item) ? (item as Record<string, unknown>) : { __notAnObject: true }));
  }
  const [header, ...rows] = parseCsv(content);
  if (!header) return [];
  const columns = header.map((column) => column.trim());
  const unknown = columns.filter((column) => !(IMPORT_FIELDS as readonly string[]).includes(column));
  if (unknown.length > 0) throw new Error(`unknown CSV columns: ${unknown.join(', ')} (expected ${IMPORT_FIELDS.join(', ')})`);
  // Empty CSV cells mean "absent", as a missing JSON member does.
  return rows.map((cells) => Object.fromEntries(columns.map((column, index) => [column, cells[index]?.trim() ?? '']).filter(([, value]) => value !== '')));
}

const text = (value: unknown): string | undefined =>
  typeof value === 'string' && value.trim() !== '' ? value.trim() : typeof value === 'number' ? String(value) : undefined;

/** Validates every record; returns the patients, or every problem found (row numbers 1-based). */
export function validateImportRecords(records: ReadonlyArray<Record<string, unknown>>): { patients: PatientRecord[]; rejected: RejectedRow[] } {
  const patients: PatientRecord[] = [];
  const rejected: RejectedRow[] = [];
  const seenIds = new Map<string, number>();
  records.forEach((record, index) => {
    const row = index + 1;
    const problems: RejectedRow[] = [];
    const reject = (field: string, reason: string) => problems.push({ row, field, reason });
    if (record.__notAnObject) {
      rejected.push({ row, field: '(row)', reason: 'is not an object' });
      return;
    }
    for (const [field, value] of Object.entries(record)) {
      if (!(IMPORT_FIELDS as readonly string[]).includes(field)) reject(field, 'is not a known field');
      else if (typeof value === 'string' && !isStorableText(value)) reject(field, UNSTORABLE_TEXT);
    }
    for (const field of REQUIRED_FIELDS) if (text(record[field]) === undefined) reject(field, 'is required');

    const id = text(record.id);
    if (id !== undefined) {
      if (id.length > 64) reject('id', 'is longer than 64 characters');
      const first = seenIds.get(id);
      if (first !== undefined) reject('id', `repeats the id of row ${first}`);
      else seenIds.set(id, row);
    }
    const birthDate = text(record.birthDate);
    if (birthDate !== undefined && !isCalendarDate(birthDate)) reject('birthDate', 'is not a date YYYY-MM-DD');
    const gender = Number(text(record.gender));
    if (text(record.gender) !== undefined && ![1, 2, 3, 4].includes(gender)) reject('gender', 'is not 1, 2, 3 or 4');
    const rawPhone = text(record.phone);
    const phone = rawPhone === undefined ? undefined : toE164(rawPhone);
    if (rawPhone !== undefined && phone === undefined) reject('phone', 'is not a phone number');
    const email = text(record.email);
    if (email !== undefined && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) reject('email', 'is not an email address');
    const snilsDigits = text(record.snils)?.replace(/[\s-]/g, '');
    if (snilsDigits !== undefined && !/^\d{11}$/.test(snilsDigits)) reject('snils', 'is not 11 digits');
    const activeText = text(record.active) ?? (typeof record.active === 'boolean' ? String(record.active) : undefined);
    if (activeText !== undefined && !['true', 'false'].includes(activeText)) reject('active', 'is not true or false');

    if (problems.length > 0) {
      rejected.push(...problems);
      return;
    }
    patients.push({
      id: id!,
      surname: text(record.surname)!,
      name: text(record.name)!,
      middleName: text(record.middleName),
      birthDate: birthDate!,
      gender: gender as Gender,
      phone,
      email,
      snils: snilsDigits && `${snilsDigits.slice(0, 3)}-${snilsDigits.slice(3, 6)}-${snilsDigits.slice(6, 9)} ${snilsDigits.slice(9)}`,
      medcardNumber: text(record.medcardNumber),
      active: activeText !== 'false',
    });
  });
  return { patients, rejected };
}
