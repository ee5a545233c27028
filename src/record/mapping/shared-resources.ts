import type { LocationFragment, MedicationFragment, OrganizationFragment, PractitionerFragment } from './fragments.ts';
import { addressText, conceptCode, conceptText, humanName, instant, isObject, list, oidOf, ref, text, type Json } from './values.ts';

/** The resources a source's patients share (doctors, organizations, their locations, medications), as fragments. */

export function practitioner(resource: Json): PractitionerFragment {
  const { surname, name } = humanName(resource.name);
  const qualification = list(resource.qualification)[0];
  const code = qualification ? conceptCode(qualification.code) : undefined;
  return { doctor: { surname, name, specialization: { id: text(code?.code), name: qualification ? conceptText(qualification.code) : '' } } };
}

export function organization(resource: Json): OrganizationFragment {
  const oid = oidOf(resource.identifier);
  const partOf = ref(resource.partOf);
  return { name: text(resource.name), ...(oid ? { oid } : {}), address: addressText(resource.address), ...(partOf ? { partOf } : {}) };
}

export function location(resource: Json): LocationFragment {
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

export function medicationOf(concept: unknown, formText = ''): Omit<MedicationFragment, 'expirationDate'> {
  const coding = conceptCode(concept);
  const name = conceptText(concept);
  const form = formOf(formText, name);
  return { name, code: text(coding?.code), codeTable: text(coding?.system), ...(form === undefined ? {} : { form }) };
}

export function medication(resource: Json): MedicationFragment {
  const expirationDate = instant(isObject(resource.batch) ? resource.batch.expirationDate : undefined);
  return { ...medicationOf(resource.code, conceptText(resource.form)), ...(expirationDate ? { expirationDate } : {}) };
}
