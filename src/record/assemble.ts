import type {
  AppointmentMessage,
  AppointmentResultMessage,
  BusinessInfo,
  Diagnosis,
  DiagnosticReportMessage,
  Doctor,
  Medication,
  PrescriptionInfo,
  PrescriptionMessage,
  Procedure,
} from '../../generated/ehr-types.js';
import type {
  ConditionFragment,
  DiagnosticReportFragment,
  EncounterFragment,
  LocationFragment,
  MedicationFragment,
  MedicationRequestFragment,
  ObservationFragment,
  OrganizationFragment,
  PractitionerFragment,
  ProcedureFragment,
  Ref,
  ServiceRequestFragment,
} from './fhir/fragments.js';
import { addMinutes } from './fhir/values.js';

/**
 * One patient's fragments stitched into the four kinds of item the SDK's apps list. Pure: the
 * caller loads the patient's rows and what their references name (src/record/import.ts), and
 * stores what this returns. Messages carry no patient: the reads attach it (it may change).
 */

/** A row of record_resources. */
export interface ResourceRow {
  id: string;
  source: string;
  resource_type: string;
  fhir_id: string;
  fragment: unknown;
}

/** What a reference resolved to: the resource's row (a shared one's fragment included). */
export interface Resolved {
  id: string;
  resource_type: string;
  fhir_id: string;
  fragment: unknown | null;
}

export type Resolver = (source: string, alias: string) => Resolved | undefined;

export type AppointmentBody = Omit<AppointmentMessage, 'patient'>;
export type AppointmentResultBody = Omit<AppointmentResultMessage, 'patient'>;
export type DiagnosticReportBody = Omit<DiagnosticReportMessage, 'patient'>;
export type PrescriptionBody = Omit<PrescriptionMessage, 'patientInfo'>;

export interface Item<M> {
  id: string;
  /** The keyset: unique within the patient's list. */
  created: string;
  start?: string;
  businessId: string;
  cd10?: string[];
  message: M;
}

export interface AssembledRecord {
  appointments: Array<Item<AppointmentBody>>;
  results: Array<Item<AppointmentResultBody>>;
  reports: Array<Item<DiagnosticReportBody>>;
  prescriptions: Array<Item<PrescriptionBody>>;
}

const NO_DOCTOR: Doctor = { id: '', surname: '', name: '', specialization: { id: '', name: '' } };
const NO_BUSINESS: BusinessInfo = { id: '', name: '', location: '', networkId: '' };

/** Items of one list whose keyset instants coincide are placed 1 ms apart, in the order of their source ids. */
export function spreadCreated<M>(items: Array<Item<M>>, order: Map<string, string>, setCreated: (message: M, created: string) => void): void {
  items.sort((a, b) => (a.created < b.created ? -1 : a.created > b.created ? 1 : (order.get(a.id) ?? '') < (order.get(b.id) ?? '') ? -1 : 1));
  let previous = -Infinity;
  for (const item of items) {
    const at = Math.max(Date.parse(item.created), previous + 1);
    if (at !== Date.parse(item.created)) {
      item.created = new Date(at).toISOString();
      setCreated(item.message, item.created);
    }
    previous = at;
  }
}

