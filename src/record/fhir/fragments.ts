import type { Cd10, Doctor, Dosage, DosageTiming, Medication, Observation, ObservationRange, ObservationValue, Service } from '../../../generated/ehr-types.js';
import { aliasOf } from './references.js';
import type { ImportedType } from './validate.js';
import { addressText, codings, conceptCode, conceptText, hasCode, humanName, instant, isObject, list, minutesBetween, minutesOf, oidOf, periodOf, text, type Json } from './values.js';

/**
 * Each imported FHIR resource mapped on its own to a fragment of the SDK's messages, with the
 * references it needs resolved later (as aliases, src/record/fhir/references.ts). The assembly
 * (src/record/assemble.ts) stitches a patient's fragments into the four kinds of item. What is
 * taken from where is said in specs/openrpc.json (each message's description) and in the table of
 * the README ("The medical record from FHIR R4").
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

const ENTERED_IN_ERROR = 'entered-in-error';

function ref(element: unknown): Ref | undefined {
  const alias = aliasOf(element);
  if (!alias) return undefined;
  const display = isObject(element) ? text(element.display) : '';
  return display ? { alias, display } : { alias };
}

function codeService(concept: unknown): Service {
  const coding = conceptCode(concept);
  return { id: text(coding?.code), name: conceptText(concept) };
}

/** ICD-10 systems: the WHO's and CMS's URIs, and the Russian НСИ МКБ-10 OID. */
const ICD10_SYSTEMS = ['http://hl7.org/fhir/sid/icd-10', 'http://hl7.org/fhir/sid/icd-10-cm', 'urn:oid:1.2.643.5.1.13.13.11.1005', 'urn:oid:1.2.643.2.69.1.1.1.1'];

export function cd10Of(concept: unknown): Cd10 {
  const coding = conceptCode(concept, ICD10_SYSTEMS);
  return { code: text(coding?.code), description: text(coding?.display) || conceptText(concept) };
}

function practitioner(resource: Json): PractitionerFragment {
  const { surname, name } = humanName(resource.name);
  const qualification = list(resource.qualification)[0];
  const code = qualification ? conceptCode(qualification.code) : undefined;
  return { doctor: { surname, name, specialization: { id: text(code?.code), name: qualification ? conceptText(qualification.code) : '' } } };
}

function organization(resource: Json): OrganizationFragment {
  const oid = oidOf(resource.identifier);
  const partOf = ref(resource.partOf);
  return { name: text(resource.name), ...(oid ? { oid } : {}), address: addressText(resource.address), ...(partOf ? { partOf } : {}) };
}

function location(resource: Json): LocationFragment {
  const organization = ref(resource.managingOrganization);
  return { name: text(resource.name), address: addressText(resource.address), ...(organization ? { organization } : {}) };
}

/** The SDK's MedicationForm (0 powder, 1 tablets, 2 capsule) from the form's text, else the medication's name. */
function formOf(...texts: string[]): 0 | 1 | 2 | undefined {
  const all = texts.join(' ');
  if (/tablet|таблет/i.test(all)) return 1;
  if (/capsul|капсул/i.test(all)) return 2;
  if (/powder|порош/i.test(all)) return 0;
  return undefined;
}

function medicationOf(concept: unknown, formText = ''): Omit<MedicationFragment, 'expirationDate'> {
  const coding = conceptCode(concept);
  const name = conceptText(concept);
  const form = formOf(formText, name);
  return { name, code: text(coding?.code), codeTable: text(coding?.system), ...(form === undefined ? {} : { form }) };
}

function medication(resource: Json): MedicationFragment {
  const expirationDate = instant(isObject(resource.batch) ? resource.batch.expirationDate : undefined);
  return { ...medicationOf(resource.code, conceptText(resource.form)), ...(expirationDate ? { expirationDate } : {}) };
}

const DOCTOR_PARTICIPATION = ['pprf', 'atnd'];

function encounter(resource: Json, context: MappingContext): EncounterFragment {
  const { start, end } = periodOf(resource.period);
  const participants = list(resource.participant).filter((participant) => aliasOf(participant.individual)?.startsWith('Practitioner'));
  const chosen = participants.find((participant) => hasCode(participant.type, DOCTOR_PARTICIPATION)) ?? participants[0];
  const doctor = chosen ? ref(chosen.individual) : undefined;
  const serviceProvider = ref(resource.serviceProvider);
  const location = ref(list(resource.location)[0]?.location);
  const minutes = minutesOf(resource.length) ?? minutesBetween(start, end);
  return {
    hidden: resource.status === ENTERED_IN_ERROR,
    status: text(resource.status),
    at: start ?? end ?? context.importedAt,
    ...(start ? { start } : {}),
    ...(end ? { end } : {}),
    ...(minutes === undefined ? {} : { minutes }),
    services: list(resource.type).map(codeService),
    ...(doctor ? { doctor } : {}),
    ...(serviceProvider ? { serviceProvider } : {}),
    ...(location ? { location } : {}),
    reasons: list(resource.reasonCode).map(conceptText).filter(Boolean),
    diagnoses: list(resource.diagnosis).flatMap((diagnosis) => {
      const condition = aliasOf(diagnosis.condition);
      return condition ? [{ condition, ...(typeof diagnosis.rank === 'number' ? { rank: diagnosis.rank } : {}) }] : [];
    }),
  };
}

