import { createReadStream } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { CHUNK_BYTES, MAX_ENTRY_BYTES, type ReadEntry, type WantedType } from './entries.ts';

/** A line's resourceType when it comes first, as Bulk Data exports write it. */
const LEADING_TYPE = /^\s*\{\s*"resourceType"\s*:\s*"([A-Za-z]{1,64})"/;

/**
 * The lines of a FHIR Bulk Data NDJSON file, one at a time, unparsed. Each chunk is decoded once
 * (StringDecoder keeps a character split between chunks) and cut into lines as text: no buffer per
 * line, whose native allocations would grow the resident memory. A line of a type nobody wants is
 * counted, not parsed (Claims and ExplanationOfBenefits are a third of a Synthea export).
 */
export async function* readNdjson(file: string, name: string, wanted: WantedType): AsyncGenerator<ReadEntry> {
  const decoder = new StringDecoder('utf8');
  let line = 0;
  let carry = '';
  let oversized = false;
  const lineOf = (text: string, tooLong: boolean): ReadEntry | undefined => {
    line += 1;
    const origin = `${name}:${line}`;
    if (tooLong) return { file: name, origin, problem: `line longer than ${MAX_ENTRY_BYTES} bytes` };
    const trimmed = text.trim();
    if (trimmed === '') return undefined;
    const type = LEADING_TYPE.exec(trimmed.slice(0, 128))?.[1];
    if (type !== undefined && !wanted(type)) return { file: name, origin, skippedType: type };
    return { file: name, origin, text: trimmed, bundled: false };
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
