import type { Cd10 } from '../../../generated/ehr-types.js';
import { aliasOf } from '../fhir/references.ts';
import type { ConditionFragment, EncounterFragment, MappingContext, ProcedureFragment, ServiceRequestFragment } from './fragments.ts';
import {
  codeService,
  conceptCode,
  conceptText,
  ENTERED_IN_ERROR,
  hasCode,
  instant,
  list,
  minutesBetween,
  minutesOf,
  periodOf,
  ref,
  REQUEST_STATUS,
  text,
  type Json,
} from './values.ts';

/** A visit and what happens in it (Encounter, Condition, Procedure, ServiceRequest), as fragments. */

const DOCTOR_PARTICIPATION = ['pprf', 'atnd'];

export function encounter(resource: Json, context: MappingContext): EncounterFragment {
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

export function condition(resource: Json): ConditionFragment {
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

/** ICD-10 systems: the WHO's and CMS's URIs, and the Russian НСИ МКБ-10 OID. */
const ICD10_SYSTEMS = [
  'http://hl7.org/fhir/sid/icd-10',
  'http://hl7.org/fhir/sid/icd-10-cm',
  'urn:oid:1.2.643.5.1.13.13.11.1005',
  'urn:oid:1.2.643.2.69.1.1.1.1',
];

export function cd10Of(concept: unknown): Cd10 {
  const coding = conceptCode(concept, ICD10_SYSTEMS);
  return { code: text(coding?.code), description: text(coding?.display) || conceptText(concept) };
}

const PROCEDURE_STATUS: Record<string, 0 | 1 | 2 | 3> = { 'in-progress': 1, 'not-done': 2, stopped: 2, completed: 3 };

export function procedure(resource: Json, context: MappingContext): ProcedureFragment {
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

export function serviceRequest(resource: Json, context: MappingContext): ServiceRequestFragment {
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