function condition(resource: Json): ConditionFragment {
  const encounter = aliasOf(resource.encounter);
  const onset = instant(resource.onsetDateTime) ?? periodOf(resource.onsetPeriod).start;
  const active = hasCode(resource.clinicalStatus, ['active', 'recurrence', 'relapse']);
  return {
    hidden: hasCode(resource.verificationStatus, [ENTERED_IN_ERROR]),
    ...(encounter ? { encounter } : {}),
    cd10: cd10Of(resource.code),
    text: conceptText(resource.code),
    ...(onset ? { onset } : {}),
    chronicProblem: active && hasCode(resource.category, ['problem-list-item']),
  };
}

function quantityText(quantity: unknown): { value: string; unit: string; code: string } | undefined {
  if (!isObject(quantity) || typeof quantity.value !== 'number') return undefined;
  return { value: String(quantity.value), unit: text(quantity.unit) || text(quantity.code), code: text(quantity.code) };
}

/** value[x] of an Observation or of one of its components, as text. */
export function observationValue(element: Json): ObservationValue | undefined {
  const quantity = quantityText(element.valueQuantity);
  if (quantity) return { value: quantity.value, unit: quantity.unit, code: quantity.code, serializedValue: `${quantity.value} ${quantity.unit}`.trim() };
  if (isObject(element.valueCodeableConcept)) {
    const value = conceptText(element.valueCodeableConcept);
    return { value, code: text(conceptCode(element.valueCodeableConcept)?.code), serializedValue: value };
  }
  if (typeof element.valueString === 'string') return { value: element.valueString, serializedValue: element.valueString };
  for (const member of ['valueBoolean', 'valueInteger', 'valueDateTime', 'valueTime']) {
    const raw = element[member];
    if (typeof raw === 'boolean' || typeof raw === 'number' || typeof raw === 'string') return { value: String(raw), serializedValue: String(raw) };
  }
  if (isObject(element.valueRange)) {
    const low = quantityText(element.valueRange.low);
    const high = quantityText(element.valueRange.high);
    const unit = low?.unit ?? high?.unit ?? '';
    const value = `${low?.value ?? ''}–${high?.value ?? ''}`;
    return { value, unit, serializedValue: `${value} ${unit}`.trim() };
  }
  if (isObject(element.valueRatio)) {
    const value = `${quantityText(element.valueRatio.numerator)?.value ?? ''}/${quantityText(element.valueRatio.denominator)?.value ?? ''}`;
    return { value, serializedValue: value };
  }
  if (isObject(element.valuePeriod)) {
    const { start = '', end = '' } = periodOf(element.valuePeriod);
    return { value: `${start}–${end}`, serializedValue: `${start}–${end}` };
  }
  if (isObject(element.valueSampledData) && typeof element.valueSampledData.data === 'string') return { value: element.valueSampledData.data, serializedValue: element.valueSampledData.data };
  return undefined;
}

function rangesOf(element: Json): ObservationRange[] {
  return list(element.referenceRange).map((range) => {
    const low = isObject(range.low) && typeof range.low.value === 'number' ? range.low.value : undefined;
    const high = isObject(range.high) && typeof range.high.value === 'number' ? range.high.value : undefined;
    const unit = text(isObject(range.low) ? range.low.unit : undefined) || text(isObject(range.high) ? range.high.unit : undefined);
    return { ...(low === undefined ? {} : { low }), ...(high === undefined ? {} : { high }), ...(unit ? { unit } : {}), ...(typeof range.text === 'string' ? { text: range.text } : {}) };
  });
}

function interpretationsOf(concepts: unknown): string[] {
  return list(concepts).map((concept) => conceptText(concept) || text(codings(concept)[0]?.code)).filter(Boolean);
}

const LABORATORY = ['laboratory', 'lab'];

