import type { Knex } from 'knex';
import { statement, type Sql } from '../../db/sql.js';
import type { Gender, Patient } from '../../../generated/ehr-types.js';

/** Surnames and names compare trimmed, case-insensitive, with ё = е. */
export function nameKey(text: string): string {
  return text.normalize('NFC').trim().toLowerCase().replaceAll('ё', 'е');
}

export function medcardKey(text: string): string {
  return text.trim().toLowerCase();
}

export { toE164 } from '../../validation/phone.js';

/**
 * What identifies a patient at authenticate (see specs/openrpc.json): the phone (E.164), proven by
 * one-time password, is always a criterion; the MEDCARD strategy adds the medcard number. Gender is
 * not one: the peer's apps send it in two numberings (GenderCriterion in the spec).
 */
export interface MatchCriteria {
  surname: string;
  name: string;
  /** YYYY-MM-DD */
  birthDate: string;
  phone: string;
  medcardNumber?: string;
}

/**
 * Where patients come from: the МИС. The built-in source is the ehr_patients table; a remote
 * МИС can replace it by implementing this interface.
 */
export interface PatientSource {
  /** Patients matching the criteria; at most `limit` of them (callers only need to tell one from several). */
  findMatches(criteria: MatchCriteria, limit: number): Promise<Patient[]>;
  findById(id: string): Promise<Patient | undefined>;
}

/** A patient as the source keeps it: the wire shape with a plain birth date (YYYY-MM-DD) and one phone. */
export type PatientRecord = Omit<Patient, 'birthdate' | 'phones'> & { birthDate: string };

export interface PatientRow {
  id: string;
  surname: string;
  name: string;
  middle_name: string | null;
  birth_date: string;
  gender: number;
  phone: string | null;
  email: string | null;
  snils: string | null;
  medcard_number: string | null;
  active: boolean;
}

export function toPatient(row: PatientRow): Patient {
  return {
    id: row.id,
    surname: row.surname,
    name: row.name,
    ...(row.middle_name ? { middleName: row.middle_name } : {}),
    birthdate: `${row.birth_date} 00:00:00.000`,
    gender: row.gender as Gender,
    ...(row.phone ? { phone: row.phone } : {}),
    phones: row.phone ? [row.phone] : [],
    ...(row.email ? { email: row.email } : {}),
    ...(row.snils ? { snils: row.snils } : {}),
    ...(row.medcard_number ? { medcardNumber: row.medcard_number } : {}),
    active: row.active,
  };
}

/** The columns of a patient row as toPatient reads them (the birth date as YYYY-MM-DD text: no Date parsing, no time-zone shift). */
export const PATIENT_COLUMNS = `p.id, p.surname, p.name, p.middle_name, to_char(p.birth_date, 'YYYY-MM-DD') as birth_date, p.gender, p.phone, p.email, p.snils, p.medcard_number, p.active`;

const MATCHES = statement(
  'ehr_patient_matches',
  `select ${PATIENT_COLUMNS} from ehr_patients p
    where p.surname_key = $1 and p.name_key = $2 and p.birth_date = $3::date and p.phone = $4 and p.active
      and ($5::text is null or p.medcard_key = $5)
    order by p.id limit $6`,
);
const BY_ID = statement('ehr_patient_by_id', `select ${PATIENT_COLUMNS} from ehr_patients p where p.id = $1`);

export class TablePatientSource implements PatientSource {
  constructor(private readonly sql: Sql) {}

  async findMatches(criteria: MatchCriteria, limit: number): Promise<Patient[]> {
    const medcard = criteria.medcardNumber === undefined ? null : medcardKey(criteria.medcardNumber);
    const rows = await this.sql.rows<PatientRow>(MATCHES, [
      nameKey(criteria.surname),
      nameKey(criteria.name),
      criteria.birthDate,
      criteria.phone,
      medcard,
      limit,
    ]);
    return rows.map(toPatient);
  }

  async findById(id: string): Promise<Patient | undefined> {
    const row = await this.sql.row<PatientRow>(BY_ID, [id]);
    return row ? toPatient(row) : undefined;
  }
}

/** Inserts or updates patients by id, in the caller's transaction; returns how many. */
export async function upsertPatients(knex: Knex, patients: readonly PatientRecord[]): Promise<number> {
  const rows = patients.map((patient) => ({
    id: patient.id,
    surname: patient.surname.trim(),
    name: patient.name.trim(),
    middle_name: patient.middleName?.trim() || null,
    birth_date: patient.birthDate,
    gender: patient.gender,
    phone: patient.phone ?? null,
    email: patient.email ?? null,
    snils: patient.snils ?? null,
    medcard_number: patient.medcardNumber?.trim() || null,
    active: patient.active,
    surname_key: nameKey(patient.surname),
    name_key: nameKey(patient.name),
    medcard_key: patient.medcardNumber ? medcardKey(patient.medcardNumber) : null,
    updated_at: knex.fn.now(),
  }));
  // Batches keep each statement well under PostgreSQL's parameter limit.
  for (let start = 0; start < rows.length; start += 1000) {
    await knex('ehr_patients')
      .insert(rows.slice(start, start + 1000))
      .onConflict('id')
      .merge();
  }
  return rows.length;
}

/** Demo patients of the built-in source, for local runs and trying the flow by hand. */
export const DEMO_PATIENTS: readonly PatientRecord[] = [
  {
    id: 'demo-1',
    surname: 'Иванова',
    name: 'Мария',
    middleName: 'Петровна',
    birthDate: '1990-05-17',
    gender: 2,
    phone: '+79161234567',
    email: 'maria@example.org',
    snils: '112-233-445 95',
    medcardNumber: 'MC-0001',
    active: true,
  },
  {
    id: 'demo-2',
    surname: 'Фёдоров',
    name: 'Алексей',
    middleName: 'Иванович',
    birthDate: '1985-11-02',
    gender: 1,
    phone: '+79031112233',
    medcardNumber: 'MC-0002',
    active: true,
  },
  {
    id: 'demo-3',
    surname: 'Smith',
    name: 'Anna',
    birthDate: '1972-01-30',
    gender: 2,
    phone: '+74951234567',
    email: 'anna.smith@example.org',
    medcardNumber: 'MC-0003',
    active: true,
  },
];

/** Idempotent: upserts the demo patients by their fixed ids; returns how many. */
export async function seedDemoPatients(knex: Knex): Promise<number> {
  return knex.transaction((trx) => upsertPatients(trx, DEMO_PATIENTS));
}
