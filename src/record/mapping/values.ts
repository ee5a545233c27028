import type { Service } from '../../../generated/ehr-types.js';
import { aliasOf } from '../fhir/references.ts';
import type { Ref } from './fragments.ts';

/** Small readers of FHIR R4 datatypes, shared by the mapping of each resource type. */

export type Json = Record<string, unknown>;

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function list(value: unknown): Json[] {
  return Array.isArray(value) ? value.filter(isObject) : [];
}

export function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

export function codings(concept: unknown): Json[] {
  return isObject(concept) ? list(concept.coding) : [];
}

/** A CodeableConcept as one line: its text, else the first coding's display, else its code. */
export function conceptText(concept: unknown): string {
  if (!isObject(concept)) return '';
  if (typeof concept.text === 'string' && concept.text !== '') return concept.text;
  const coding = codings(concept).find((candidate) => typeof candidate.display === 'string' || typeof candidate.code === 'string');
  return coding ? text(coding.display) || text(coding.code) : '';
}

/** The first coding's code (optionally of one of `systems`). */
export function conceptCode(concept: unknown, systems?: readonly string[]): Json | undefined {
  return codings(concept).find((coding) => typeof coding.code === 'string' && (!systems || systems.includes(text(coding.system))));
}

export function hasCode(concepts: unknown, codes: readonly string[]): boolean {
  const all = Array.isArray(concepts) ? concepts : [concepts];
  return all.some((concept) => codings(concept).some((coding) => codes.includes(text(coding.code).toLowerCase())));
}

/**
 * A FHIR date, dateTime or instant as an ISO instant with milliseconds and Z. A date without time
 * is its midnight in UTC; a partial date (year, year-month) its first day. Undefined when absent
 * or not a date.
 */
export function instant(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const match = /^(\d{4})(?:-(\d{2})(?:-(\d{2})(T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2}))?)?)?$/.exec(value);
  if (!match) return undefined;
  const [, year, month = '01', day = '01', time] = match;
  const millis = Date.parse(`${year}-${month}-${day}${time ?? 'T00:00:00Z'}`);
  return Number.isFinite(millis) ? new Date(millis).toISOString() : undefined;
}

/** A Period (or a single instant) as its start and end instants, each possibly absent. */
export function periodOf(value: unknown): { start?: string; end?: string } {
  if (!isObject(value)) return {};
  const start = instant(value.start);
  const end = instant(value.end);
  return { ...(start ? { start } : {}), ...(end ? { end } : {}) };
}

/** A FHIR Duration or Quantity of time in minutes (min, h, d, wk, mo, a); undefined when it is not one. */
export function minutesOf(value: unknown): number | undefined {
  if (!isObject(value) || typeof value.value !== 'number') return undefined;
  const unit = text(value.code) || text(value.unit);
  const perUnit: Record<string, number> = { s: 1 / 60, min: 1, h: 60, d: 1440, wk: 10080, mo: 43200, a: 525600 };
  const factor = perUnit[unit] ?? perUnit[unit.replace(/s$/, '')];
  return factor === undefined ? undefined : Math.round(value.value * factor);
}

export function minutesBetween(start: string | undefined, end: string | undefined): number | undefined {
  if (!start || !end) return undefined;
  const minutes = Math.round((Date.parse(end) - Date.parse(start)) / 60_000);
  return minutes >= 0 ? minutes : undefined;
}

export function addMinutes(at: string, minutes: number): string {
  return new Date(Date.parse(at) + minutes * 60_000).toISOString();
}

/** A HumanName list's preferred name: the official one, else the first; given[0] is the name, the rest the middle name (a patronymic). */
export function humanName(names: unknown): { surname: string; name: string; middleName: string } {
  const all = list(names);
  const chosen = all.find((name) => name.use === 'official') ?? all[0];
  if (!chosen) return { surname: '', name: '', middleName: '' };
  const given = Array.isArray(chosen.given) ? chosen.given.filter((part): part is string => typeof part === 'string') : [];
  return { surname: text(chosen.family), name: given[0] ?? '', middleName: given.slice(1).join(' ') };
}

/** An Address as one line: its text, else its lines, city and country. */
export function addressText(address: unknown): string {
  const first = Array.isArray(address) ? list(address)[0] : isObject(address) ? address : undefined;
  if (!first) return '';
  if (typeof first.text === 'string' && first.text !== '') return first.text;
  const lines = Array.isArray(first.line) ? first.line.filter((part): part is string => typeof part === 'string') : [];
  return [...lines, text(first.city), text(first.state), text(first.country)].filter(Boolean).join(', ');
}

/** The OID of an Identifier list: a value urn:oid:… (system urn:ietf:rfc:3986), or the value of an identifier whose system is urn:oid:1.2.643.5.1.13.13.12.2… (the Russian ФРМО register). */
export function oidOf(identifiers: unknown): string | undefined {
  for (const identifier of list(identifiers)) {
    const value = text(identifier.value);
    if (/^urn:oid:[0-2](\.\d+)+$/.test(value)) return value.slice('urn:oid:'.length);
    if (/^urn:oid:1\.2\.643\.5\.1\.13\.13\.99\.2\.114$/.test(text(identifier.system)) && /^[0-2](\.\d+)+$/.test(value)) return value;
  }
  return undefined;
}

/** A Reference kept for the assembly: its alias and, for a fallback name, its display. */
export function ref(element: unknown): Ref | undefined {
  const alias = aliasOf(element);
  if (!alias) return undefined;
  const display = isObject(element) ? text(element.display) : '';
  return display ? { alias, display } : { alias };
}

/** A CodeableConcept as the SDK's Service: its first code and its text. */
export function codeService(concept: unknown): Service {
  const coding = conceptCode(concept);
  return { id: text(coding?.code), name: conceptText(concept) };
}

/** A resource marked entered-in-error is stored (a later import may correct it) but never shown. */
export const ENTERED_IN_ERROR = 'entered-in-error';

/** A MedicationRequest's or ServiceRequest's status as a recommendation's: 0 recommended, 2 cancelled or stopped, 3 completed. */
export const REQUEST_STATUS: Record<string, 0 | 2 | 3> = { cancelled: 2, stopped: 2, revoked: 2, completed: 3 };
