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
import { birthDateOf, instantOf } from './dates.js';
import { EhrErrors, invalidParam, isUniqueViolation } from './errors.js';
import { FailureLimit } from './failure-limit.js';
import { TablePatientSource, toE164, type MatchCriteria, type PatientSource } from './patients.js';
import type { CallContext, MethodHandler } from './rpc/envelope.js';
import { resolveDataKey } from '../db/encryption.js';
import { internalCredentialToken, newUserSign, openUserSign, sameSecret, sealUserSign, tokenHash } from './secrets.js';

/** Failed authenticate attempts after which an exchange token is burned. */
export const MAX_FAILED_ATTEMPTS = 5;

const CREDENTIALS_REJECTED = 'credentials rejected';
const TOO_MANY_FAILURES = 'too many failures, retry later';
const EXCHANGE_TOKEN_UNUSABLE = 'exchange token unknown, used or burned';
const NO_SESSION = 'no stored session for these credentials';
const NO_SINGLE_MATCH = 'no single patient matches';
const ALREADY_LINKED = 'the user is already linked to a patient';

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

/** A row of ehr_exchange_tokens; a spent row (RETENTION) has only its hash, and usable() refuses it before anything else is read. */
interface ExchangeTokenRow {
  token_hash: Buffer;
  user_id: string;
  session_token_hash: Buffer;
  session_expires_at: Date;
  expires_at: Date;
  failed_attempts: number;
  state: 'pending' | 'used' | 'burned' | 'spent';
  /** The phone the authorization server verified (E.164), when it sent one. */
  phone: string | null;
}

type TransactionOutcome<T> = { result: T } | { error: Error };

