import type { Patient, PatientInfo } from '../../../generated/ehr-types.js';
import { statement, type Sql } from '../../db/sql.js';
import { findApiKey, type ApiKeyAccount } from '../credentials/api-keys.js';
import { EhrErrors } from '../errors.js';
import { PATIENT_COLUMNS, toPatient, type PatientRow } from '../patients/patients.js';
import type { CallContext } from '../rpc/envelope.js';
import { tokenHash } from '../credentials/secrets.js';

/**
 * Who calls a medical-record method: an end user, whose session names one patient, or a back-office
 * api key, which names organizations. The rules are specs/openrpc.json's (the document's
 * description and -33403).
 */
export type RecordCaller = { kind: 'user'; patient: Patient } | { kind: 'apiKey'; key: ApiKeyAccount };

/** The session, its user's link and the patient, in one query. */
const SESSION_PATIENT = statement(
  'ehr_record_session_patient',
  `select s.user_id, (extract(epoch from s.expires_at) * 1000)::float8 as expires_ms, l.patient_id, ${PATIENT_COLUMNS}
     from ehr_sessions s
     left join ehr_user_links l on l.user_id = s.user_id
     left join ehr_patients p on p.id = l.patient_id
    where s.token_hash = $1`,
);

const NO_SESSION = 'no stored session for these credentials';

export class RecordAccess {
  constructor(private readonly sql: Sql) {}

  /** The caller of a patient's method: `cred` when sent, else `apiKey`; neither is -33000. */
  async patientCaller({ cred, apiKey }: CallContext): Promise<RecordCaller> {
    if (cred) return { kind: 'user', patient: await this.sessionPatient(cred) };
    if (apiKey !== undefined) return { kind: 'apiKey', key: await this.apiKey(apiKey) };
    throw EhrErrors.notAuthorized('no credentials: send cred or apiKey');
  }

  /** The api key of a back-office method; an end user's `cred` alone is -33403, nothing at all -33000. */
  async backOfficeKey({ cred, apiKey }: CallContext): Promise<ApiKeyAccount> {
    if (apiKey !== undefined) return this.apiKey(apiKey);
    if (cred) throw EhrErrors.accessForbidden('this method takes an api key');
    throw EhrErrors.notAuthorized('no credentials: send cred or apiKey');
  }

  private async apiKey(key: string): Promise<ApiKeyAccount> {
    const account = await findApiKey(this.sql, key);
    if (!account) throw EhrErrors.notAuthorized('api key rejected');
    return account;
  }

  private async sessionPatient(cred: NonNullable<CallContext['cred']>): Promise<Patient> {
    const now = Date.now();
    const row = await this.sql.row<{ user_id: string; expires_ms: number; patient_id: string | null } & Partial<PatientRow>>(SESSION_PATIENT, [
      tokenHash(cred.token),
    ]);
    if (!row || row.user_id !== cred.user) throw EhrErrors.notAuthorized(NO_SESSION);
    if (row.expires_ms <= now) throw EhrErrors.authExpired('session expired');
    if (!row.patient_id) throw EhrErrors.notAuthorized(NO_SESSION);
    if (!row.id || !row.active) throw EhrErrors.patientNotFound('patient no longer active in the patient source');
    return toPatient(row as PatientRow);
  }
}

/** The patient as items carry it (the peer's PatientInfo). */
export function patientInfoOf(patient: Patient): PatientInfo {
  return {
    id: patient.id,
    surname: patient.surname,
    name: patient.name,
    ...(patient.middleName ? { middleName: patient.middleName } : {}),
    phones: patient.phones,
    ...(patient.email ? { email: patient.email } : {}),
    gender: patient.gender,
    birthdate: patient.birthdate,
    ...(patient.medcardNumber ? { medcardNumber: patient.medcardNumber } : {}),
  };
}
