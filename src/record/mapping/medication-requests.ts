import type { Dosage, DosageTiming } from '../../../generated/ehr-types.js';
import { aliasOf } from '../fhir/references.ts';
import type { MappingContext, MedicationRequestFragment } from './fragments.ts';
import { medicationOf } from './shared-resources.ts';
import { conceptText, ENTERED_IN_ERROR, instant, isObject, list, minutesOf, periodOf, ref, REQUEST_STATUS, text, type Json } from './values.ts';

/** A MedicationRequest, with its dosage and timing, as a fragment. */

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
      if (typeof repeat[member] === 'number')
        (result as Record<string, unknown>)[member] = member === 'period' || member === 'periodMax' ? repeat[member] : Math.round(repeat[member] as number);
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

export function medicationRequest(resource: Json, context: MappingContext): MedicationRequestFragment {
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
    dosageText: dosage
      .map((item) => item.text)
      .filter(Boolean)
      .join('\r\n'),
    reasons: [...list(resource.reasonCode).map(conceptText), ...list(resource.reasonReference).map((reason) => text(reason.display))].filter(Boolean),
    reasonRefs: list(resource.reasonReference)
      .map(aliasOf)
      .filter((alias): alias is string => alias !== undefined),
    validity: periodOf(dispense.validityPeriod),
    ...(supplyMinutes === undefined ? {} : { supplyMinutes }),
    durationText: supply && typeof supply.value === 'number' ? `${supply.value} ${text(supply.unit) || text(supply.code)}`.trim() : '',
    repeats: typeof dispense.numberOfRepeatsAllowed === 'number' ? dispense.numberOfRepeatsAllowed : 0,
    ...(amount === undefined ? {} : { amount }),
  };
}
