import type { Medication, PrescriptionInfo } from '../../../generated/ehr-types.js';
import type { ConditionFragment, MedicationFragment, MedicationRequestFragment } from '../mapping/fragments.ts';
import { addMinutes } from '../mapping/values.ts';
import { diagnosisOf, type Encounters } from './encounters.js';
import type { Item, PrescriptionBody } from './items.js';
import { NO_BUSINESS, NO_DOCTOR, type PatientResources, type ResourceRow } from './patient-resources.js';

/**
 * A patient's prescriptions, one per MedicationRequest; the PrescriptionInfo of each is returned
 * too, by row id (an encounter's result lists its own).
 */
export function assemblePrescriptions(
  resources: PatientResources,
  encounters: Encounters,
  patientId: string,
): { prescriptions: Array<Item<PrescriptionBody>>; infos: Map<string, PrescriptionInfo> } {
  const infos = new Map<string, PrescriptionInfo>();
  const prescriptions = resources.ofType<MedicationRequestFragment>('MedicationRequest').map(({ row, fragment }): Item<PrescriptionBody> => {
    const encounterId = resources.encounterOf(row, fragment.encounter);
    const info = prescriptionInfo(resources, row, fragment);
    infos.set(row.id, info);
    const diagnoses = fragment.reasonRefs.flatMap((alias) => {
      const condition = resources.ownTarget(row, alias, 'Condition');
      return condition ? [diagnosisOf(condition, condition.fragment as ConditionFragment, 0)] : [];
    });
    const business = resources.performingOrganization(row, fragment.performer) ?? encounters.businessOf(encounterId) ?? NO_BUSINESS;
    const message: PrescriptionBody = {
      ...info,
      recorderDoctor: info.recorderDoctor!,
      business,
      patientId,
      diagnoses,
      appointmentResultId: encounters.resultIdOf(encounterId),
    };
    return { id: row.id, created: fragment.at, businessId: business.id, cd10: diagnoses.map((diagnosis) => diagnosis.cd10.code).filter(Boolean), message };
  });
  return { prescriptions, infos };
}

function prescriptionInfo(resources: PatientResources, row: ResourceRow, fragment: MedicationRequestFragment): PrescriptionInfo {
  const medication = medicationOf(resources, row, fragment);
  const begin = fragment.validity.start ?? fragment.at;
  const end = fragment.validity.end ?? (fragment.supplyMinutes === undefined ? begin : addMinutes(begin, fragment.supplyMinutes));
  return {
    id: row.id,
    created: fragment.at,
    recorderDoctor: resources.doctor(row, fragment.requester) ?? resources.doctor(row, fragment.recorder) ?? NO_DOCTOR,
    medications: [medication],
    dosageText: fragment.dosageText,
    reasonText: fragment.reasons.join('; '),
    validityPeriod: { begin, end },
    numberOfRepeats: fragment.repeats,
    title: medication.name,
  };
}

/** The medication of the request itself, else the Medication it references, with the request's dosage. */
function medicationOf(resources: PatientResources, row: ResourceRow, fragment: MedicationRequestFragment): Medication {
  const shared = resources.fragmentOf<MedicationFragment>(
    fragment.medicationRef ? resources.target(row, fragment.medicationRef.alias, 'Medication') : undefined,
  );
  const base = fragment.medication ?? shared ?? { name: fragment.medicationRef?.display ?? '', code: '', codeTable: '' };
  return {
    ...base,
    dosageText: fragment.dosageText,
    ...(fragment.amount === undefined ? {} : { amount: fragment.amount }),
    ...(fragment.durationText ? { durationText: fragment.durationText } : {}),
    dosageInstruction: fragment.dosage,
  };
}