export function assemblePatient(patientId: string, rows: readonly ResourceRow[], resolve: Resolver): AssembledRecord {
  const byId = new Map(rows.map((row) => [row.id, row]));
  const fhirIds = new Map(rows.map((row) => [row.id, row.fhir_id]));
  const ofType = <F>(type: string) => rows.filter((row) => row.resource_type === type && !(row.fragment as { hidden?: boolean }).hidden).map((row) => ({ row, fragment: row.fragment as F }));

  const target = (row: ResourceRow, alias: string | undefined, type: string): Resolved | undefined => {
    if (!alias) return undefined;
    const found = resolve(row.source, alias);
    return found?.resource_type === type ? found : undefined;
  };
  const fragmentOf = <F>(resolved: Resolved | undefined): F | undefined => (resolved ? ((resolved.fragment ?? byId.get(resolved.id)?.fragment) as F | undefined) : undefined);
  const doctor = (row: ResourceRow, reference: Ref | undefined): Doctor | undefined => {
    if (!reference) return undefined;
    const practitioner = target(row, reference.alias, 'Practitioner');
    const fragment = fragmentOf<PractitionerFragment>(practitioner);
    if (fragment) return { id: practitioner!.fhir_id, ...fragment.doctor };
    return reference.display ? { ...NO_DOCTOR, name: reference.display } : undefined;
  };
  const organization = (row: ResourceRow, reference: Ref | undefined): BusinessInfo | undefined => {
    if (!reference) return undefined;
    const resolved = target(row, reference.alias, 'Organization');
    const fragment = fragmentOf<OrganizationFragment>(resolved);
    if (!fragment) return reference.display ? { ...NO_BUSINESS, name: reference.display } : undefined;
    const parent = fragment.partOf ? target(row, fragment.partOf.alias, 'Organization') : undefined;
    const parentFragment = fragmentOf<OrganizationFragment>(parent);
    return { id: fragment.oid ?? resolved!.fhir_id, name: fragment.name, location: fragment.address, networkId: parentFragment ? (parentFragment.oid ?? parent!.fhir_id) : '' };
  };
  const business = (row: ResourceRow, provider: Ref | undefined, locationRef: Ref | undefined): BusinessInfo => {
    const location = fragmentOf<LocationFragment>(locationRef ? target(row, locationRef.alias, 'Location') : undefined);
    const found = organization(row, provider) ?? organization(row, location?.organization);
    const place = location ? [location.name, location.address].filter(Boolean).join(', ') : '';
    return { ...(found ?? NO_BUSINESS), ...(place ? { location: place } : {}) };
  };
  /** The Encounter row a resource's encounter alias names, when it is this patient's. */
  const encounterOf = (row: ResourceRow, alias: string | undefined): string | undefined => {
    const resolved = target(row, alias, 'Encounter');
    return resolved && byId.has(resolved.id) ? resolved.id : undefined;
  };

  const encounters = ofType<EncounterFragment>('Encounter');
  const finished = new Set(encounters.filter(({ fragment }) => fragment.status === 'finished').map(({ row }) => row.id));
  const businessOfEncounter = new Map(encounters.map(({ row, fragment }) => [row.id, business(row, fragment.serviceProvider, fragment.location)]));
  const resultIdOf = (encounterId: string | undefined) => (encounterId && finished.has(encounterId) ? encounterId : '');

  const conditions = ofType<ConditionFragment>('Condition');
  const diagnosisOf = (row: ResourceRow, fragment: ConditionFragment, kind: 0 | 2, encounterStart?: string): Diagnosis => {
    let type: 0 | 1 | 2 = 0;
    if (fragment.onset && encounterStart && fragment.onset < encounterStart) type = 2;
    else if (fragment.chronicProblem) type = 1;
    return { id: row.fhir_id, cd10: fragment.cd10, diagnosisText: fragment.text, kind, type };
  };

  // Reports
  const reportRows = ofType<DiagnosticReportFragment>('DiagnosticReport');
  const inReports = new Set<string>();
  const reports: Array<Item<DiagnosticReportBody>> = reportRows.map(({ row, fragment }) => {
    const encounterId = encounterOf(row, fragment.encounter);
    const result = fragment.results.flatMap((alias) => {
      const resolved = target(row, alias, 'Observation');
      const observation = resolved && byId.get(resolved.id);
      if (!observation || (observation.fragment as ObservationFragment).hidden) return [];
      inReports.add(observation.id);
      return [(observation.fragment as ObservationFragment).observation];
    });
    const interpreters = fragment.interpreters.map((reference) => doctor(row, reference)).filter((value): value is Doctor => value !== undefined);
    const performingDoctors = fragment.performers.filter((reference) => target(row, reference.alias, 'Practitioner')).map((reference) => doctor(row, reference)!);
    const performingOrganization = fragment.performers.map((reference) => organization(row, target(row, reference.alias, 'Organization') ? reference : undefined)).find(Boolean);
    const reportBusiness = performingOrganization ?? (encounterId ? businessOfEncounter.get(encounterId) : undefined) ?? NO_BUSINESS;
    const begin = fragment.effective.start ?? fragment.at;
    const message: DiagnosticReportBody = {
      id: row.id,
      status: fragment.status,
      business: reportBusiness,
      patientId,
      type: fragment.laboratory ? 2 : 1,
      category: fragment.category,
      effectivePeriod: { begin, end: fragment.effective.end ?? begin },
      issuedDate: fragment.at,
      result,
      resultInterpreter: interpreters.length > 0 ? interpreters : performingDoctors,
      resultInterpretation: fragment.conclusion,
      imagineMedia: [],
      attachments: fragment.attachments,
      services: fragment.services,
      appointmentResultId: resultIdOf(encounterId),
    };
    return { id: row.id, created: fragment.at, businessId: reportBusiness.id, message };
  });

  // Prescriptions
  const requestRows = ofType<MedicationRequestFragment>('MedicationRequest');
  const medicationOf = (row: ResourceRow, fragment: MedicationRequestFragment): Medication => {
    const shared = fragmentOf<MedicationFragment>(fragment.medicationRef ? target(row, fragment.medicationRef.alias, 'Medication') : undefined);
    const base = fragment.medication ?? shared ?? { name: fragment.medicationRef?.display ?? '', code: '', codeTable: '' };
    return {
      ...base,
      dosageText: fragment.dosageText,
      ...(fragment.amount === undefined ? {} : { amount: fragment.amount }),
      ...(fragment.durationText ? { durationText: fragment.durationText } : {}),
      dosageInstruction: fragment.dosage,
    };
  };
  const prescriptionInfo = new Map<string, PrescriptionInfo>();
  const prescriptions: Array<Item<PrescriptionBody>> = requestRows.map(({ row, fragment }) => {
    const encounterId = encounterOf(row, fragment.encounter);
    const medication = medicationOf(row, fragment);
    const begin = fragment.validity.start ?? fragment.at;
    const end = fragment.validity.end ?? (fragment.supplyMinutes === undefined ? begin : addMinutes(begin, fragment.supplyMinutes));
    const diagnoses = fragment.reasonRefs.flatMap((alias) => {
      const resolved = target(row, alias, 'Condition');
      const condition = resolved && byId.get(resolved.id);
      return condition ? [diagnosisOf(condition, condition.fragment as ConditionFragment, 0)] : [];
    });
    const performer = organization(row, fragment.performer && target(row, fragment.performer.alias, 'Organization') ? fragment.performer : undefined);
    const prescriptionBusiness = performer ?? (encounterId ? businessOfEncounter.get(encounterId) : undefined) ?? NO_BUSINESS;
    const info: PrescriptionInfo = {
      id: row.id,
      created: fragment.at,
      recorderDoctor: doctor(row, fragment.requester) ?? doctor(row, fragment.recorder) ?? NO_DOCTOR,
      medications: [medication],
      dosageText: fragment.dosageText,
      reasonText: fragment.reasons.join('; '),
      validityPeriod: { begin, end },
      numberOfRepeats: fragment.repeats,
      title: medication.name,
    };
    prescriptionInfo.set(row.id, info);
    const message: PrescriptionBody = {
      ...info,
      recorderDoctor: info.recorderDoctor!,
      business: prescriptionBusiness,
      patientId,
      diagnoses,
      appointmentResultId: resultIdOf(encounterId),
    };
    return { id: row.id, created: fragment.at, businessId: prescriptionBusiness.id, cd10: diagnoses.map((diagnosis) => diagnosis.cd10.code).filter(Boolean), message };
  });

  // Everything else of an encounter, for its result
  const byEncounter = new Map<string, { conditions: Diagnosis[]; observations: string[]; procedures: Procedure[]; recommendations: Procedure[]; prescriptions: PrescriptionInfo[]; reports: string[] }>();
  const bucket = (encounterId: string) => {
    let found = byEncounter.get(encounterId);
    if (!found) byEncounter.set(encounterId, (found = { conditions: [], observations: [], procedures: [], recommendations: [], prescriptions: [], reports: [] }));
    return found;
  };
  const encounterStart = new Map(encounters.map(({ row, fragment }) => [row.id, fragment.at]));
  const encounterDiagnoses = new Map<string, Map<string, number | undefined>>();
  for (const { row, fragment } of encounters) {
    const ranks = new Map<string, number | undefined>();
    for (const diagnosis of fragment.diagnoses) {
      const resolved = target(row, diagnosis.condition, 'Condition');
      if (resolved) ranks.set(resolved.id, diagnosis.rank);
    }
    encounterDiagnoses.set(row.id, ranks);
  }
  for (const { row, fragment } of conditions) {
    const linked = [...encounterDiagnoses.entries()].filter(([, ranks]) => ranks.has(row.id)).map(([encounterId]) => encounterId);
    const own = encounterOf(row, fragment.encounter);
    for (const encounterId of new Set([...linked, ...(own ? [own] : [])])) {
      const rank = encounterDiagnoses.get(encounterId)?.get(row.id);
      const list = bucket(encounterId).conditions;
      list.push(diagnosisOf(row, fragment, rank === 1 || (rank === undefined && list.length === 0) ? 0 : 2, encounterStart.get(encounterId)));
    }
  }
  for (const { row, fragment } of ofType<ObservationFragment>('Observation')) {
    const encounterId = encounterOf(row, fragment.encounter);
    if (encounterId && !inReports.has(row.id)) bucket(encounterId).observations.push(fragment.line);
  }
  const procedureOf = (row: ResourceRow, encounterId: string, fields: Pick<Procedure, 'title' | 'services' | 'type' | 'required' | 'status'>, at: string, end?: string): Procedure => ({
    id: row.id,
    created: at,
    ...fields,
    period: { begin: at, end: end ?? at },
    strictPeriod: { begin: at, end: end ?? at },
    preparations: [],
    requiredPreparations: [],
    appointmentResultId: resultIdOf(encounterId),
  });
  for (const { row, fragment } of ofType<ProcedureFragment>('Procedure')) {
    const encounterId = encounterOf(row, fragment.encounter);
    if (encounterId) bucket(encounterId).procedures.push(procedureOf(row, encounterId, { title: fragment.title, services: fragment.services, type: 1, required: true, status: fragment.status }, fragment.at, fragment.end));
  }
  for (const { row, fragment } of ofType<ServiceRequestFragment>('ServiceRequest')) {
    const encounterId = encounterOf(row, fragment.encounter);
    if (encounterId) {
      const at = fragment.occurrence.start ?? fragment.at;
      bucket(encounterId).recommendations.push(procedureOf(row, encounterId, { title: fragment.title, services: [fragment.service], type: fragment.laboratory ? 2 : 1, required: fragment.required, status: fragment.status }, at, fragment.occurrence.end));
    }
  }
  for (const { row, fragment } of requestRows) {
    const encounterId = encounterOf(row, fragment.encounter);
    if (!encounterId) continue;
    const info = prescriptionInfo.get(row.id)!;
    bucket(encounterId).recommendations.push(procedureOf(row, encounterId, { title: info.title, services: [{ id: info.medications[0]!.code, name: info.title }], type: 0, required: true, status: fragment.status }, info.validityPeriod.begin, info.validityPeriod.end));
    bucket(encounterId).prescriptions.push(info);
  }
  for (const { row, fragment } of reportRows) {
    const encounterId = encounterOf(row, fragment.encounter);
    if (encounterId) bucket(encounterId).reports.push(row.id);
  }

  const appointments: Array<Item<AppointmentBody>> = [];
  const results: Array<Item<AppointmentResultBody>> = [];
  for (const { row, fragment } of encounters) {
    const appointmentBusiness = businessOfEncounter.get(row.id)!;
    const visitDoctor = doctor(row, fragment.doctor) ?? NO_DOCTOR;
    const duration = fragment.minutes ?? 0;
    const arrived = ['arrived', 'triaged', 'in-progress', 'onleave', 'finished'].includes(fragment.status);
    const appointment: AppointmentBody = {
      id: row.id,
      patientId,
      business: appointmentBusiness,
      created: fragment.at,
      start: fragment.at,
      doctor: visitDoctor,
      services: fragment.services.map((service) => ({ ...service, duration })),
      duration,
      confirmationStatus: fragment.status === 'cancelled' ? 4 : arrived ? 2 : 0,
      clientAppear: arrived,
      resultId: resultIdOf(row.id),
    };
    appointments.push({ id: row.id, created: fragment.at, start: fragment.at, businessId: appointmentBusiness.id, message: appointment });
    if (!finished.has(row.id)) continue;
    const parts = byEncounter.get(row.id);
    const created = fragment.end ?? fragment.at;
    const result: AppointmentResultBody = {
      id: row.id,
      patientId,
      business: appointmentBusiness,
      created,
      start: fragment.at,
      doctor: visitDoctor,
      duration,
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
    results.push({ id: row.id, created, start: fragment.at, businessId: appointmentBusiness.id, message: result });
  }

  spreadCreated(appointments, fhirIds, (message, created) => (message.created = created));
  spreadCreated(results, fhirIds, (message, created) => (message.created = created));
  spreadCreated(reports, fhirIds, (message, created) => (message.issuedDate = created));
  spreadCreated(prescriptions, fhirIds, (message, created) => (message.created = created));
  return { appointments, results, reports, prescriptions };
}
