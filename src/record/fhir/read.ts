import path from 'node:path';
import { readBundle } from './bundle.ts';
import type { EntryText, FhirEntry, ReadEntry, WantedType } from './entries.ts';
import { readNdjson } from './ndjson.ts';

/**
 * Reading FHIR R4 files as a stream of entries, memory bounded whatever the file size: Bulk Data
 * NDJSON one line at a time (ndjson.ts), and Bundle JSON one `entry` element at a time (bundle.ts).
 */

/** The entries' texts of an NDJSON file (.ndjson) or a Bundle (anything else), unparsed. */
export async function* readEntryTexts(file: string, wanted: WantedType = () => true): AsyncGenerator<ReadEntry> {
  const name = path.basename(file);
  if (/\.ndjson$/i.test(file)) yield* readNdjson(file, name, wanted);
  else yield* readBundle(file, name);
}

/** The entries of a file, parsed. */
export async function* readFhirFile(file: string, wanted: WantedType = () => true): AsyncGenerator<FhirEntry> {
  for await (const entry of readEntryTexts(file, wanted)) {
    if ('text' in entry) yield parseEntry(entry);
    else yield { resource: undefined, ...entry };
  }
}

function parseObject(text: string): Record<string, unknown> | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'not valid JSON';
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not a JSON object';
  return value as Record<string, unknown>;
}

/** An entry's text parsed: an NDJSON line is the resource; a Bundle's entry element holds it (and its fullUrl). */
export function parseEntry({ file, origin, text, bundled }: EntryText): FhirEntry {
  const parsed = parseObject(text);
  if (typeof parsed === 'string') return { resource: undefined, file, origin, problem: parsed };
  if (!bundled) return { resource: parsed, file, origin };
  const fullUrl = typeof parsed.fullUrl === 'string' ? parsed.fullUrl : undefined;
  const resource = parsed.resource;
  if (typeof resource !== 'object' || resource === null || Array.isArray(resource)) {
    const method = (parsed.request as { method?: unknown } | undefined)?.method;
    return { resource: undefined, file, origin, problem: method === 'DELETE' ? 'DELETE entries are not imported' : 'entry without a resource' };
  }
  return { resource: resource as Record<string, unknown>, file, origin, ...(fullUrl ? { fullUrl } : {}) };
}
