import type { Diagnosis, PrescriptionInfo, Procedure } from '../../../generated/ehr-types.js';
import type {
  ConditionFragment,
  EncounterFragment,
  MedicationRequestFragment,
  ObservationFragment,
  ProcedureFragment,
  ServiceRequestFragment,
} from '../mapping/fragments.ts';
import { diagnosisOf, type Encounters } from './encounters.js';
import type { AppointmentBody, AppointmentResultBody, Item } from './items.js';
import { NO_DOCTOR, type PatientResources, type ResourceRow } from './patient-resources.js';

/** What an encounter's appointment result lists, gathered from the patient's other resources. */
export interface EncounterParts {
  conditions: Diagnosis[];
  observations: string[];
  procedures: Procedure[];
  recommendations: Procedure[];
  prescriptions: PrescriptionInfo[];
  reports: string[];
}

/** What the reports and prescriptions already made: the Observations in reports, each request's PrescriptionInfo, by row id. */
export interface MadeItems {
  inReports: ReadonlySet<string>;
  prescriptionInfos: ReadonlyMap<string, PrescriptionInfo>;
}

type ProcedureFields = Pick<Procedure, 'title' | 'services' | 'type' | 'required' | 'status'>;

/** Every encounter's parts: its diagnoses, observations outside reports, procedures, recommendations, prescriptions and reports. */
export function encounterParts(resources: PatientResources, encounters: Encounters, made: MadeItems): Map<string, EncounterParts> {
  const parts = new Map<string, EncounterParts>();
  const of = (encounterId: string) => {
    let found = parts.get(encounterId);
    if (!found) parts.set(encounterId, (found = { conditions: [], observations: [], procedures: [], recommendations: [], prescriptions: [], reports: [] }));
    return found;
  };
  addDiagnoses(resources, encounters, of);
  const procedureOf = (row: ResourceRow, encounterId: string, fields: ProcedureFields, at: string, end?: string): Procedure => ({
    id: row.id,
    created: at,
    ...fields,
    period: { begin: at, end: end ?? at },
    strictPeriod: { begin: at, end: end ?? at },
    preparations: [],
    requiredPreparations: [],
    appointmentResultId: encounters.resultIdOf(encounterId),
  });
  for (const { row, fragment } of resources.ofType<ObservationFragment>('Observation')) {
    const encounterId = resources.encounterOf(row, fragment.encounter);
    if (encounterId && !made.inReports.has(row.id)) of(encounterId).observations.push(fragment.line);
  }
  for (const { row, fragment } of resources.ofType<ProcedureFragment>('Procedure')) {
    const encounterId = resources.encounterOf(row, fragment.encounter);
    if (encounterId)
      of(encounterId).procedures.push(
        procedureOf(
          row,
          encounterId,
          { title: fragment.title, services: fragment.services, type: 1, required: true, status: fragment.status },
          fragment.at,
          fragment.end,
        ),
      );
  }
  for (const { row, fragment } of resources.ofType<ServiceRequestFragment>('ServiceRequest')) {
    const encounterId = resources.encounterOf(row, fragment.encounter);
    const fields: ProcedureFields = {
      title: fragment.title,
      services: [fragment.service],
      type: fragment.laboratory ? 2 : 1,
      required: fragment.required,
      status: fragment.status,
    };
    if (encounterId)
      of(encounterId).recommendations.push(procedureOf(row, encounterId, fields, fragment.occurrence.start ?? fragment.at, fragment.occurrence.end));
  }
  for (const { row, fragment } of resources.ofType<MedicationRequestFragment>('MedicationRequest')) {
    const encounterId = resources.encounterOf(row, fragment.encounter);
    if (!encounterId) continue;
    const info = made.prescriptionInfos.get(row.id)!;
    const fields: ProcedureFields = {
      title: info.title,
      services: [{ id: info.medications[0]!.code, name: info.title }],
      type: 0,
      required: true,
      status: fragment.status,
    };
    of(encounterId).recommendations.push(procedureOf(row, encounterId, fields, info.validityPeriod.begin, info.validityPeriod.end));
    of(encounterId).prescriptions.push(info);
  }
  for (const { row, fragment } of resources.ofType<{ encounter?: string }>('DiagnosticReport')) {
    const encounterId = resources.encounterOf(row, fragment.encounter);
    if (encounterId) of(encounterId).reports.push(row.id);
  }
  return parts;
}

