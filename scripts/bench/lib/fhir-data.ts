import { execFile } from 'node:child_process';
import { createReadStream, createWriteStream, existsSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { once } from 'node:events';
import { promisify } from 'node:util';

/**
 * FHIR data of the record's benchmarks, made when they run (never committed): Synthea (fetched by
 * `make synthea`) writes a few patients as Bulk Data NDJSON, and `multiplyNdjson` copies them until
 * the files reach a size, each copy's patient-scoped resources under new ids (the UUIDs of the
 * sample with a copy number appended), the hospitals and practitioners once.
 */

const run = promisify(execFile);

/** Resource types Synthea's bulk export writes once for everybody (referenced by identifier). */
const SHARED = new Set(['Organization', 'Location', 'Practitioner', 'PractitionerRole']);
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

/** A Synthea population as Bulk Data NDJSON (cached per size in the temporary folder); returns its folder. */
export async function syntheaBulkSample(root: string, patients: number): Promise<string> {
  const base = path.join(os.tmpdir(), `ehr-gateway-bench-synthea-3.3.0-${patients}`);
  const fhir = path.join(base, 'fhir');
  if (existsSync(path.join(base, 'done'))) return fhir;
  const classpathFile = path.join(root, '.tools/synthea/classpath.txt');
  if (!existsSync(classpathFile)) throw new Error('Synthea is not installed: run `make synthea` (make bench does)');
  const building = `${base}.${process.pid}`;
  await fs.rm(building, { recursive: true, force: true });
  await run(
    'java',
    [
      '-cp',
      readFileSync(classpathFile, 'utf8').trim(),
      'App',
      '-p',
      String(patients),
      '-s',
      '2026',
      '-cs',
      '2026',
      '-r',
      '20250601',
      '-a',
      '30-70',
      `--exporter.baseDirectory=${building}`,
      '--exporter.fhir.export=true',
      '--exporter.fhir.bulk_data=true',
      '--exporter.hospital.fhir.export=true',
      '--exporter.practitioner.fhir.export=true',
      '--exporter.ccda.export=false',
      '--exporter.csv.export=false',
      '--generate.only_alive_patients=true',
      '--exporter.years_of_history=10',
    ],
    { maxBuffer: 64 * 1024 * 1024, timeout: 600_000 },
  );
  await fs.writeFile(path.join(building, 'done'), '');
  await fs.rm(base, { recursive: true, force: true });
  await fs.rename(building, base);
  return fhir;
}

export interface MultipliedData {
  files: string[];
  bytes: number;
  resources: number;
  copies: number;
}

/** NDJSON files of at least `targetBytes`: the sample's shared resources once, its patients copied with new ids. */
export async function multiplyNdjson(sample: string, out: string, targetBytes: number): Promise<MultipliedData> {
  await fs.mkdir(out, { recursive: true });
  const names = (await fs.readdir(sample)).filter((name) => name.endsWith('.ndjson')).sort();
  const shared = names.filter((name) => SHARED.has(name.split('.')[0]!));
  const scoped = names.filter((name) => !shared.includes(name));
  // Ids and identifier values of the shared resources stay as they are in every copy.
  const keep = new Set<string>();
  let bytes = 0;
  let resources = 0;
  const files: string[] = [];
  for (const name of shared) {
    const text = await fs.readFile(path.join(sample, name), 'utf8');
    for (const match of text.matchAll(UUID)) keep.add(match[0]);
    await fs.writeFile(path.join(out, name), text);
    files.push(path.join(out, name));
    bytes += Buffer.byteLength(text);
    resources += text.split('\n').filter((line) => line.trim() !== '').length;
  }
  const sampleBytes = (await Promise.all(scoped.map(async (name) => (await fs.stat(path.join(sample, name))).size))).reduce((sum, size) => sum + size, 0);
  const copies = Math.max(1, Math.ceil((targetBytes - bytes) / sampleBytes));
  for (const name of scoped) {
    const target = path.join(out, name);
    const writer = createWriteStream(target, { highWaterMark: 1024 * 1024 });
    const lines: string[] = [];
    for await (const line of readline.createInterface({ input: createReadStream(path.join(sample, name)), crlfDelay: Infinity }))
      if (line.trim() !== '') lines.push(line);
    for (let copy = 0; copy < copies; copy += 1) {
      for (const line of lines) {
        const rewritten = line.replace(UUID, (uuid) => (keep.has(uuid) ? uuid : `${uuid}-${copy}`));
        bytes += Buffer.byteLength(rewritten) + 1;
        resources += 1;
        if (!writer.write(`${rewritten}\n`)) await once(writer, 'drain');
      }
    }
    writer.end();
    await once(writer, 'finish');
    files.push(target);
  }
  return { files, bytes, resources, copies };
}