function observation(resource: Json, context: MappingContext): ObservationFragment {
  const encounter = aliasOf(resource.encounter);
  const effective = instant(resource.effectiveDateTime) ?? instant(resource.effectiveInstant) ? { start: instant(resource.effectiveDateTime) ?? instant(resource.effectiveInstant) } : periodOf(resource.effectivePeriod);
  const issued = instant(resource.issued);
  const at = effective.start ?? issued ?? context.importedAt;
  const type = hasCode(resource.category, LABORATORY) ? 2 : 1;
  const key = conceptText(resource.code);
  const components = list(resource.component).map((component) => ({
    type: type as 1 | 2,
    key: conceptText(component.code),
    value: observationValue(component) ?? { value: '', serializedValue: '' },
    ...(list(component.interpretation).length > 0 ? { interpretation: interpretationsOf(component.interpretation).join(', ') } : {}),
    ranges: rangesOf(component),
  }));
  const joined = components.map((component) => `${component.key} ${component.value.serializedValue}`.trim()).join('; ');
  const value = observationValue(resource) ?? { value: joined || conceptText(resource.dataAbsentReason), serializedValue: joined || conceptText(resource.dataAbsentReason) };
  const note = list(resource.note).map((annotation) => text(annotation.text)).filter(Boolean).join('\n');
  const observation: Observation = {
    id: String(resource.id),
    createdDate: at,
    type,
    observationKey: key,
    status: text(resource.status),
    effectivePeriod: { begin: at, end: effective.end ?? at },
    issuedDate: issued ?? at,
    value,
    ...(note ? { note } : {}),
    interpretation: interpretationsOf(resource.interpretation),
    ranges: rangesOf(resource),
    components,
  };
  return { hidden: resource.status === ENTERED_IN_ERROR, ...(encounter ? { encounter } : {}), observation, line: `${key}: ${value.serializedValue}` };
}

const PROCEDURE_STATUS: Record<string, 0 | 1 | 2 | 3> = { 'in-progress': 1, 'not-done': 2, stopped: 2, completed: 3 };

function procedure(resource: Json, context: MappingContext): ProcedureFragment {
  const encounter = aliasOf(resource.encounter);
  const performed = instant(resource.performedDateTime) ? { start: instant(resource.performedDateTime) } : periodOf(resource.performedPeriod);
  return {
    hidden: resource.status === ENTERED_IN_ERROR,
    at: performed.start ?? performed.end ?? context.importedAt,
    ...(encounter ? { encounter } : {}),
    title: conceptText(resource.code),
    services: [codeService(resource.code)],
    status: PROCEDURE_STATUS[text(resource.status)] ?? 0,
    ...performed,
  };
}

function diagnosticReport(resource: Json, context: MappingContext): DiagnosticReportFragment {
  const encounter = aliasOf(resource.encounter);
  const effective = instant(resource.effectiveDateTime) ? { start: instant(resource.effectiveDateTime) } : periodOf(resource.effectivePeriod);
  const issued = instant(resource.issued);
  const category = list(resource.category)[0];
  return {
    hidden: resource.status === ENTERED_IN_ERROR,
    at: issued ?? effective.start ?? effective.end ?? context.importedAt,
    ...(encounter ? { encounter } : {}),
    status: text(resource.status),
    category: category ? conceptText(category) : '',
    laboratory: hasCode(resource.category, ['lab', 'laboratory']),
    services: [codeService(resource.code)],
    effective,
    ...(issued ? { issued } : {}),
    results: list(resource.result).map(aliasOf).filter((alias): alias is string => alias !== undefined),
    interpreters: list(resource.resultsInterpreter).map(ref).filter((value): value is Ref => value !== undefined),
    performers: list(resource.performer).map(ref).filter((value): value is Ref => value !== undefined),
    conclusion: [text(resource.conclusion), ...list(resource.conclusionCode).map(conceptText)].filter(Boolean),
    attachments: list(resource.presentedForm).map((form) => text(form.url)).filter(Boolean),
  };
}

const REQUEST_STATUS: Record<string, 0 | 2 | 3> = { cancelled: 2, stopped: 2, revoked: 2, completed: 3 };

function timingOf(dosage: Json): DosageTiming | undefined {
  const timing = isObject(dosage.timing) ? dosage.timing : undefined;
  const repeat = timing && isObject(timing.repeat) ? timing.repeat : undefined;
  if (!timing) return undefined;
  const joined = (value: unknown) => (Array.isArray(value) ? value.filter((part) => typeof part === 'string').join(',') : '');
  const result: DosageTiming = {};
  const firstEvent = Array.isArray(timing.event) ? instant(timing.event[0]) : undefined;
  if (firstEvent) result.event = firstEvent;
  if (repeat) {
    for (const member of ['duration', 'frequency', 'frequencyMax', 'period', 'periodMax', 'offset', 'count'] as const) {
      if (typeof repeat[member] === 'number') (result as Record<string, unknown>)[member] = member === 'period' || member === 'periodMax' ? repeat[member] : Math.round(repeat[member] as number);
    }
    if (typeof repeat.durationUnit === 'string') result.durationUnit = repeat.durationUnit;
    if (typeof repeat.periodUnit === 'string') result.periodUnit = repeat.periodUnit;
    for (const member of ['dayOfWeek', 'timeOfDay', 'when'] as const) if (joined(repeat[member])) result[member] = joined(repeat[member]);
    const bounds = periodOf(repeat.boundsPeriod);
    if (bounds.start) result.periodStart = bounds.start;
    if (bounds.end) result.periodEnd = bounds.end;
  }
  return result;
}

