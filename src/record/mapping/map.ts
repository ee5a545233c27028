import { aliasOf } from '../fhir/references.ts';
import type { ImportedType } from '../fhir/validate.ts';
import type {
  DiagnosticReportFragment,
  EncounterFragment,
  FragmentsByType,
  LocationFragment,
  Mapped,
  MappingContext,
  MedicationRequestFragment,
  OrganizationFragment,
  Ref,
} from './fragments.ts';
import { medicationRequest } from './medication-requests.ts';
import { diagnosticReport, observation } from './observations.ts';
import { location, medication, organization, practitioner } from './shared-resources.ts';
import type { Json } from './values.ts';
import { condition, encounter, procedure, serviceRequest } from './visits.ts';

/** One valid resource of an imported type mapped on its own to its fragment, its subject and the aliases it references. */

/** The references of a fragment, as aliases (its subject's included), for the assembly's lookups. */
function referencesOf(type: ImportedType, fragment: Mapped['fragment'], subject: string | undefined): string[] {
  const refs = new Set<string>(subject ? [subject] : []);
  const add = (value: Ref | string | undefined) => {
    if (value) refs.add(typeof value === 'string' ? value : value.alias);
  };
  add((fragment as { encounter?: string }).encounter);
  if (type === 'Encounter') {
    const encounter = fragment as EncounterFragment;
    [encounter.doctor, encounter.serviceProvider, encounter.location].forEach(add);
    for (const diagnosis of encounter.diagnoses) add(diagnosis.condition);
  }
  if (type === 'DiagnosticReport') {
    const report = fragment as DiagnosticReportFragment;
    report.results.forEach(add);
    [...report.interpreters, ...report.performers].forEach(add);
  }
  if (type === 'MedicationRequest') {
    const request = fragment as MedicationRequestFragment;
    [request.medicationRef, request.requester, request.recorder, request.performer].forEach(add);
    request.reasonRefs.forEach(add);
  }
  if (type === 'Location') add((fragment as LocationFragment).organization);
  if (type === 'Organization') add((fragment as OrganizationFragment).partOf);
  return [...refs];
}

const MAPPERS: { [T in ImportedType]: (resource: Json, context: MappingContext) => FragmentsByType[T] } = {
  Patient: () => ({}),
  Practitioner: practitioner,
  Organization: organization,
  Location: location,
  Medication: medication,
  Encounter: encounter,
  Condition: condition,
  Observation: observation,
  Procedure: procedure,
  DiagnosticReport: diagnosticReport,
  MedicationRequest: medicationRequest,
  ServiceRequest: serviceRequest,
};

/** The resource types that belong to one patient (their subject). */
export const PATIENT_SCOPED: ReadonlySet<ImportedType> = new Set([
  'Encounter',
  'Condition',
  'Observation',
  'Procedure',
  'DiagnosticReport',
  'MedicationRequest',
  'ServiceRequest',
]);

/** Maps one valid resource of an imported type. */
export function mapResource(type: ImportedType, resource: Json, context: MappingContext): Mapped {
  const fragment = MAPPERS[type](resource, context);
  const subject = PATIENT_SCOPED.has(type) ? aliasOf(resource.subject) : undefined;
  return { fragment, ...(subject ? { subject } : {}), refs: referencesOf(type, fragment, subject) };
}
