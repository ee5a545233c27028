import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Command } from 'commander';
import { printJson, UsageError, type CommandKit } from '../cli/kit.js';
import type { Database } from '../db/database.js';
import type { PatientWriter } from './mapping/patient.js';
import type { ImportProgress } from './import/import.js';

const OID = /^[0-2](\.(0|[1-9][0-9]*))+$/;
const SOURCE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

const IMPORT_HELP = `
PATH is a FHIR R4 file or a folder of them: Bundle JSON (type transaction, batch, collection or
searchset) or FHIR Bulk Data NDJSON (files ending in .ndjson, one resource per line), both read as
streams. A folder contributes its *.json and *.ndjson files, in name order.

Imported: Patient, Practitioner, Organization, Location, Medication, Encounter, Condition,
Observation, Procedure, DiagnosticReport, MedicationRequest, ServiceRequest; other resource types
are counted as skipped. References urn:uuid:…, Type/id and Type?identifier=system|value resolve
within the source. Each resource is validated against the FHIR R4 definitions; an invalid one is
rejected with its file, line or entry and FHIR path, and the rest goes on. A resource imported again
(same --source, type and id) replaces its earlier version.

Prints a JSON summary {imported, updated, rejected: [{file, entry, path, message}], rejectedTotal,
skipped, patients, files, seconds}; exit code 1 when anything was rejected. On a terminal, stderr
shows the progress (files, resources, rate).`;

async function filesOf(paths: readonly string[]): Promise<string[]> {
  const files: string[] = [];
  for (const given of paths) {
    const stat = await fs.stat(given).catch(() => undefined);
    if (!stat) throw new UsageError(`${given}: no such file or folder`);
    if (stat.isDirectory()) {
      const names = (await fs.readdir(given)).filter((name) => /\.(json|ndjson)$/i.test(name)).sort();
      files.push(...names.map((name) => path.join(given, name)));
    } else files.push(given);
  }
  if (files.length === 0) throw new UsageError('no .json or .ndjson file in the given folders');
  return files;
}

function progressLine(progress: ImportProgress): void {
  const rate = Math.round(progress.perSecond).toLocaleString('en-US');
  const text =
    progress.stage === 'reading'
      ? `files ${progress.filesDone}/${progress.files} · ${progress.resources.toLocaleString('en-US')} resources · ${rate}/s`
      : `assembling the record of ${progress.patientsDone.toLocaleString('en-US')} patients · ${progress.resources.toLocaleString('en-US')} resources read`;
  process.stderr.write(`\r${text}\u001b[K`);
}

/**
 * V8 sizes its heap when the process starts, and by default lets the young generation grow to
 * tens of megabytes and the old one to gigabytes: an import, which makes short-lived garbage at a
 * high rate, then held some 370 MiB. Its work runs in a child process of the same program with a
 * bounded young generation and a capped old one; the cap also bounds one patient's record while it
 * is assembled. An 8 MiB semi-space: with 2 the garbage collector took 28% of the import's CPU
 * profile (256 MiB of NDJSON, 143,452 resources), with 16 14%; the peak resident memory was 259,
 * 267 and 277 MiB with 2, 8 and 16, and the target is < 300 MB = 286 MiB (README, "The medical
 * record from FHIR R4"), so 8 keeps a margin.
 */
const IMPORT_HEAP_FLAGS = ['--max-semi-space-size=8', '--max-old-space-size=256'];
const IMPORT_CHILD = 'EHR_GATEWAY_IMPORT_CHILD';

/** Runs this same command again in a child with IMPORT_HEAP_FLAGS (unless this is that child); its exit code becomes ours. */
async function inBoundedHeap(): Promise<boolean> {
  if (process.env[IMPORT_CHILD] === '1') return false;
  const child = spawn(process.execPath, [...IMPORT_HEAP_FLAGS, ...process.execArgv, process.argv[1]!, ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, [IMPORT_CHILD]: '1' },
  });
  const code = await new Promise<number>((resolve) => child.on('exit', (exitCode, signal) => resolve(exitCode ?? (signal ? 1 : 0))));
  process.exitCode = code;
  return true;
}

/** The record's commands: `records import`. */
export function registerRecordCommands(program: Command, { withDatabase }: CommandKit, patientWriter: (database: Database) => PatientWriter): void {
  const records = program.command('records').description("the patients' medical record of interface A, from FHIR R4");
  records
    .command('import')
    .description('import FHIR R4 Bundles and Bulk Data NDJSON into the medical record (streaming; re-imports update)')
    .argument('<PATH...>', 'FHIR R4 files (Bundle .json, Bulk Data .ndjson) or folders of them')
    .requiredOption('--organization <oid>', 'OID of the organization the records belong to: its api keys see these patients')
    .option('--source <name>', 'name of the МИС the files come from; resources are unique per source, type and id', 'default')
    .option(
      '--threads <n>',
      "worker threads that validate and map the resources (default 0: the command's own thread; each thread holds the FHIR definitions and a heap of its own, some 35-70 MiB more)",
    )
    .addHelpText('after', IMPORT_HELP)
    .action(async (paths: string[], options: { organization: string; source: string; threads?: string }) => {
      if (!OID.test(options.organization)) throw new UsageError(`--organization "${options.organization}" is not an OID`);
      if (!SOURCE.test(options.source)) throw new UsageError(`--source "${options.source}" must be 1-64 letters, digits, dots, dashes or underscores`);
      if (options.threads !== undefined && !/^(0|[1-9][0-9]?)$/.test(options.threads))
        throw new UsageError(`--threads "${options.threads}" must be a whole number from 0 to 99`);
      const files = await filesOf(paths);
      if (await inBoundedHeap()) return;
      // Loaded here: the FHIR definitions and validator are this command's alone, not every command's start.
      const { importFhirFiles } = await import('./import/import.js');
      const onTerminal = process.stderr.isTTY;
      const summary = await withDatabase((database) =>
        importFhirFiles(database.sql, files, {
          source: options.source,
          organization: options.organization,
          writePatients: patientWriter(database),
          ...(options.threads === undefined ? {} : { threads: Number(options.threads) }),
          ...(onTerminal ? { progress: progressLine } : {}),
        }),
      );
      if (onTerminal) process.stderr.write('\n');
      printJson(summary);
      if (summary.rejectedTotal > 0) {
        process.stderr.write(`ehr-gateway: ${summary.rejectedTotal} entries rejected; the others were imported\n`);
        process.exitCode = 1;
      }
    });
}
