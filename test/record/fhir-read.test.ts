import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_ENTRY_BYTES, UnreadableFile, type FhirEntry } from '../../src/record/fhir/entries.js';
import { readFhirFile } from '../../src/record/fhir/read.js';
import { aliasesOf, referenceAlias } from '../../src/record/fhir/references.js';

/** The streaming readers of FHIR files and the reference aliases, on files written here byte by byte. */

let folder: string;

beforeAll(async () => {
  folder = await fs.mkdtemp(path.join(os.tmpdir(), 'ehr-gateway-fhir-read-'));
});

afterAll(async () => {
  await fs.rm(folder, { recursive: true, force: true });
});

async function read(name: string, content: string | Buffer): Promise<FhirEntry[]> {
  const file = path.join(folder, name);
  await fs.writeFile(file, content);
  const entries: FhirEntry[] = [];
  for await (const entry of readFhirFile(file)) entries.push(entry);
  return entries;
}

describe('Bundle JSON', () => {
  it('yields each entry of the top-level entry array with its fullUrl and line, whatever strings and nested "entry" members hold', async () => {
    const tricky = { resourceType: 'Observation', id: 'o1', note: [{ text: 'brace } bracket ] quote \\" "entry": [ {' }], entry: [{ not: 'a bundle entry' }] };
    const bundle = {
      resourceType: 'Bundle',
      id: 'b',
      type: 'collection',
      meta: { tag: [{ code: 'entry' }] },
      entry: [{ fullUrl: 'urn:uuid:1', resource: { resourceType: 'Patient', id: 'p1' } }, { resource: tricky }],
    };
    const entries = await read('tricky.json', JSON.stringify(bundle, null, 2));
    expect(entries.map((entry) => entry.resource)).toEqual([{ resourceType: 'Patient', id: 'p1' }, tricky]);
    expect(entries[0]!.fullUrl).toBe('urn:uuid:1');
    expect(entries.map((entry) => entry.origin)).toEqual(['tricky.json#entry[0] (line 13)', expect.stringMatching(/^tricky\.json#entry\[1\] \(line \d+\)$/)]);
  });

  it('reads entries that span the 1 MiB chunks of the stream', async () => {
    const big = 'x'.repeat(700_000);
    const bundle = {
      resourceType: 'Bundle',
      type: 'batch',
      entry: [0, 1, 2, 3].map((index) => ({ resource: { resourceType: 'Basic', id: `b${index}`, text: { div: big } } })),
    };
    const entries = await read('big.json', JSON.stringify(bundle));
    expect(entries.map((entry) => (entry.resource as { id: string }).id)).toEqual(['b0', 'b1', 'b2', 'b3']);
    expect(entries.every((entry) => (entry.resource as { text: { div: string } }).text.div.length === big.length)).toBe(true);
  });

  it('refuses a file that is no Bundle, or of a type it does not import, before any entry when the file says so first', async () => {
    await expect(read('params.json', '{"resourceType":"Parameters","parameter":[]}')).rejects.toThrow(UnreadableFile);
    await expect(read('history.json', '{"resourceType":"Bundle","type":"history","entry":[{"resource":{"resourceType":"Patient","id":"p"}}]}')).rejects.toThrow(
      /Bundle type "history" is not imported/,
    );
    await expect(read('array.json', '[{"resourceType":"Patient"}]')).rejects.toThrow(/not a JSON object/);
    await expect(read('cut.json', '{"resourceType":"Bundle","type":"collection","entry":[{"resource":{"resourceType":"Patient"')).rejects.toThrow(/truncated/);
  });

  it('reports an entry without a resource, and a DELETE, as problems of that entry', async () => {
    const entries = await read(
      'delete.json',
      JSON.stringify({ resourceType: 'Bundle', type: 'transaction', entry: [{ request: { method: 'DELETE', url: 'Patient/1' } }, { fullUrl: 'x' }] }),
    );
    expect(entries.map((entry) => entry.problem)).toEqual(['DELETE entries are not imported', 'entry without a resource']);
  });
});

describe('Bulk Data NDJSON', () => {
  it('yields one resource per line with its line number (CRLF and blank lines too), and a problem for a line that is no JSON object', async () => {
    const entries = await read(
      'lines.ndjson',
      '{"resourceType":"Patient","id":"a"}\r\n\n[1,2]\n{"resourceType":"Patient","id":"b"}\n{oops\n{"resourceType":"Patient","id":"c"}',
    );
    expect(entries.map((entry) => [entry.origin, entry.problem ?? (entry.resource as { id: string }).id])).toEqual([
      ['lines.ndjson:1', 'a'],
      ['lines.ndjson:3', 'not a JSON object'],
      ['lines.ndjson:4', 'b'],
      ['lines.ndjson:5', 'not valid JSON'],
      ['lines.ndjson:6', 'c'],
    ]);
  });

  it('refuses a line longer than the limit without holding it, and goes on', async () => {
    const long = `{"resourceType":"Basic","id":"long","x":"${'y'.repeat(MAX_ENTRY_BYTES)}"}`;
    const entries = await read('long.ndjson', `${long}\n{"resourceType":"Patient","id":"after"}\n`);
    expect(entries.map((entry) => entry.problem ?? (entry.resource as { id: string }).id)).toEqual([`line longer than ${MAX_ENTRY_BYTES} bytes`, 'after']);
  });
});

describe('references as aliases', () => {
  it('names a resource the same way from urn:uuid:, Type/id, an absolute URL with _history and a conditional identifier', () => {
    const aliases = aliasesOf(
      { resourceType: 'Practitioner', id: 'p1', identifier: [{ system: 'http://hl7.org/fhir/sid/us-npi', value: '999' }] },
      'urn:uuid:abc',
    );
    expect(aliases).toEqual(expect.arrayContaining(['Practitioner/p1', 'urn:uuid:abc', 'Practitioner?identifier=http://hl7.org/fhir/sid/us-npi|999']));
    for (const reference of [
      'Practitioner/p1',
      'https://mis.example.org/fhir/Practitioner/p1/_history/3',
      'urn:uuid:abc',
      'Practitioner?identifier=http://hl7.org/fhir/sid/us-npi|999',
      'Practitioner?identifier=http%3A%2F%2Fhl7.org%2Ffhir%2Fsid%2Fus-npi%7C999',
    ]) {
      expect(aliases, reference).toContain(referenceAlias(reference));
    }
    expect(referenceAlias('#contained')).toBeUndefined();
    expect(referenceAlias('Practitioner?name=Smith')).toBeUndefined();
  });
});
