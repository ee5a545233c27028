import type { CountryCode } from 'libphonenumber-js';
import { getCountries } from 'libphonenumber-js';
import { toE164 } from '../../validation/phone.ts';
import { humanName, isObject, list, text } from './values.ts';

/** A patient of the patient source (ehr_patients), as the import hands it to the PatientWriter. */
export interface ImportedPatient {
  id: string;
  surname: string;
  name: string;
  middleName?: string;
  birthDate: string;
  gender: 1 | 2 | 3 | 4;
  phone?: string;
  email?: string;
  snils?: string;
  medcardNumber?: string;
  active: boolean;
}

/** Writes patients to the patient source (the МИС's table, ehr_patients): given by the program, which sits above both domains. */
export type PatientWriter = (patients: readonly ImportedPatient[]) => Promise<void>;

export const SNILS_SYSTEM = 'urn:oid:1.2.643.100.3';
const GENDER: Record<string, 1 | 2 | 3 | 4> = { male: 1, female: 2, other: 3, unknown: 4 };
const COUNTRIES = new Set<string>(getCountries());

/** The country of the first address, as the default of phones written without a country code; Russia when none is given. */
function phoneCountry(address: unknown): CountryCode {
  const country = text(list(address)[0]?.country).trim().toUpperCase();
  if (COUNTRIES.has(country)) return country as CountryCode;
  if (country === 'USA') return 'US';
  return 'RU';
}

function isMedcard(identifier: Record<string, unknown>): boolean {
  return list(isObject(identifier.type) ? identifier.type.coding : undefined).some((coding) => coding.code === 'MR');
}

/** СНИЛС XXX-XXX-XXX YY from its 11 digits, written with or without separators; undefined for anything else. */
function snilsOf(value: string): string | undefined {
  const digits = value.replace(/[\s-]/g, '');
  return /^\d{11}$/.test(digits) ? `${digits.slice(0, 3)}-${digits.slice(3, 6)}-${digits.slice(6, 9)} ${digits.slice(9)}` : undefined;
}

export type PatientMapping = { patient: ImportedPatient } | { problem: { path: string; message: string } };

/**
 * A FHIR Patient as a patient of the source: names from the official HumanName (given[1…] is the
 * middle name), SNILS from identifier system urn:oid:1.2.643.100.3, the medcard number from an
 * identifier of type MR, the first phone (mobile preferred) in E.164 read in the country of the
 * first address, the first e-mail. Gender: male 1, female 2, other 3, unknown or absent 4.
 */
export function patientOf(resource: Record<string, unknown>): PatientMapping {
  const { surname, name, middleName } = humanName(resource.name);
  if (!surname || !name) return { problem: { path: 'Patient.name', message: 'a family name and a given name are required by the patient source' } };
  if (typeof resource.birthDate !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(resource.birthDate))
    return { problem: { path: 'Patient.birthDate', message: 'a full birth date (YYYY-MM-DD) is required by the patient source' } };
  const identifiers = list(resource.identifier);
  const snilsIndex = identifiers.findIndex((identifier) => identifier.system === SNILS_SYSTEM);
  let snils: string | undefined;
  if (snilsIndex >= 0) {
    snils = snilsOf(text(identifiers[snilsIndex]!.value));
    if (!snils) return { problem: { path: `Patient.identifier[${snilsIndex}].value`, message: 'a СНИЛС has 11 digits' } };
  }
  const medcard = identifiers.find(isMedcard);
  const telecom = list(resource.telecom);
  const phones = telecom.filter((contact) => contact.system === 'phone' || contact.system === 'sms');
  const phoneContact = phones.find((contact) => contact.use === 'mobile') ?? phones[0];
  const phone = phoneContact ? toE164(text(phoneContact.value), phoneCountry(resource.address)) : undefined;
  const email = text(telecom.find((contact) => contact.system === 'email')?.value);
  return {
    patient: {
      id: String(resource.id),
      surname,
      name,
      ...(middleName ? { middleName } : {}),
      birthDate: resource.birthDate,
      gender: GENDER[text(resource.gender)] ?? 4,
      ...(phone ? { phone } : {}),
      ...(email ? { email } : {}),
      ...(snils ? { snils } : {}),
      ...(medcard && text(medcard.value).trim() ? { medcardNumber: text(medcard.value).trim() } : {}),
      active: resource.active !== false,
    },
  };
}