/**
 * The Conditions of each encounter (Condition.encounter, and Encounter.diagnosis with its rank): rank
 * 1, or the first without a rank, is the base diagnosis (kind 0), the others related (kind 2).
 */
function addDiagnoses(resources: PatientResources, encounters: Encounters, of: (encounterId: string) => EncounterParts): void {
  const ranks = new Map<string, Map<string, number | undefined>>();
  for (const { row, fragment } of encounters.all) {
    const ofEncounter = new Map<string, number | undefined>();
    for (const diagnosis of fragment.diagnoses) {
      const resolved = resources.target(row, diagnosis.condition, 'Condition');
      if (resolved) ofEncounter.set(resolved.id, diagnosis.rank);
    }
    ranks.set(row.id, ofEncounter);
  }
  for (const { row, fragment } of resources.ofType<ConditionFragment>('Condition')) {
    const linked = [...ranks.entries()].filter(([, ofEncounter]) => ofEncounter.has(row.id)).map(([encounterId]) => encounterId);
    const own = resources.encounterOf(row, fragment.encounter);
    for (const encounterId of new Set([...linked, ...(own ? [own] : [])])) {
      const rank = ranks.get(encounterId)?.get(row.id);
      const list = of(encounterId).conditions;
      list.push(diagnosisOf(row, fragment, rank === 1 || (rank === undefined && list.length === 0) ? 0 : 2, encounters.startOf(encounterId)));
    }
  }
}

const ARRIVED = ['arrived', 'triaged', 'in-progress', 'onleave', 'finished'];

/** Each encounter as an appointment and, once finished, its appointment result. */
export function assembleVisits(
  resources: PatientResources,
  encounters: Encounters,
  parts: ReadonlyMap<string, EncounterParts>,
  patientId: string,
): { appointments: Array<Item<AppointmentBody>>; results: Array<Item<AppointmentResultBody>> } {
  const appointments: Array<Item<AppointmentBody>> = [];
  const results: Array<Item<AppointmentResultBody>> = [];
  for (const { row, fragment } of encounters.all) {
    const business = encounters.businessOf(row.id)!;
    const doctor = resources.doctor(row, fragment.doctor) ?? NO_DOCTOR;
    const duration = fragment.minutes ?? 0;
    const arrived = ARRIVED.includes(fragment.status);
    const appointment: AppointmentBody = {
      id: row.id,
      patientId,
      business,
      created: fragment.at,
      start: fragment.at,
      doctor,
      services: fragment.services.map((service) => ({ ...service, duration })),
      duration,
      confirmationStatus: fragment.status === 'cancelled' ? 4 : arrived ? 2 : 0,
      clientAppear: arrived,
      resultId: encounters.resultIdOf(row.id),
    };
    appointments.push({ id: row.id, created: fragment.at, start: fragment.at, businessId: business.id, message: appointment });
    if (encounters.isFinished(row.id)) results.push(resultOf(row, fragment, { business, doctor, duration, patientId }, parts.get(row.id)));
  }
  return { appointments, results };
}

function resultOf(
  row: ResourceRow,
  fragment: EncounterFragment,
  visit: Pick<AppointmentResultBody, 'business' | 'doctor' | 'duration' | 'patientId'>,
  parts: EncounterParts | undefined,
): Item<AppointmentResultBody> {
  const created = fragment.end ?? fragment.at;
  const result: AppointmentResultBody = {
    id: row.id,
    patientId: visit.patientId,
    business: visit.business,
    created,
    start: fragment.at,
    doctor: visit.doctor,
    duration: visit.duration,
    anamnesis: fragment.reasons,
    medicalExaminationResult: parts?.observations ?? [],
    diagnosis: parts?.conditions ?? [],
    recommendations: parts?.recommendations ?? [],
    scheduledProcedures: parts?.procedures ?? [],
    prescriptions: parts?.prescriptions ?? [],
    diagnosticReportIds: parts?.reports ?? [],
    attachments: [],
    appointmentId: row.id,
  };
  return { id: row.id, created, start: fragment.at, businessId: visit.business.id, message: result };
}
