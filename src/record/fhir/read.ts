import { createReadStream } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import path from 'node:path';

/**
 * Reading FHIR R4 files as a stream of entries, memory bounded whatever the file size: Bulk Data
 * NDJSON one line at a time, and Bundle JSON one `entry` element at a time (a byte scanner finds
 * the elements of the top-level `entry` array; each is parsed alone).
 */

export interface FhirEntry {
  /** The parsed resource, or undefined when the entry is no resource (see problem). */
  resource: Record<string, unknown> | undefined;
  /** FILE:LINE of an NDJSON line, FILE#entry[N] (line L) of a Bundle entry. */
  origin: string;
  /** The Bundle entry's fullUrl (references urn:uuid:… name it). */
  fullUrl?: string;
  /** Why the entry cannot be read, when it cannot. */
  problem?: string;
  /** The resource type of an NDJSON line left unparsed because the reader's caller does not want it. */
  skippedType?: string;
}

/** Which resource types the caller wants parsed (NDJSON lines of other types are only counted). */
export type WantedType = (type: string) => boolean;

/** A file the reader refuses as a whole (not NDJSON, not a Bundle, an unknown Bundle type). */
export class UnreadableFile extends Error {}

/** The Bundle types an import takes: a МИС's export, a transaction or batch it would post, a search result. */
export const BUNDLE_TYPES = new Set(['transaction', 'batch', 'collection', 'searchset']);

const CHUNK_BYTES = 1024 * 1024;
/** One resource larger than this is refused rather than held (a Synthea patient's largest is a few hundred KiB). */
export const MAX_ENTRY_BYTES = 16 * 1024 * 1024;

/** Entries of an NDJSON file (.ndjson) or a Bundle (anything else, told apart by its first character). */
export async function* readFhirFile(file: string, wanted: WantedType = () => true): AsyncGenerator<FhirEntry> {
  const name = path.basename(file);
  if (/\.ndjson$/i.test(file)) yield* readNdjson(file, name, wanted);
  else yield* readBundle(file, name);
}

