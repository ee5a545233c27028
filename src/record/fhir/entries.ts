/**
 * What the readers of FHIR files yield (ndjson.ts, bundle.ts): each entry's text, cut out of the
 * stream but not parsed, so that parsing can happen where the validation does (the import's worker
 * threads); and the parsed entry (read.ts).
 */

/** The text of one NDJSON line (a resource) or of one element of a Bundle's `entry` array ({fullUrl, resource, …}). */
export interface EntryText {
  /** The file's name (without its folder). */
  file: string;
  /** FILE:LINE of an NDJSON line, FILE#entry[N] (line L) of a Bundle entry. */
  origin: string;
  text: string;
  /** A Bundle's entry element, whose `resource` member is the resource; else the text is the resource. */
  bundled: boolean;
}

/** An entry that cannot be read (too long), told before anything is parsed. */
export interface EntryProblem {
  file: string;
  origin: string;
  problem: string;
}

/** An NDJSON line of a resource type the reader's caller does not want: counted, never parsed. */
export interface SkippedEntry {
  file: string;
  origin: string;
  skippedType: string;
}

export type ReadEntry = EntryText | EntryProblem | SkippedEntry;

export interface FhirEntry {
  /** The parsed resource, or undefined when the entry is no resource (see problem). */
  resource: Record<string, unknown> | undefined;
  file: string;
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

/** One resource larger than this is refused rather than held (a Synthea patient's largest is a few hundred KiB). */
export const MAX_ENTRY_BYTES = 16 * 1024 * 1024;

/** Bytes read from a file at a time. */
export const CHUNK_BYTES = 1024 * 1024;