/** The JSON-RPC methods of interface A, over PostgreSQL. */
export async function createEhrHandlers(dependencies: EhrDependencies): Promise<Record<string, MethodHandler>> {
  const { knex, config } = dependencies;
  const patients = dependencies.patientSource ?? new TablePatientSource(knex);
  const userSignKey = await resolveDataKey(config);
  const ttlUnitMs = config.authTtlUnit === 'minutes' ? 60_000 : 1_000;
  const failureLimit = new FailureLimit(config.internalAuthMaxFailures, config.internalAuthFailureWindowMs);

  /** When the session of authInfo ends; -33001 when it has ended already. */
  function sessionExpiry(authInfo: AuthInfo, now: number): Date {
    const start = authInfo.created === undefined ? now : instantOf(authInfo.created);
    if (start === undefined) throw invalidParam('/authInfo/created', 'is not a date-time');
    const expiresAt = start + authInfo.ttl * ttlUnitMs;
    if (expiresAt <= now) throw EhrErrors.authExpired('authInfo already expired');
    return new Date(expiresAt);
  }

  /**
   * The internal account of `cred` and its password, unless that account has failed too often from
   * this address. Unknown accounts share one count per address, so made-up names cannot fill memory.
   */
  function internalAccount({ cred, clientAddress }: CallContext): { password: string; failureKey: string } {
    const password = cred ? config.internalUsers.get(cred.user) : undefined;
    const failureKey = JSON.stringify([password === undefined ? null : cred!.user, clientAddress]);
    if (failureLimit.isRefused(failureKey)) throw EhrErrors.notAuthorized(TOO_MANY_FAILURES);
    if (password === undefined) rejectCredentials(failureKey);
    return { password, failureKey };
  }

  function rejectCredentials(failureKey: string): never {
    failureLimit.recordFailure(failureKey);
    throw EhrErrors.notAuthorized(CREDENTIALS_REJECTED);
  }

  /** cred.token must be sha1hex(password + secondValue). */
  function checkInternalToken(context: CallContext, account: { password: string; failureKey: string }, secondValue: string): void {
    if (!sameSecret(context.cred!.token, internalCredentialToken(account.password, secondValue))) rejectCredentials(account.failureKey);
  }

  /** The live or expired session of `cred`: -33000 when there is none for exactly this user and token. */
  async function sessionOf(cred: CallContext['cred']): Promise<SessionRow & { token_hash: Buffer }> {
    if (!cred) throw EhrErrors.notAuthorized(NO_SESSION);
    const hash = tokenHash(cred.token);
    const session = (await knex('ehr_sessions').where({ token_hash: hash }).first('user_id', 'expires_at')) as SessionRow | undefined;
    if (!session || session.user_id !== cred.user) throw EhrErrors.notAuthorized(NO_SESSION);
    return { ...session, token_hash: hash };
  }

  async function liveSessionOf(cred: CallContext['cred']): Promise<SessionRow> {
    const session = await sessionOf(cred);
    if (session.expires_at.getTime() <= Date.now()) throw EhrErrors.authExpired('session expired');
    return session;
  }

  const linkOf = async (userId: string) => (await knex('ehr_user_links').where({ user_id: userId }).first()) as LinkRow | undefined;

  function matchCriteria(params: EmbeddedStorageAuthenticateParams): MatchCriteria {
    const properties = params.patientProperties;
    const birthDate = birthDateOf(properties.date, config.birthDateTimeZone);
    if (!birthDate) throw invalidParam('/patientProperties/date', 'is not a calendar date');
    const phone = toE164(properties.phone);
    if (!phone) throw invalidParam('/patientProperties/phone', 'is not a phone number');
    const criteria = { surname: properties.surname, name: properties.name, birthDate, gender: properties.gender, phone };
    if (params.searchStrategy !== 'MEDCARD') return criteria;
    if (!params.medCardId?.trim()) throw invalidParam('/medCardId', 'is required when searchStrategy is MEDCARD');
    return { ...criteria, medcardNumber: params.medCardId };
  }

  /** A pending, live exchange token: -33000 when unknown, used or burned; -33001 when expired. */
  function usable(exchange: ExchangeTokenRow | undefined): ExchangeTokenRow {
    if (!exchange || exchange.state !== 'pending') throw EhrErrors.notAuthorized(EXCHANGE_TOKEN_UNUSABLE);
    if (exchange.expires_at.getTime() <= Date.now()) throw EhrErrors.authExpired('exchange token expired');
    return exchange;
  }

  /** The one active patient matching the criteria and the phone the authorization server verified, if any. */
  async function singleMatch(criteria: MatchCriteria, verifiedPhone: string | null) {
    if (verifiedPhone !== null && verifiedPhone !== criteria.phone) return undefined;
    const matches = await patients.findMatches(criteria, 2);
    return matches.length === 1 ? matches[0] : undefined;
  }

  /** Counts a failed attempt against the locked token (the 5th burns it); the caller's transaction commits it. */
  async function countFailure(trx: Knex.Transaction, exchange: ExchangeTokenRow, error: Error): Promise<{ error: Error }> {
    const failedAttempts = exchange.failed_attempts + 1;
    await trx('ehr_exchange_tokens')
      .where({ token_hash: exchange.token_hash })
      .update({ failed_attempts: failedAttempts, state: failedAttempts >= MAX_FAILED_ATTEMPTS ? 'burned' : 'pending' });
    return { error };
  }

  /** Links the user to the patient with a new user_sign; -34009 when another call linked the user first. */
  async function createLink(trx: Knex.Transaction, userId: string, patientId: string): Promise<LinkRow> {
    const [link] = (await trx('ehr_user_links')
      .insert({ user_id: userId, patient_id: patientId, user_sign_sealed: sealUserSign(userSignKey, userId, newUserSign()) })
      .onConflict('user_id')
      .ignore()
      .returning('*')) as LinkRow[];
    if (!link) throw EhrErrors.patientAlreadyLinked(ALREADY_LINKED);
    return link;
  }

  /** Stores the session the exchange token carries; -34003 when its token is another user's session. */
  async function storeSession(trx: Knex.Transaction, exchange: ExchangeTokenRow): Promise<void> {
    const stored = await trx('ehr_sessions')
      .insert({ token_hash: exchange.session_token_hash, user_id: exchange.user_id, expires_at: exchange.session_expires_at })
      .onConflict('token_hash')
      .ignore()
      .returning('token_hash');
    if (stored.length === 0) throw EhrErrors.saveAuthInfoError('token already stored');
  }

  const saveExchangeToken = async (raw: Record<string, unknown>, context: CallContext): Promise<EmbeddedStorageSaveExchangeTokenResult> => {
    const params = raw as unknown as EmbeddedStorageSaveExchangeTokenParams;
    checkInternalToken(context, internalAccount(context), params.exchangeToken);
    const now = Date.now();
    const sessionExpiresAt = sessionExpiry(params.authInfo, now);
    const phone = params.authInfo.phone === undefined ? null : toE164(params.authInfo.phone);
    if (phone === undefined) throw invalidParam('/authInfo/phone', 'is not a phone number');
    const expiresAt = new Date(now + config.exchangeTokenTtlMs);
    try {
      await knex('ehr_exchange_tokens').insert({
        token_hash: tokenHash(params.exchangeToken),
        user_id: params.authInfo.user,
        session_token_hash: tokenHash(params.authInfo.token),
        session_expires_at: sessionExpiresAt,
        expires_at: expiresAt,
        phone,
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw EhrErrors.saveExchangeTokenError('exchange token already stored');
      throw error;
    }
    return { success: true, expiresAt: expiresAt.toISOString() };
  };

  const saveAuthInfo = async (raw: Record<string, unknown>, context: CallContext): Promise<EmbeddedStorageSaveAuthInfoResult> => {
    const { authInfo } = raw as unknown as EmbeddedStorageSaveAuthInfoParams;
    const account = internalAccount(context);
    const link = await linkOf(authInfo.user);
    if (!link) throw EhrErrors.userNotFound('no internalUserId for this user');
    checkInternalToken(context, account, openUserSign(userSignKey, link.user_id, link.user_sign_sealed));
    const expiresAt = sessionExpiry(authInfo, Date.now());
    try {
      await knex('ehr_sessions').insert({ token_hash: tokenHash(authInfo.token), user_id: link.user_id, expires_at: expiresAt });
    } catch (error) {
      if (isUniqueViolation(error)) throw EhrErrors.saveAuthInfoError('token already stored');
      // The link was removed between the read and the insert.
      if ((error as { code?: string }).code === '23503') throw EhrErrors.userNotFound('no internalUserId for this user');
      throw error;
    }
    return { success: true, internalUserId: link.patient_id, expiresAt: expiresAt.toISOString() };
  };

  const authenticate = async (raw: Record<string, unknown>): Promise<EmbeddedStorageAuthenticateResult> => {
    const params = raw as unknown as EmbeddedStorageAuthenticateParams;
    const criteria = matchCriteria(params);
    const hash = tokenHash(params.exchangeToken);
    const exchange = usable((await knex('ehr_exchange_tokens').where({ token_hash: hash }).first()) as ExchangeTokenRow | undefined);
    // Before any matching: what a linked user sends tells it nothing about other people.
    if (await linkOf(exchange.user_id)) throw EhrErrors.patientAlreadyLinked(ALREADY_LINKED);
    // Matching runs on the pool before the token's row is locked: a transaction holding the lock
    // while it waits for a second connection deadlocks the pool under parallel calls.
    const patient = await singleMatch(criteria, exchange.phone);
    // A failed match counts even though the call fails: the transaction returns that error rather
    // than throwing it, so the count commits. Other errors roll everything back.
    const outcome = await knex.transaction(async (trx): Promise<TransactionOutcome<EmbeddedStorageAuthenticateResult>> => {
      const locked = usable((await trx('ehr_exchange_tokens').where({ token_hash: hash }).forUpdate().first()) as ExchangeTokenRow | undefined);
      if (!patient) return countFailure(trx, locked, EhrErrors.patientNotAuthenticated(NO_SINGLE_MATCH));
      const link = await createLink(trx, locked.user_id, patient.id);
      await storeSession(trx, locked);
      await trx('ehr_exchange_tokens').where({ token_hash: hash }).update({ state: 'used' });
      const userSign = openUserSign(userSignKey, link.user_id, link.user_sign_sealed);
      return { result: { patient, user_sign: userSign, userSign, internalUserId: patient.id } };
    });
    if ('error' in outcome) throw outcome.error;
    return outcome.result;
  };

  const getPatient = async (_params: Record<string, unknown>, { cred }: CallContext): Promise<PatientGetPatientResult> => {
    const session = await liveSessionOf(cred);
    const link = await linkOf(session.user_id);
    // The link was removed since the session was read.
    if (!link) throw EhrErrors.notAuthorized(NO_SESSION);
    const patient = await patients.findById(link.patient_id);
    if (!patient?.active) throw EhrErrors.patientNotFound('patient no longer active in the patient source');
    const userSign = openUserSign(userSignKey, link.user_id, link.user_sign_sealed);
    return { patient, user_sign: userSign, userSign };
  };

  const removeAuthInfo = async (_params: Record<string, unknown>, { cred }: CallContext): Promise<EmbeddedStorageRemoveAuthInfoResult> => {
    const session = await sessionOf(cred);
    const removed = await knex('ehr_sessions').where({ token_hash: session.token_hash, user_id: session.user_id }).delete();
    if (removed === 0) throw EhrErrors.notAuthorized(NO_SESSION);
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
