import type { EntryProblem, EntryText, FhirEntry } from '../fhir/entries.ts';
import { parseEntry } from '../fhir/read.ts';
import { aliasesOf } from '../fhir/references.ts';
import { isImportedType, validationProblems } from '../fhir/validate.ts';
import { mapResource, PATIENT_SCOPED } from '../mapping/map.ts';
import { patientOf, type ImportedPatient } from '../mapping/patient.ts';

/**
 * A batch of entries read from the files, staged: each parsed, validated against the FHIR R4
 * definitions and mapped to its fragment, or rejected with its FHIR path, or skipped (a type the
 * record does not use). Pure CPU work, run in the import's worker threads (staging-worker.ts), or
 * in the calling thread; the definitions must be loaded first (loadDefinitions).
 */

export interface RejectedEntry {
  file: string;
  /** FILE:LINE or FILE#entry[N] (line L); the file itself when it could not be read at all. */
  entry: string;
  /** The FHIR path of the problem (e.g. Observation.value[x].value); empty when the entry is no resource. */
  path: string;
  message: string;
}

/** What a batch is made of: the texts the readers cut out, and the entries they could not (too long). */
export type EntryToStage = EntryText | EntryProblem;

/** A staged batch, as the columns the staging statements take (structured-clone cheap: arrays of strings). */
export interface StagedBatch {
  resources: { types: string[]; ids: string[]; origins: string[]; fragments: string[]; refs: string[]; subjects: Array<string | null> };
  aliases: { aliases: string[]; types: string[]; ids: string[] };
  /** The batch's patients, for the patient source. */
  patients: ImportedPatient[];
  rejected: RejectedEntry[];
  /** Resources of types the record does not use, by type (found in Bundles; NDJSON lines of them are never parsed). */
  skipped: Record<string, number>;
  /** Resources the batch holds twice (same type and id): the later replaced the earlier, and counts as updated. */
  replacedInBatch: number;
}

const MAX_PROBLEMS_PER_RESOURCE = 10;

interface StagedResource {
  type: string;
  id: string;
  origin: string;
  fragment: string;
  refs: string;
  subject: string | null;
}

/** A batch being staged: resources and aliases by key (an upsert statement must not touch one row twice). */
class BatchBuilder {
  readonly resources = new Map<string, StagedResource>();
  readonly aliases = new Map<string, { type: string; id: string }>();
  readonly patients = new Map<string, ImportedPatient>();
  readonly rejected: RejectedEntry[] = [];
  readonly skipped: Record<string, number> = {};
  replacedInBatch = 0;

  skip(type: string): void {
    this.skipped[type] = (this.skipped[type] ?? 0) + 1;
  }

  columns(): StagedBatch {
    const resources = [...this.resources.values()];
    const aliases = [...this.aliases.entries()];
    return {
      resources: {
        types: resources.map((row) => row.type),
        ids: resources.map((row) => row.id),
        origins: resources.map((row) => row.origin),
        fragments: resources.map((row) => row.fragment),
        refs: resources.map((row) => row.refs),
        subjects: resources.map((row) => row.subject),
      },
      aliases: { aliases: aliases.map(([alias]) => alias), types: aliases.map(([, target]) => target.type), ids: aliases.map(([, target]) => target.id) },
      patients: [...this.patients.values()],
      rejected: this.rejected,
      skipped: this.skipped,
      replacedInBatch: this.replacedInBatch,
    };
  }
}

export function stageEntries(entries: readonly EntryToStage[], importedAt: string): StagedBatch {
  const batch = new BatchBuilder();
  for (const entry of entries) stageEntry('text' in entry ? parseEntry(entry) : { resource: undefined, ...entry }, batch, importedAt);
  return batch.columns();
}

/** One entry validated and mapped into the batch, or rejected (with its FHIR path), or skipped (a type the record does not use). */
function stageEntry(entry: FhirEntry, batch: BatchBuilder, importedAt: string): void {
  const reject = (problemPath: string, message: string): void => {
    batch.rejected.push({ file: entry.file, entry: entry.origin, path: problemPath, message });
  };
  const resource = entry.resource;
  if (!resource) {
    reject('', entry.problem ?? 'no resource');
    return;
  }
  const type = resource.resourceType;
  if (typeof type !== 'string') {
    reject('', 'no resourceType');
    return;
  }
  if (!isImportedType(type)) {
    batch.skip(type);
    return;
  }
  if (resource.id === undefined && entry.fullUrl?.startsWith('urn:uuid:')) resource.id = entry.fullUrl.slice('urn:uuid:'.length);
  const problems = validationProblems(resource);
  if (typeof resource.id !== 'string') problems.unshift({ path: `${type}.id`, message: 'a resource id is required (re-imports update by it)' });
  if (problems.length > 0) {
    for (const problem of problems.slice(0, MAX_PROBLEMS_PER_RESOURCE)) reject(problem.path, problem.message);
    return;
  }
  const id = resource.id as string;
  if (type === 'Patient') {
    const mapped = patientOf(resource);
    if ('problem' in mapped) {
      reject(mapped.problem.path, mapped.problem.message);
      return;
    }
    batch.patients.set(id, mapped.patient);
  }
  const mapped = mapResource(type, resource, { importedAt });
  if (PATIENT_SCOPED.has(type) && !mapped.subject) {
    reject(`${type}.subject`, 'a reference to the patient is required');
    return;
  }
  const key = `${type}/${id}`;
  if (batch.resources.has(key)) batch.replacedInBatch += 1;
  batch.resources.set(key, {
    type,
    id,
    origin: entry.origin,
    fragment: JSON.stringify(mapped.fragment),
    refs: mapped.refs.join('\n'),
    subject: mapped.subject ?? null,
  });
  for (const alias of aliasesOf({ resourceType: type, id, identifier: resource.identifier }, entry.fullUrl)) batch.aliases.set(alias, { type, id });
}