function dosageOf(dosage: Json): Dosage {
  const timing = timingOf(dosage);
  const additional = list(dosage.additionalInstruction).map(conceptText).filter(Boolean).join('; ');
  return {
    text: text(dosage.text),
    ...(additional ? { additionalInstruction: additional } : {}),
    ...(typeof dosage.patientInstruction === 'string' ? { patientInstruction: dosage.patientInstruction } : {}),
    ...(timing ? { timing } : {}),
  };
}

function medicationRequest(resource: Json, context: MappingContext): MedicationRequestFragment {
  const encounter = aliasOf(resource.encounter);
  const dispense = isObject(resource.dispenseRequest) ? resource.dispenseRequest : {};
  const dosage = list(resource.dosageInstruction).map(dosageOf);
  const supply = isObject(dispense.expectedSupplyDuration) ? dispense.expectedSupplyDuration : undefined;
  const supplyMinutes = minutesOf(supply);
  const authoredOn = instant(resource.authoredOn);
  const requester = ref(resource.requester);
  const recorder = ref(resource.recorder);
  const performer = ref(resource.performer);
  const medicationRef = ref(resource.medicationReference);
  const amount = isObject(dispense.quantity) && typeof dispense.quantity.value === 'number' ? dispense.quantity.value : undefined;
  return {
    hidden: resource.status === ENTERED_IN_ERROR,
    at: authoredOn ?? context.importedAt,
    ...(encounter ? { encounter } : {}),
    status: REQUEST_STATUS[text(resource.status)] ?? 0,
    ...(authoredOn ? { authoredOn } : {}),
    ...(isObject(resource.medicationCodeableConcept) ? { medication: medicationOf(resource.medicationCodeableConcept) } : {}),
    ...(medicationRef ? { medicationRef } : {}),
    ...(requester ? { requester } : {}),
    ...(recorder ? { recorder } : {}),
    ...(performer ? { performer } : {}),
    dosage,
    dosageText: dosage.map((item) => item.text).filter(Boolean).join('\r\n'),
    reasons: [...list(resource.reasonCode).map(conceptText), ...list(resource.reasonReference).map((reason) => text(reason.display))].filter(Boolean),
    reasonRefs: list(resource.reasonReference).map(aliasOf).filter((alias): alias is string => alias !== undefined),
    validity: periodOf(dispense.validityPeriod),
    ...(supplyMinutes === undefined ? {} : { supplyMinutes }),
    durationText: supply && typeof supply.value === 'number' ? `${supply.value} ${text(supply.unit) || text(supply.code)}`.trim() : '',
    repeats: typeof dispense.numberOfRepeatsAllowed === 'number' ? dispense.numberOfRepeatsAllowed : 0,
    ...(amount === undefined ? {} : { amount }),
  };
}

function serviceRequest(resource: Json, context: MappingContext): ServiceRequestFragment {
  const encounter = aliasOf(resource.encounter);
  const authoredOn = instant(resource.authoredOn);
  const occurrence = instant(resource.occurrenceDateTime) ? { start: instant(resource.occurrenceDateTime) } : periodOf(resource.occurrencePeriod);
  return {
    hidden: resource.status === ENTERED_IN_ERROR,
    at: authoredOn ?? occurrence.start ?? context.importedAt,
    ...(encounter ? { encounter } : {}),
    title: conceptText(resource.code),
    service: codeService(resource.code),
    laboratory: hasCode(resource.category, ['108252007', 'laboratory', 'lab']),
    required: resource.priority === 'urgent' || resource.priority === 'asap' || resource.priority === 'stat' || resource.intent === 'order',
    status: REQUEST_STATUS[text(resource.status)] ?? 0,
    ...(authoredOn ? { authoredOn } : {}),
    occurrence,
  };
}

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
    encounter.diagnoses.forEach((diagnosis) => add(diagnosis.condition));
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
export const PATIENT_SCOPED: ReadonlySet<ImportedType> = new Set(['Encounter', 'Condition', 'Observation', 'Procedure', 'DiagnosticReport', 'MedicationRequest', 'ServiceRequest']);

/** Maps one valid resource of an imported type. */
export function mapResource(type: ImportedType, resource: Json, context: MappingContext): Mapped {
  const fragment = MAPPERS[type](resource, context);
  const subject = PATIENT_SCOPED.has(type) ? aliasOf(resource.subject) : undefined;
  return { fragment, ...(subject ? { subject } : {}), refs: referencesOf(type, fragment, subject) };
}
