import type { Cd10, Doctor, Dosage, Observation, Service } from '../../../generated/ehr-types.js';
import type { ImportedType } from '../fhir/validate.ts';

/**
 * The fragments of the SDK's messages each imported FHIR resource is mapped to on its own
 * (map.ts), with the references the assembly (src/record/assembly/) resolves later as aliases
 * (src/record/fhir/references.ts) to stitch a patient's fragments into the four kinds of item. What
 * is taken from where is said in specs/openrpc.json (each message's description) and in the table
 * of the README ("The medical record from FHIR R4").
 */

/** A reference kept for the assembly: its alias and, for a fallback name, its display. */
export interface Ref {
  alias: string;
  display?: string;
}

export interface PractitionerFragment {
  doctor: Omit<Doctor, 'id'>;
}
export interface OrganizationFragment {
  name: string;
  oid?: string;
  address: string;
  partOf?: Ref;
}
export interface LocationFragment {
  name: string;
  address: string;
  organization?: Ref;
}
export interface MedicationFragment {
  name: string;
  code: string;
  codeTable: string;
  form?: 0 | 1 | 2;
  expirationDate?: string;
}
export interface EncounterFragment {
  hidden: boolean;
  status: string;
  /** Its start, else its end, else the time of the import: the appointment's time. */
  at: string;
  start?: string;
  end?: string;
  minutes?: number;
  services: Service[];
  doctor?: Ref;
  serviceProvider?: Ref;
  location?: Ref;
  reasons: string[];
  diagnoses: Array<{ condition: string; rank?: number }>;
}
export interface ConditionFragment {
  hidden: boolean;
  encounter?: string;
  cd10: Cd10;
  text: string;
  onset?: string;
  chronicProblem: boolean;
}
export interface ObservationFragment {
  hidden: boolean;
  encounter?: string;
  observation: Observation;
  /** `name: value unit`, for an appointment result's medicalExaminationResult. */
  line: string;
}
export interface ProcedureFragment {
  hidden: boolean;
  /** When performed, else the time of the import. */
  at: string;
  encounter?: string;
  title: string;
  services: Service[];
  status: 0 | 1 | 2 | 3;
  start?: string;
  end?: string;
}
export interface DiagnosticReportFragment {
  hidden: boolean;
  /** issued, else the effective time, else the time of the import: the report's issuedDate. */
  at: string;
  encounter?: string;
  status: string;
  category: string;
  laboratory: boolean;
  services: Service[];
  effective: { start?: string; end?: string };
  issued?: string;
  results: string[];
  interpreters: Ref[];
  performers: Ref[];
  conclusion: string[];
  attachments: string[];
}
export interface MedicationRequestFragment {
  hidden: boolean;
  /** authoredOn, else the time of the import: the prescription's created. */
  at: string;
  encounter?: string;
  /** 0 recommended, 2 cancelled or stopped, 3 completed (as a recommendation's status). */
  status: 0 | 2 | 3;
  authoredOn?: string;
  medication?: Omit<MedicationFragment, 'expirationDate'> & { expirationDate?: string };
  medicationRef?: Ref;
  requester?: Ref;
  recorder?: Ref;
  performer?: Ref;
  dosage: Dosage[];
  dosageText: string;
  reasons: string[];
  reasonRefs: string[];
  validity: { start?: string; end?: string };
  supplyMinutes?: number;
  durationText: string;
  repeats: number;
  amount?: number;
}
export interface ServiceRequestFragment {
  hidden: boolean;
  /** authoredOn, else the time of the import. */
  at: string;
  encounter?: string;
  title: string;
  service: Service;
  laboratory: boolean;
  required: boolean;
  status: 0 | 2 | 3;
  authoredOn?: string;
  occurrence: { start?: string; end?: string };
}

export interface FragmentsByType {
  Patient: Record<string, never>;
  Practitioner: PractitionerFragment;
  Organization: OrganizationFragment;
  Location: LocationFragment;
  Medication: MedicationFragment;
  Encounter: EncounterFragment;
  Condition: ConditionFragment;
  Observation: ObservationFragment;
  Procedure: ProcedureFragment;
  DiagnosticReport: DiagnosticReportFragment;
  MedicationRequest: MedicationRequestFragment;
  ServiceRequest: ServiceRequestFragment;
}

export interface Mapped {
  fragment: FragmentsByType[ImportedType];
  /** The alias of its subject: the patient it belongs to (undefined for shared resources). */
  subject?: string;
  /** Every alias it references (its subject's included). */
  refs: string[];
}

/** What an appointment, a report or a prescription must carry that FHIR may leave out: a time. */
export interface MappingContext {
  /** Used when a resource gives no time at all (ISO instant). */
  importedAt: string;
}
