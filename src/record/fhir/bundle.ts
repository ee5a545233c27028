import { createReadStream } from 'node:fs';
import { CHUNK_BYTES, MAX_ENTRY_BYTES, UnreadableFile, type ReadEntry } from './entries.ts';

/** The Bundle types an import takes: a МИС's export, a transaction or batch it would post, a search result. */
export const BUNDLE_TYPES = new Set(['transaction', 'batch', 'collection', 'searchset']);

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COLON = 0x3a;
const COMMA = 0x2c;
const NEWLINE = 0x0a;
/** The longest top-level string kept (a key, the Bundle's resourceType or type). */
const MAX_TOP_STRING = 256;

/** The bytes of the entry element being read, which may span chunks. */
interface EntryInProgress {
  parts: Buffer[];
  bytes: number;
  line: number;
  /** Where it starts in the current chunk (0 when it began in an earlier one). */
  start: number;
  oversized: boolean;
}

/**
 * The elements of a Bundle's top-level `entry` array, one at a time, unparsed: a byte scanner
 * follows strings and nesting depth; it keeps the top-level keys' string values it needs
 * (resourceType, type) and the bytes of the entry element being read, nothing else. Memory is
 * bounded by the largest entry, whatever the file's size.
 */
export async function* readBundle(file: string, name: string): AsyncGenerator<ReadEntry> {
  const scanner = new BundleScanner(name);
  for await (const chunk of createReadStream(file, { highWaterMark: CHUNK_BYTES }) as AsyncIterable<Buffer>) yield* scanner.feed(chunk);
  scanner.finish();
}

class BundleScanner {
  private depth = 0;
  private inString = false;
  private escaped = false;
  private line = 1;
  /** Bytes of the string being read at depth 1 (a key, or the value of resourceType/type). */
  private topString: number[] | undefined;
  private lastTopString = '';
  private key = '';
  private expectingValue = false;
  private inEntries = false;
  private entryIndex = 0;
  private entry: EntryInProgress | undefined;
  private readonly topValues: Record<string, string> = {};
  private sawAnything = false;
  // A field set in the constructor, not a parameter property: the import's worker threads run this file with types stripped.
  private readonly name: string;

  constructor(name: string) {
    this.name = name;
  }

  *feed(chunk: Buffer): Generator<ReadEntry> {
    if (this.entry) this.entry.start = 0;
    for (let i = 0; i < chunk.length; i += 1) {
      const byte = chunk[i]!;
      if (byte === NEWLINE) this.line += 1;
      if (this.inString) this.stringByte(byte);
      else if (byte > 0x20 && byte !== COMMA) {
        const finished = this.structuralByte(byte, chunk, i);
        if (finished) yield finished;
      }
    }
    this.keepEntryTail(chunk);
  }

  /** After the last chunk: the file held one whole Bundle of an imported type. */
  finish(): void {
    if (!this.sawAnything) throw new UnreadableFile('empty file');
    if (this.depth !== 0 || this.inString) throw new UnreadableFile('truncated JSON');
    checkBundle(this.topValues, true);
  }

  private stringByte(byte: number): void {
    if (this.escaped) this.escaped = false;
    else if (byte === BACKSLASH) this.escaped = true;
    else if (byte === QUOTE) {
      this.inString = false;
      if (this.topString) this.endTopString();
      return;
    }
    if (this.topString && this.topString.length < MAX_TOP_STRING) this.topString.push(byte);
  }

  private endTopString(): void {
    this.lastTopString = Buffer.from(this.topString!).toString('utf8');
    this.topString = undefined;
    if (this.expectingValue && this.depth === 1) {
      this.topValues[this.key] = this.lastTopString;
      this.expectingValue = false;
    }
  }

  /** A byte outside strings and whitespace; returns the entry element it closes, if it closes one. */
  private structuralByte(byte: number, chunk: Buffer, at: number): ReadEntry | undefined {
    this.sawAnything = true;
    if (this.depth === 0 && byte !== OPEN_OBJECT) throw new UnreadableFile('not a JSON object: a Bundle file holds one Bundle');
    if (byte === QUOTE) {
      this.inString = true;
      if (this.depth === 1) this.topString = [];
    } else if (byte === COLON) {
      if (this.depth === 1) {
        this.key = this.lastTopString;
        this.expectingValue = true;
      }
    } else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) this.open(byte, at);
    else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) return this.close(byte, chunk, at);
    else if (this.depth === 1 && this.expectingValue) this.expectingValue = false;
    return undefined;
  }

  private open(byte: number, at: number): void {
    if (this.depth === 1 && this.expectingValue) {
      this.expectingValue = false;
      if (this.key === 'entry' && byte === OPEN_ARRAY) {
        // Serializers write resourceType and type before entry: a file that says otherwise stops here, before any entry.
        checkBundle(this.topValues, false);
        this.inEntries = true;
      }
    } else if (this.depth === 2 && this.inEntries && byte === OPEN_OBJECT) {
      this.entry = { parts: [], bytes: 0, line: this.line, start: at, oversized: false };
    }
    this.depth += 1;
  }

  private close(byte: number, chunk: Buffer, at: number): ReadEntry | undefined {
    this.depth -= 1;
    if (this.depth === 2 && this.inEntries && this.entry && byte === CLOSE_OBJECT) return this.finishEntry(chunk, at + 1);
    if (this.depth === 1 && this.inEntries) this.inEntries = false;
    return undefined;
  }

  private finishEntry(chunk: Buffer, end: number): ReadEntry {
    const origin = `${this.name}#entry[${this.entryIndex}] (line ${this.entry!.line})`;
    this.entryIndex += 1;
    const { parts, bytes, start, oversized } = this.entry!;
    this.entry = undefined;
    if (oversized || bytes + (end - start) > MAX_ENTRY_BYTES) return { file: this.name, origin, problem: `entry larger than ${MAX_ENTRY_BYTES} bytes` };
    parts.push(chunk.subarray(start, end));
    return { file: this.name, origin, text: Buffer.concat(parts).toString('utf8'), bundled: true };
  }

  /** The part of the entry being read that this chunk holds, copied (the stream reuses nothing, but a slice would pin the whole chunk). */
  private keepEntryTail(chunk: Buffer): void {
    const entry = this.entry;
    if (!entry || entry.oversized) return;
    const part = chunk.subarray(entry.start);
    entry.bytes += part.length;
    if (entry.bytes > MAX_ENTRY_BYTES) {
      entry.oversized = true;
      entry.parts = [];
    } else entry.parts.push(Buffer.from(part));
  }
}

/** resourceType Bundle and an imported type; `complete`: the whole object was read, so absent members count. */
function checkBundle(top: Record<string, string>, complete: boolean): void {
  if ((complete || top.resourceType !== undefined) && top.resourceType !== 'Bundle')
    throw new UnreadableFile('not a FHIR Bundle (resourceType must be Bundle; NDJSON files must end in .ndjson)');
  if ((complete || top.type !== undefined) && !BUNDLE_TYPES.has(top.type ?? ''))
    throw new UnreadableFile(`Bundle type ${JSON.stringify(top.type ?? null)} is not imported (${[...BUNDLE_TYPES].join(', ')})`);
}
