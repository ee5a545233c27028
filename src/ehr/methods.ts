import type { Knex } from 'knex';
import type {
  AuthInfo,
  EmbeddedStorageAuthenticateParams,
  EmbeddedStorageAuthenticateResult,
  EmbeddedStorageRemoveAuthenticationResult,
  EmbeddedStorageRemoveAuthInfoResult,
  EmbeddedStorageSaveAuthInfoParams,
  EmbeddedStorageSaveAuthInfoResult,
  EmbeddedStorageSaveExchangeTokenParams,
  EmbeddedStorageSaveExchangeTokenResult,
  PatientGetPatientResult,
} from '../../generated/ehr-types.js';
import type { Config } from '../config/config.js';
import type { Logger } from '../logging/logger.js';
import { EhrErrors, invalidParam, isUniqueViolation } from './errors.js';
import { TablePatientSource, toE164, type MatchCriteria, type PatientSource } from './patients.js';
import type { CallContext, Credentials, MethodHandler } from './rpc/envelope.js';
import { resolveDataKey } from '../db/encryption.js';
import { internalCredentialToken, newUserSign, openUserSign, sameSecret, sealUserSign, tokenHash } from './secrets.js';

/** Failed authenticate attempts after which an exchange token is burned. */
export const MAX_FAILED_ATTEMPTS = 5;

const CREDENTIALS_REJECTED = 'credentials rejected';
const EXCHANGE_TOKEN_UNUSABLE = 'exchange token unknown, used or burned';
const NO_SESSION = 'no stored session for these credentials';

export interface EhrDependencies {
  knex: Knex;
  config: Config;
  logger: Logger;
  /** Defaults to the ehr_patients table. */
  patientSource?: PatientSource;
}

interface LinkRow {
  user_id: string;
  patient_id: string;
  user_sign_sealed: Buffer;
}

interface SessionRow {
  user_id: string;
  expires_at: Date;
}

interface ExchangeTokenRow {
  token_hash: Buffer;
  user_id: string;
  session_token_hash: Buffer;
  session_expires_at: Date;
  expires_at: Date;
  failed_attempts: number;
  state: 'pending' | 'used' | 'burned';
}

/** `created` of authInfo (ISO 8601 or `YYYY-MM-DD HH:MM:SS.fffffff`, UTC without a zone) as epoch milliseconds. */
function parseInputDateTime(text: string): number {
  const match = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:\.(\d{1,7}))?(Z|[+-]\d{2}:?\d{2})?$/.exec(text)!;
  const fraction = (match[3] ?? '').padEnd(3, '0').slice(0, 3);
  const zone = match[4] === undefined || match[4] === 'Z' ? 'Z' : match[4].replace(/^([+-]\d{2})(\d{2})$/, '$1:$2');
  return Date.parse(`${match[1]}T${match[2]}.${fraction}${zone}`);
}

/** The date part of patientProperties.date, checked to be a calendar date. */
function birthDateOf(text: string): string {
  const date = text.slice(0, 10);
  const parsed = new Date(`${date}T00:00:00Z`);
  if (Number.isNaN(parsed.getTime()) || parsed.toISOString().slice(0, 10) !== date) {
    throw invalidParam('/patientProperties/date', 'is not a calendar date');
  }
  return date;
}

