import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from './cli.js';

/**
 * FHIR R4 test data made at test time by Synthea (Maven Central org.mitre.synthea:synthea, fetched
 * by `make synthea` into .tools/m2): synthetic patients with their encounters, conditions,
 * observations, reports and prescriptions, as transaction Bundles (one per patient, plus the
 * hospitals' and practitioners' batch Bundles) or as Bulk Data NDJSON. Nothing generated is
 * committed: each population is made once per machine into the temporary folder, keyed by its
 * parameters, and reused by the test files that ask for the same one.
 */

export interface SyntheaPopulation {
  /** The folder of the FHIR files. */
  folder: string;
  /** The files to import: the Bundles (*.json), or the NDJSON files. */
  files: string[];
}

export interface SyntheaOptions {
  patients: number;
  seed: number;
  bulk: boolean;
  /** Years of history each patient's record keeps. */
  years?: number;
}

const run = promisify(execFile);

function classpath(): string {
  const file = path.join(repoRoot, '.tools/synthea/classpath.txt');
  if (!existsSync(file)) throw new Error('Synthea is not installed: run `make synthea` (make test does)');
  return readFileSync(file, 'utf8').trim();
}

/** A population of `patients` alive adults (30 to 60), reproducible for a seed (the reference date is fixed). */
export async function syntheaPopulation(options: SyntheaOptions): Promise<SyntheaPopulation> {
  const years = options.years ?? 5;
  const key = `${options.patients}-${options.seed}-${years}-${options.bulk ? 'bulk' : 'bundles'}`;
  const base = path.join(os.tmpdir(), `ehr-gateway-synthea-3.3.0-${key}`);
  const fhir = path.join(base, 'fhir');
  const done = path.join(base, 'done');
  if (!existsSync(done)) {
    const building = `${base}.${process.pid}.${Date.now()}`;
    await fs.mkdir(building, { recursive: true });
    try {
      await run(
        'java',
        [
          '-cp',
          classpath(),
          'App',
          '-p',
          String(options.patients),
          '-s',
          String(options.seed),
          '-cs',
          String(options.seed),
          '-r',
          '20250601',
          '-a',
          '30-60',
          `--exporter.baseDirectory=${building}`,
          '--exporter.fhir.export=true',
          `--exporter.fhir.bulk_data=${options.bulk}`,
          '--exporter.hospital.fhir.export=true',
          '--exporter.practitioner.fhir.export=true',
          '--exporter.ccda.export=false',
          '--exporter.csv.export=false',
          '--generate.only_alive_patients=true',
          `--exporter.years_of_history=${years}`,
        ],
        { cwd: building, maxBuffer: 64 * 1024 * 1024, timeout: 240_000 },
      );
    } catch (error) {
      const failure = error as { stdout?: string; stderr?: string };
      throw new Error(`Synthea failed: ${(failure.stderr ?? '').slice(-2000)}${(failure.stdout ?? '').slice(-2000)}`);
    }
    await fs.writeFile(path.join(building, 'done'), new Date().toISOString());
    // Another test file may have made the same population meanwhile: the first one wins.
    await fs.rename(building, base).catch(async () => fs.rm(building, { recursive: true, force: true }));
  }
  const names = (await fs.readdir(fhir)).sort();
  const files = names.filter((name) => (options.bulk ? name.endsWith('.ndjson') : name.endsWith('.json'))).map((name) => path.join(fhir, name));
  return { folder: fhir, files };
}

/** Every resource of the population, read back as the files hold them. */
export async function resourcesOf(population: SyntheaPopulation): Promise<Array<Record<string, any>>> {
  const resources: Array<Record<string, any>> = [];
  for (const file of population.files) {
    const text = await fs.readFile(file, 'utf8');
    if (file.endsWith('.ndjson'))
      resources.push(
        ...text
          .split('\n')
          .filter((line) => line.trim() !== '')
          .map((line) => JSON.parse(line)),
      );
    else resources.push(...((JSON.parse(text) as { entry?: Array<{ resource: Record<string, any> }> }).entry ?? []).map((entry) => entry.resource));
  }
  return resources;
}