/** A line's resourceType when it comes first, as Bulk Data exports write it. */
const LEADING_TYPE = /^\s*\{\s*"resourceType"\s*:\s*"([A-Za-z]{1,64})"/;

async function* readNdjson(file: string, name: string, wanted: WantedType): AsyncGenerator<FhirEntry> {
  // Each chunk is decoded once (StringDecoder keeps a character split between chunks) and cut into
  // lines as text: no buffer per line, whose native allocations would grow the resident memory.
  const decoder = new StringDecoder('utf8');
  let line = 0;
  let carry = '';
  let oversized = false;
  const lineOf = (text: string, tooLong: boolean): FhirEntry | undefined => {
    line += 1;
    const origin = `${name}:${line}`;
    if (tooLong) return { resource: undefined, origin, problem: `line longer than ${MAX_ENTRY_BYTES} bytes` };
    const trimmed = text.trim();
    if (trimmed === '') return undefined;
    // A line of a type nobody wants is counted, not parsed (Claims and ExplanationOfBenefits are a third of a Synthea export).
    const type = LEADING_TYPE.exec(trimmed.slice(0, 128))?.[1];
    if (type !== undefined && !wanted(type)) return { resource: undefined, origin, skippedType: type };
    return parseEntry(trimmed, origin);
  };
  for await (const chunk of createReadStream(file, { highWaterMark: CHUNK_BYTES }) as AsyncIterable<Buffer>) {
    const text = decoder.write(chunk);
    let start = 0;
    for (let newline = text.indexOf('\n'); newline >= 0; newline = text.indexOf('\n', start)) {
      const whole = oversized ? '' : carry + text.slice(start, newline);
      const entry = lineOf(whole, oversized || whole.length > MAX_ENTRY_BYTES);
      carry = '';
      oversized = false;
      if (entry) yield entry;
      start = newline + 1;
    }
    if (!oversized) carry += text.slice(start);
    // A line is measured in UTF-16 units here: at most twice its bytes, never less than a third.
    if (carry.length > MAX_ENTRY_BYTES) {
      oversized = true;
      carry = '';
    }
  }
  const rest = carry + decoder.end();
  if (oversized || rest.trim() !== '') {
    const entry = lineOf(rest, oversized);
    if (entry) yield entry;
  }
}

function parseEntry(text: string, origin: string): FhirEntry {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { resource: undefined, origin, problem: 'not valid JSON' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { resource: undefined, origin, problem: 'not a JSON object' };
  return { resource: value as Record<string, unknown>, origin };
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COLON = 0x3a;
const NEWLINE = 0x0a;

/**
 * The elements of a Bundle's top-level `entry` array, one at a time. The scanner follows strings
 * and nesting depth byte by byte; it keeps the top-level keys' string values it needs
 * (resourceType, type) and the bytes of the entry element being read, nothing else.
 */
async function* readBundle(file: string, name: string): AsyncGenerator<FhirEntry> {
  let depth = 0;
  let inString = false;
  let escaped = false;
  let line = 1;
  /** Bytes of the string being read at depth 1 (a key, or the value of resourceType/type). */
  let topString: number[] | undefined;
  let lastTopString = '';
  let key = '';
  let expectingValue = false;
  let inEntries = false;
  let entryIndex = 0;
  let entryParts: Buffer[] | undefined;
  let entryBytes = 0;
  let entryLine = 0;
  let entryStart = -1;
  let entryOversized = false;
  const topValues: Record<string, string> = {};
  let sawAnything = false;

  const finishEntry = (chunk: Buffer, end: number): FhirEntry => {
    const origin = `${name}#entry[${entryIndex}] (line ${entryLine})`;
    entryIndex += 1;
    const parts = entryParts!;
    if (!entryOversized) parts.push(Buffer.from(chunk.subarray(Math.max(entryStart, 0), end)));
    const oversized = entryOversized || entryBytes + (end - Math.max(entryStart, 0)) > MAX_ENTRY_BYTES;
    entryParts = undefined;
    entryStart = -1;
    entryOversized = false;
    entryBytes = 0;
    if (oversized) return { resource: undefined, origin, problem: `entry larger than ${MAX_ENTRY_BYTES} bytes` };
    const parsed = parseEntry(Buffer.concat(parts).toString('utf8'), origin);
    if (!parsed.resource) return parsed;
    const entry = parsed.resource;
    const fullUrl = typeof entry.fullUrl === 'string' ? entry.fullUrl : undefined;
    const resource = entry.resource;
    if (typeof resource !== 'object' || resource === null || Array.isArray(resource)) {
      const method = (entry.request as { method?: unknown } | undefined)?.method;
      return { resource: undefined, origin, problem: method === 'DELETE' ? 'DELETE entries are not imported' : 'entry without a resource' };
    }
    return { resource: resource as Record<string, unknown>, origin, ...(fullUrl ? { fullUrl } : {}) };
  };

  for await (const chunk of createReadStream(file, { highWaterMark: CHUNK_BYTES }) as AsyncIterable<Buffer>) {
    if (entryParts) entryStart = 0;
    for (let i = 0; i < chunk.length; i += 1) {
      const byte = chunk[i]!;
      if (byte === NEWLINE) line += 1;
      if (inString) {
        if (escaped) escaped = false;
        else if (byte === BACKSLASH) escaped = true;
        else if (byte === QUOTE) {
          inString = false;
          if (topString) {
            lastTopString = Buffer.from(topString).toString('utf8');
            topString = undefined;
            if (expectingValue && depth === 1) {
              topValues[key] = lastTopString;
              expectingValue = false;
            }
          }
          continue;
        }
        if (topString && topString.length < 256) topString.push(byte);
        continue;
      }
      if (byte <= 0x20 || byte === 0x2c) continue;
      sawAnything = true;
      if (depth === 0 && byte !== OPEN_OBJECT) throw new UnreadableFile('not a JSON object: a Bundle file holds one Bundle');
      if (byte === QUOTE) {
        inString = true;
        if (depth === 1) topString = [];
        continue;
      }
      if (byte === COLON) {
        if (depth === 1) {
          key = lastTopString;
          expectingValue = true;
        }
        continue;
      }
      if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
        if (depth === 1 && expectingValue) {
          expectingValue = false;
          if (key === 'entry' && byte === OPEN_ARRAY) {
            // Serializers write resourceType and type before entry: a file that says otherwise stops here, before any entry.
            checkBundle(topValues, false);
            inEntries = true;
          }
        } else if (depth === 2 && inEntries && byte === OPEN_OBJECT) {
          entryParts = [];
          entryStart = i;
          entryLine = line;
        }
        depth += 1;
        continue;
      }
      if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
        depth -= 1;
        if (depth === 2 && inEntries && entryParts && byte === CLOSE_OBJECT) yield finishEntry(chunk, i + 1);
        else if (depth === 1 && inEntries) inEntries = false;
        continue;
      }
      if (depth === 1 && expectingValue) expectingValue = false;
    }
    if (entryParts && entryStart >= 0) {
      const part = chunk.subarray(entryStart);
      entryBytes += part.length;
      if (entryBytes > MAX_ENTRY_BYTES) entryOversized = true;
      else entryParts.push(Buffer.from(part));
    }
  }
  if (!sawAnything) throw new UnreadableFile('empty file');
  if (depth !== 0 || inString) throw new UnreadableFile('truncated JSON');
  checkBundle(topValues, true);
}

/** resourceType Bundle and an imported type; `complete`: the whole object was read, so absent members count. */
function checkBundle(top: Record<string, string>, complete: boolean): void {
  if ((complete || top.resourceType !== undefined) && top.resourceType !== 'Bundle') throw new UnreadableFile('not a FHIR Bundle (resourceType must be Bundle; NDJSON files must end in .ndjson)');
  if ((complete || top.type !== undefined) && !BUNDLE_TYPES.has(top.type ?? '')) throw new UnreadableFile(`Bundle type ${JSON.stringify(top.type ?? null)} is not imported (${[...BUNDLE_TYPES].join(', ')})`);
}