/** The JSON-RPC methods of interface A, over PostgreSQL. */
export async function createEhrHandlers(dependencies: EhrDependencies): Promise<Record<string, MethodHandler>> {
  const { knex, config } = dependencies;
  const patients = dependencies.patientSource ?? new TablePatientSource(knex);
  const userSignKey = await resolveDataKey(config);
  const ttlUnitMs = config.authTtlUnit === 'minutes' ? 60_000 : 1_000;

  /** When the session of authInfo ends; -33001 when it has ended already. */
  function sessionExpiry(authInfo: AuthInfo, now: number): Date {
    const start = authInfo.created === undefined ? now : parseInputDateTime(authInfo.created);
    const expiresAt = start + authInfo.ttl * ttlUnitMs;
    if (Number.isNaN(expiresAt)) throw invalidParam('/authInfo/created', 'is not a date-time');
    if (expiresAt <= now) throw EhrErrors.authExpired('authInfo already expired');
    return new Date(expiresAt);
  }

  /** The internal account's password, when cred names a configured internal user. */
  function internalPassword(cred: Credentials | undefined): string {
    const password = cred ? config.internalUsers.get(cred.user) : undefined;
    if (password === undefined) throw EhrErrors.notAuthorized(CREDENTIALS_REJECTED);
    return password;
  }

  function checkInternalToken(cred: Credentials | undefined, secondValue: string): void {
    const password = internalPassword(cred);
    if (!sameSecret(cred!.token, internalCredentialToken(password, secondValue))) throw EhrErrors.notAuthorized(CREDENTIALS_REJECTED);
  }

  /** The live or expired session of `cred`: -34001 when there is none for exactly this user and token. */
  async function sessionOf(cred: Credentials | undefined): Promise<SessionRow & { token_hash: Buffer }> {
    if (!cred) throw EhrErrors.patientNotAuthenticated(NO_SESSION);
    const hash = tokenHash(cred.token);
    const session = (await knex('ehr_sessions').where({ token_hash: hash }).first('user_id', 'expires_at')) as SessionRow | undefined;
    if (!session || session.user_id !== cred.user) throw EhrErrors.patientNotAuthenticated(NO_SESSION);
    return { ...session, token_hash: hash };
  }

  async function liveSessionOf(cred: Credentials | undefined): Promise<SessionRow> {
    const session = await sessionOf(cred);
    if (session.expires_at.getTime() <= Date.now()) throw EhrErrors.authExpired('session expired');
    return session;
  }

  /** The user's match to a patient: the existing one, or a new one with a new user_sign (the unique key settles races). */
  async function linkUser(trx: Knex.Transaction, userId: string, patientId: string): Promise<LinkRow> {
    await trx('ehr_user_links')
      .insert({ user_id: userId, patient_id: patientId, user_sign_sealed: sealUserSign(userSignKey, userId, newUserSign()) })
      .onConflict('user_id')
      .ignore();
    return (await trx('ehr_user_links').where({ user_id: userId }).first()) as LinkRow;
  }

  async function matchCriteria(params: EmbeddedStorageAuthenticateParams): Promise<MatchCriteria> {
    const properties = params.patientProperties;
    const identity = { surname: properties.surname, name: properties.name, birthDate: birthDateOf(properties.date), gender: properties.gender };
    if (params.searchStrategy === 'MEDCARD') {
      if (!params.medCardId?.trim()) throw invalidParam('/medCardId', 'is required when searchStrategy is MEDCARD');
      return { ...identity, strategy: 'MEDCARD', medcardNumber: params.medCardId };
    }
    const phone = toE164(properties.phone);
    if (!phone) throw invalidParam('/patientProperties/phone', 'is not a phone number');
    return { ...identity, strategy: 'PHONE', phone };
  }

  const saveExchangeToken = async (raw: Record<string, unknown>, { cred }: CallContext): Promise<EmbeddedStorageSaveExchangeTokenResult> => {
    const params = raw as unknown as EmbeddedStorageSaveExchangeTokenParams;
    checkInternalToken(cred, params.exchangeToken);
    const now = Date.now();
    const sessionExpiresAt = sessionExpiry(params.authInfo, now);
    const expiresAt = new Date(now + config.exchangeTokenTtlMs);
    try {
      await knex('ehr_exchange_tokens').insert({
        token_hash: tokenHash(params.exchangeToken),
        user_id: params.authInfo.user,
        session_token_hash: tokenHash(params.authInfo.token),
        session_expires_at: sessionExpiresAt,
        expires_at: expiresAt,
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw EhrErrors.saveExchangeTokenError('exchange token already stored');
      throw error;
    }
    return { success: true, expiresAt: expiresAt.toISOString() };
  };

  const saveAuthInfo = async (raw: Record<string, unknown>, { cred }: CallContext): Promise<EmbeddedStorageSaveAuthInfoResult> => {
    const { authInfo } = raw as unknown as EmbeddedStorageSaveAuthInfoParams;
    const password = internalPassword(cred);
    const link = (await knex('ehr_user_links').where({ user_id: authInfo.user }).first()) as LinkRow | undefined;
    if (!link) throw EhrErrors.userNotFound('no internalUserId for this user');
    const userSign = openUserSign(userSignKey, link.user_id, link.user_sign_sealed);
    if (!sameSecret(cred!.token, internalCredentialToken(password, userSign))) throw EhrErrors.notAuthorized(CREDENTIALS_REJECTED);
    const expiresAt = sessionExpiry(authInfo, Date.now());
    try {
      await knex('ehr_sessions').insert({ token_hash: tokenHash(authInfo.token), user_id: link.user_id, expires_at: expiresAt });
    } catch (error) {
      if (isUniqueViolation(error)) throw EhrErrors.saveAuthInfoError('token already stored');
      // The match was removed between the read and the insert.
      if ((error as { code?: string }).code === '23503') throw EhrErrors.userNotFound('no internalUserId for this user');
      throw error;
    }
    return { success: true, internalUserId: link.patient_id, expiresAt: expiresAt.toISOString() };
  };

  const authenticate = async (raw: Record<string, unknown>): Promise<EmbeddedStorageAuthenticateResult> => {
    const params = raw as unknown as EmbeddedStorageAuthenticateParams;
    const criteria = await matchCriteria(params);
    const hash = tokenHash(params.exchangeToken);
    // A failed match must be counted even though the call fails: the transaction returns the
    // error instead of throwing it, so the count commits.
    const outcome = await knex.transaction(async (trx): Promise<{ result: EmbeddedStorageAuthenticateResult } | { error: Error }> => {
      const exchange = (await trx('ehr_exchange_tokens').where({ token_hash: hash }).forUpdate().first()) as ExchangeTokenRow | undefined;
      if (!exchange || exchange.state !== 'pending') return { error: EhrErrors.notAuthorized(EXCHANGE_TOKEN_UNUSABLE) };
      const now = Date.now();
      if (exchange.expires_at.getTime() <= now) return { error: EhrErrors.authExpired('exchange token expired') };

      const countFailure = async (error: Error) => {
        const failedAttempts = exchange.failed_attempts + 1;
        await trx('ehr_exchange_tokens')
          .where({ token_hash: hash })
          .update({ failed_attempts: failedAttempts, state: failedAttempts >= MAX_FAILED_ATTEMPTS ? 'burned' : 'pending' });
        return { error };
      };
      const matches = await patients.findMatches(criteria, 2);
      const patient = matches.length === 1 ? matches[0]! : undefined;
      if (!patient) return countFailure(EhrErrors.patientNotFound('no single patient matches'));

      const link = await linkUser(trx, exchange.user_id, patient.id);
      // Counted too: otherwise the two answers would tell a guesser that these properties belong to someone.
      if (link.patient_id !== patient.id) return countFailure(EhrErrors.patientAlreadyMatched('the user is already matched to another patient'));
      const session = await trx.raw<{ rowCount: number }>(
        `insert into ehr_sessions (token_hash, user_id, expires_at) values (?, ?, ?)
         on conflict (token_hash) do update set expires_at = excluded.expires_at where ehr_sessions.user_id = excluded.user_id`,
        [exchange.session_token_hash, exchange.user_id, exchange.session_expires_at],
      );
      // No row written: the token is another user's session.
      if (session.rowCount === 0) return { error: EhrErrors.saveAuthInfoError('token already stored') };
      await trx('ehr_exchange_tokens').where({ token_hash: hash }).update({ state: 'used' });
      const userSign = openUserSign(userSignKey, link.user_id, link.user_sign_sealed);
      return { result: { patient, user_sign: userSign, userSign, internalUserId: patient.id } };
    });
    if ('error' in outcome) throw outcome.error;
    return outcome.result;
  };

  const getPatient = async (_params: Record<string, unknown>, { cred }: CallContext): Promise<PatientGetPatientResult> => {
    const session = await liveSessionOf(cred);
    const link = (await knex('ehr_user_links').where({ user_id: session.user_id }).first()) as LinkRow | undefined;
    // The match was removed since the session was read.
    if (!link) throw EhrErrors.patientNotAuthenticated(NO_SESSION);
    const patient = await patients.findById(link.patient_id);
    if (!patient) throw EhrErrors.patientNotFound('patient no longer in the patient source');
    const userSign = openUserSign(userSignKey, link.user_id, link.user_sign_sealed);
    return { patient, user_sign: userSign, userSign };
  };

  const removeAuthInfo = async (_params: Record<string, unknown>, { cred }: CallContext): Promise<EmbeddedStorageRemoveAuthInfoResult> => {
    const session = await sessionOf(cred);
    const removed = await knex('ehr_sessions').where({ token_hash: session.token_hash, user_id: session.user_id }).delete();
    if (removed === 0) throw EhrErrors.patientNotAuthenticated(NO_SESSION);
    return { success: true };
  };

  const removeAuthentication = async (_params: Record<string, unknown>, { cred }: CallContext): Promise<EmbeddedStorageRemoveAuthenticationResult> => {
    const session = await liveSessionOf(cred);
    // Sessions go with the link (foreign key, on delete cascade); the sealed user_sign is in the link row.
    await knex('ehr_user_links').where({ user_id: session.user_id }).delete();
    return { success: true };
  };

  return {
    'embedded_storage.save_exchange_token': saveExchangeToken,
    'embedded_storage.save_auth_info': saveAuthInfo,
    'embedded_storage.authenticate': authenticate,
    'patient.get_patient': getPatient,
    'embedded_storage.remove_auth_info': removeAuthInfo,
    'embedded_storage.remove_authentication': removeAuthentication,
  };
}
