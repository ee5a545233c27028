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
  Patient,
  PatientGetPatientResult,
} from '../../generated/ehr-types.js';
import type { Config } from '../config/config.js';
import type { Logger } from '../logging/logger.js';
import { statement, type Queryable, type Sql } from '../db/sql.js';
import { AuditTrail, clientColumns, WITHOUT_WAL_FLUSH } from '../audit/trail.js';
import { clientKey } from '../http/client-address.js';
import { currentRequestId } from '../logging/request-context.js';
import { RpcError } from './rpc/errors.js';
import { birthDateOf, instantOf } from './dates.js';
import { EhrErrors, invalidParam, isUniqueViolation } from './errors.js';
import { FailureLimit, type FailureAttempt, type RoomColumns } from './credentials/failure-limit.js';
import { giveBackRoom, reserveRoom } from './credentials/failure-limit-sql.js';
import { PATIENT_COLUMNS, TablePatientSource, toE164, toPatient, type MatchCriteria, type PatientRow, type PatientSource } from './patients/patients.js';
import type { CallContext, MethodHandler } from './rpc/envelope.js';
import { resolveDataKey } from '../db/encryption.js';
import {
  internalCredentialHint,
  internalCredentialToken,
  newUserSign,
  type CredentialSecondValue,
  openUserSign,
  sameSecret,
  sealUserSign,
  tokenHash,
} from './credentials/secrets.js';

/** Failed authenticate attempts after which an exchange token is burned. */
export const MAX_FAILED_ATTEMPTS = 5;

const CREDENTIALS_REJECTED = 'credentials rejected';
const TOO_MANY_FAILURES = 'too many failures, retry later';
const PHONE_REQUIRED = 'is required: the phone the authorization server verified (EXCHANGE_TOKEN_PHONE=required)';
const EXCHANGE_TOKEN_UNUSABLE = 'exchange token unknown, used or burned';
const NO_SESSION = 'no stored session for these credentials';
const NO_SINGLE_MATCH = 'no single patient matches';
const ALREADY_LINKED = 'the user is already linked to a patient';

export interface EhrDependencies {
  sql: Sql;
  config: Config;
  logger: Logger;
  /** A remote МИС; by default the ehr_patients table of the same database, which get_patient then reads in the session's query. */
  patientSource?: PatientSource;
  /** The audit trail's writer for what changes nothing (a read, a refusal); by default one of its own on `sql`. */
  audit?: AuditTrail;
}

interface LinkRow {
  user_id: string;
  patient_id: string;
  user_sign_sealed: Buffer;
}

interface SessionRow {
  user_id: string;
  /** expires_at in epoch milliseconds (compared with this process's clock, as it was computed). */
  expires_ms: number;
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

const EXPIRES_MS = `(extract(epoch from s.expires_at) * 1000)::float8 as expires_ms`;

/** get_patient in one round trip: the session, its user's link (with the sealed user_sign) and the patient. */
const SESSION_WITH_PATIENT = statement(
  'ehr_session_with_patient',
  `with found as (
     select s.user_id, ${EXPIRES_MS}, l.patient_id, l.user_sign_sealed, ${PATIENT_COLUMNS}
       from ehr_sessions s
       left join ehr_user_links l on l.user_id = s.user_id
       left join ehr_patients p on p.id = l.patient_id
      where s.token_hash = $1
   ),
   -- The read's audit row when it succeeds (the user's live session, an active patient: what
   -- getPatient answers with), in the same statement: no round trip of its own. Committed without
   -- waiting for the WAL flush, as every audit row of a read (WITHOUT_WAL_FLUSH).
   audited as (
     insert into audit_events (request_id, internal_user_id, action, outcome, client_address, client_request_id)
     select $3, f.patient_id, 'patient.get_patient', 'ok', $5, $6
       from found f, ${WITHOUT_WAL_FLUSH}
      where f.user_id = $2 and f.expires_ms > $4 and f.active
   )
   select * from found`,
);
/** The same without the patient, for a patient source elsewhere. */
const SESSION_WITH_LINK = statement(
  'ehr_session_with_link',
  `select s.user_id, ${EXPIRES_MS}, l.patient_id, l.user_sign_sealed from ehr_sessions s left join ehr_user_links l on l.user_id = s.user_id where s.token_hash = $1`,
);
const SESSION = statement('ehr_session', `select s.user_id, ${EXPIRES_MS} from ehr_sessions s where s.token_hash = $1`);
const LINK = statement('ehr_link', 'select user_id, patient_id, user_sign_sealed from ehr_user_links where user_id = $1');
/** save_auth_info's link ($1), with room reserved to judge its internal credential ($2..$4: the failure limit's) in the same statement. */
const LINK_RESERVING = statement(
  'ehr_link_reserving',
  `with ${reserveRoom(2)}
   select r.granted, r.period, r.failures, l.user_id, l.patient_id, l.user_sign_sealed from reserved r left join ehr_user_links l on l.user_id = $1`,
);
/**
 * save_auth_info: the session stored and recorded in the audit trail with the internal account, and
 * the room of its (right) internal credential given back ($9, $10), in one statement.
 */
const SAVE_SESSION = statement(
  'ehr_save_session',
  `with stored as (insert into ehr_sessions (token_hash, user_id, expires_at) values ($1, $2, $3) returning user_id),
   ${giveBackRoom(9)}
   insert into audit_events (request_id, internal_account, internal_user_id, action, outcome, client_address, client_request_id)
   select $4, $5, $6, 'embedded_storage.save_auth_info', 'ok', $7, $8 from stored`,
);
const INSERT_SESSION_ONCE = statement(
  'ehr_insert_session_once',
  'insert into ehr_sessions (token_hash, user_id, expires_at) values ($1, $2, $3) on conflict (token_hash) do nothing returning token_hash',
);
/** Ends the session and records it in the audit trail, in one statement. */
const DELETE_SESSION = statement(
  'ehr_delete_session',
  `with deleted as (delete from ehr_sessions where token_hash = $1 and user_id = $2 returning user_id),
   audited as (
     insert into audit_events (request_id, action, internal_user_id, outcome, client_address, client_request_id)
     select $3, 'embedded_storage.remove_auth_info', l.patient_id, 'ok', $4, $5 from deleted d left join ehr_user_links l using (user_id)
   )
   select count(*)::int as removed from deleted`,
);
const INSERT_LINK = statement(
  'ehr_insert_link',
  'insert into ehr_user_links (user_id, patient_id, user_sign_sealed) values ($1, $2, $3) on conflict (user_id) do nothing returning user_id, patient_id, user_sign_sealed',
);
const DELETE_LINK = statement(
  'ehr_delete_link',
  `with deleted as (delete from ehr_user_links where user_id = $1 returning patient_id)
   insert into audit_events (request_id, action, internal_user_id, outcome, client_address, client_request_id)
   select $2, 'embedded_storage.remove_authentication', patient_id, 'ok', $3, $4 from deleted`,
);
/**
 * save_exchange_token: the token stored and recorded in the audit trail with the internal account,
 * and the room of its (right) internal credential given back ($11, $12), in one statement.
 */
const INSERT_EXCHANGE_TOKEN = statement(
  'ehr_insert_exchange_token',
  `with stored as (
     insert into ehr_exchange_tokens (token_hash, user_id, session_token_hash, session_expires_at, expires_at, phone) values ($1, $2, $3, $4, $5, $6) returning 1
   ),
   ${giveBackRoom(11)}
   insert into audit_events (request_id, internal_account, action, outcome, client_address, client_request_id)
   select $7, $8, 'embedded_storage.save_exchange_token', 'ok', $9, $10 from stored`,
);
const EXCHANGE_TOKEN = statement('ehr_exchange_token', 'select * from ehr_exchange_tokens where token_hash = $1');
const LOCK_EXCHANGE_TOKEN = statement('ehr_lock_exchange_token', 'select * from ehr_exchange_tokens where token_hash = $1 for update');
/** A failed authenticate counted against its exchange token, and recorded in the audit trail, in one statement. */
const COUNT_FAILURE = statement(
  'ehr_exchange_token_failure',
  `with counted as (update ehr_exchange_tokens set failed_attempts = $2, state = $3 where token_hash = $1)
   insert into audit_events (request_id, action, outcome, client_address, client_request_id) values ($4, 'embedded_storage.authenticate', $5, $6, $7)`,
);
/** The exchange token used, and the authentication recorded in the audit trail, in one statement. */
const MARK_USED = statement(
  'ehr_exchange_token_used',
  `with used as (update ehr_exchange_tokens set state = 'used' where token_hash = $1)
   insert into audit_events (request_id, action, internal_user_id, outcome, client_address, client_request_id) values ($2, 'embedded_storage.authenticate', $3, 'ok', $4, $5)`,
);

/** Errors whose audit row is written already (with the change they record): the handlers' wrapper does not write another. */
const recordedErrors = new WeakSet<Error>();

function recorded<E extends Error>(error: E): E {
  recordedErrors.add(error);
  return error;
}

/** The outcome column of an error: its JSON-RPC code, or `error` for a failure of ours. */
function outcomeOf(error: unknown): string {
  return error instanceof RpcError ? String(error.code) : 'error';
}

type TransactionOutcome<T> = { result: T } | { error: Error };

/** What an internal call's work gets from withInternalCredential. */
interface InternalCall {
  /** The internal account the credential names (one of INTERNAL_USERS). */
  account: string;
  /**
   * Reserves room to judge the credential (FailureLimit.attemptWith): with `run`, the call's own first statement
   * carrying reserveRoom (given the room's values, after its own), else a statement of its own. Refuses the call
   * (too many failures) when the key has no room; answers the statement's row.
   */
  reserve<R extends RoomColumns>(run?: (room: readonly unknown[]) => Promise<R | undefined>): Promise<R>;
  /** Judges the credential: the password followed by `value`. Refused (and counted) when wrong. */
  check(value: string): void;
  /** The values of giveBackRoom for the statement that stores the call's work; `givenBack` once it has run. */
  giveBackValues(): readonly unknown[];
  givenBack(): void;
}

/** The JSON-RPC methods of interface A, over PostgreSQL. */
class EhrMethods {
  private readonly patients: PatientSource;
  private readonly ttlUnitMs: number;
  private readonly failureLimit: FailureLimit;
  /** get_patient joins the built-in patient table into the session's query. */
  private readonly patientsInSessionQuery: boolean;

  constructor(
    private readonly sql: Sql,
    private readonly config: Config,
    private readonly userSignKey: Buffer,
    patientSource: PatientSource | undefined,
    private readonly audit: AuditTrail,
  ) {
    this.patients = patientSource ?? new TablePatientSource(sql);
    this.patientsInSessionQuery = patientSource === undefined;
    this.ttlUnitMs = config.authTtlUnit === 'minutes' ? 60_000 : 1_000;
    this.failureLimit = new FailureLimit(sql, config.internalAuthMaxFailures, config.internalAuthFailureWindowMs);
  }

  /** When the session of authInfo ends; -33001 when it has ended already. */
  private sessionExpiry(authInfo: AuthInfo, now: number): Date {
    const start = authInfo.created === undefined ? now : instantOf(authInfo.created);
    if (start === undefined) throw invalidParam('/authInfo/created', 'is not a date-time');
    const expiresAt = start + authInfo.ttl * this.ttlUnitMs;
    if (expiresAt <= now) throw EhrErrors.authExpired('authInfo already expired');
    return new Date(expiresAt);
  }

  /**
   * Runs an internal call with its credential judged under the failure limit, race-free: `work`
   * reserves room for the call first (FailureLimit; in its own first statement where it has one),
   * judges cred.token with `check` (the password followed by the second value), and gives the room
   * back with the statement that stores its work. A wrong credential's failure is counted with its
   * room given back; a call ended otherwise gives its room back alone. Unknown accounts share one
   * count per client address, so made-up names cannot add keys.
   */
  private async withInternalCredential<T>(context: CallContext, secondValue: CredentialSecondValue, work: (call: InternalCall) => Promise<T>): Promise<T> {
    const { cred } = context;
    const password = cred ? this.config.internalUsers.get(cred.user) : undefined;
    const key = JSON.stringify([password === undefined ? null : cred!.user, clientKey(context.clientAddress)]);
    let attempt: FailureAttempt | undefined;
    let rejected = false;
    const reject = (): never => {
      rejected = true;
      throw EhrErrors.notAuthorized(CREDENTIALS_REJECTED, internalCredentialHint(cred?.token, secondValue));
    };
    const reserve = async <R extends RoomColumns>(run?: (room: readonly unknown[]) => Promise<R | undefined>): Promise<R> => {
      const reserved = await this.failureLimit.attemptWith(key, run);
      if (!reserved) throw EhrErrors.notAuthorized(TOO_MANY_FAILURES);
      attempt = reserved.attempt;
      return reserved.row;
    };
    try {
      if (password === undefined) {
        await reserve();
        return reject();
      }
      return await work({
        account: cred!.user,
        reserve,
        check: (value) => {
          if (!attempt) throw new Error('an internal credential judged without room reserved');
          if (!sameSecret(cred!.token, internalCredentialToken(password, value))) reject();
        },
        giveBackValues: () => attempt!.giveBackValues(),
        givenBack: () => attempt!.givenBack(),
      });
    } finally {
      await (rejected ? attempt?.failed() : attempt?.succeeded())?.catch(() => undefined);
    }
  }

  /** The live or expired session of `cred`: -33000 when there is none for exactly this user and token. */
  private async sessionOf(cred: CallContext['cred']): Promise<SessionRow & { token_hash: Buffer }> {
    if (!cred) throw EhrErrors.notAuthorized(NO_SESSION);
    const hash = tokenHash(cred.token);
    const session = await this.sql.row<SessionRow>(SESSION, [hash]);
    if (!session || session.user_id !== cred.user) throw EhrErrors.notAuthorized(NO_SESSION);
    return { ...session, token_hash: hash };
  }

  private async liveSessionOf(cred: CallContext['cred']): Promise<SessionRow> {
    const session = await this.sessionOf(cred);
    if (session.expires_ms <= Date.now()) throw EhrErrors.authExpired('session expired');
    return session;
  }

  private linkOf(userId: string, on: Queryable = this.sql): Promise<LinkRow | undefined> {
    return on.row<LinkRow>(LINK, [userId]);
  }

  private matchCriteria(params: EmbeddedStorageAuthenticateParams): MatchCriteria {
    const properties = params.patientProperties;
    const birthDate = birthDateOf(properties.date, this.config.birthDateTimeZone);
    if (!birthDate) throw invalidParam('/patientProperties/date', 'is not a calendar date');
    const phone = toE164(properties.phone);
    if (!phone) throw invalidParam('/patientProperties/phone', 'is not a phone number');
    const criteria = { surname: properties.surname, name: properties.name, birthDate, phone };
    if (params.searchStrategy !== 'MEDCARD') return criteria;
    if (!params.medCardId?.trim()) throw invalidParam('/medCardId', 'is required when searchStrategy is MEDCARD');
    return { ...criteria, medcardNumber: params.medCardId };
  }

  /** The one active patient matching the criteria and the phone the authorization server verified, if any. */
  private async singleMatch(criteria: MatchCriteria, verifiedPhone: string | null): Promise<Patient | undefined> {
    if (verifiedPhone !== null && verifiedPhone !== criteria.phone) return undefined;
    const matches = await this.patients.findMatches(criteria, 2);
    return matches.length === 1 ? matches[0] : undefined;
  }

  /** Counts a failed attempt against the locked token (the 5th burns it); the caller's transaction commits it. */
  private async countFailure(trx: Queryable, exchange: ExchangeTokenRow, error: Error): Promise<{ error: Error }> {
    const failedAttempts = exchange.failed_attempts + 1;
    await trx.run(COUNT_FAILURE, [
      exchange.token_hash,
      failedAttempts,
      failedAttempts >= MAX_FAILED_ATTEMPTS ? 'burned' : 'pending',
      currentRequestId() ?? null,
      outcomeOf(error),
      ...clientColumns(),
    ]);
    return { error: recorded(error) };
  }

  /** Links the user to the patient with a new user_sign; -34009 when another call linked the user first. */
  private async createLink(trx: Queryable, userId: string, patientId: string): Promise<LinkRow> {
    const link = await trx.row<LinkRow>(INSERT_LINK, [userId, patientId, sealUserSign(this.userSignKey, userId, newUserSign())]);
    if (!link) throw EhrErrors.patientAlreadyLinked(ALREADY_LINKED);
    return link;
  }

  /** Stores the session the exchange token carries; -34003 when its token is another user's session. */
  private async storeSession(trx: Queryable, exchange: ExchangeTokenRow): Promise<void> {
    const stored = await trx.row(INSERT_SESSION_ONCE, [exchange.session_token_hash, exchange.user_id, exchange.session_expires_at]);
    if (!stored) throw EhrErrors.saveAuthInfoError('token already stored');
  }

  readonly saveExchangeToken = async (raw: Record<string, unknown>, context: CallContext): Promise<EmbeddedStorageSaveExchangeTokenResult> => {
    const params = raw as unknown as EmbeddedStorageSaveExchangeTokenParams;
    return this.withInternalCredential(context, 'params.exchangeToken', async ({ account, reserve, check, giveBackValues, givenBack }) => {
      await reserve();
      check(params.exchangeToken);
      const now = Date.now();
      const sessionExpiresAt = this.sessionExpiry(params.authInfo, now);
      // Without the verified phone, a token minted for one account could link whoever uses it to that account (login fixation).
      if (params.authInfo.phone === undefined && this.config.exchangeTokenPhoneRequired) throw invalidParam('/authInfo/phone', PHONE_REQUIRED);
      const phone = params.authInfo.phone === undefined ? null : toE164(params.authInfo.phone);
      if (phone === undefined) throw invalidParam('/authInfo/phone', 'is not a phone number');
      const expiresAt = new Date(now + this.config.exchangeTokenTtlMs);
      try {
        await this.sql.run(INSERT_EXCHANGE_TOKEN, [
          tokenHash(params.exchangeToken),
          params.authInfo.user,
          tokenHash(params.authInfo.token),
          sessionExpiresAt,
          expiresAt,
          phone,
          currentRequestId() ?? null,
          account,
          ...clientColumns(),
          ...giveBackValues(),
        ]);
        givenBack();
      } catch (error) {
        if (isUniqueViolation(error)) throw EhrErrors.saveExchangeTokenError('exchange token already stored');
        throw error;
      }
      return { success: true, expiresAt: expiresAt.toISOString() };
    });
  };

  readonly saveAuthInfo = async (raw: Record<string, unknown>, context: CallContext): Promise<EmbeddedStorageSaveAuthInfoResult> => {
    const { authInfo } = raw as unknown as EmbeddedStorageSaveAuthInfoParams;
    return this.withInternalCredential(
      context,
      'the user_sign that authenticate answered for authInfo.user',
      async ({ account, reserve, check, giveBackValues, givenBack }) => {
        const read = await reserve((room) =>
          this.sql.row<RoomColumns & (LinkRow | { [column in keyof LinkRow]: null })>(LINK_RESERVING, [authInfo.user, ...room]),
        );
        if (read.user_id === null) throw EhrErrors.userNotFound('no internalUserId for this user');
        const link: LinkRow = read;
        check(openUserSign(this.userSignKey, link.user_id, link.user_sign_sealed));
        const expiresAt = this.sessionExpiry(authInfo, Date.now());
        try {
          await this.sql.run(SAVE_SESSION, [
            tokenHash(authInfo.token),
            link.user_id,
            expiresAt,
            currentRequestId() ?? null,
            account,
            link.patient_id,
            ...clientColumns(),
            ...giveBackValues(),
          ]);
          givenBack();
        } catch (error) {
          if (isUniqueViolation(error)) throw EhrErrors.saveAuthInfoError('token already stored');
          // The link was removed between the read and the insert.
          if ((error as { code?: string }).code === '23503') throw EhrErrors.userNotFound('no internalUserId for this user');
          throw error;
        }
        return { success: true, internalUserId: link.patient_id, expiresAt: expiresAt.toISOString() };
      },
    );
  };

  /** A pending, live exchange token: -33000 when unknown, used or burned; -33001 when expired. */
  private usable(exchange: ExchangeTokenRow | undefined): ExchangeTokenRow {
    if (exchange?.state !== 'pending') throw EhrErrors.notAuthorized(EXCHANGE_TOKEN_UNUSABLE);
    if (exchange.expires_at.getTime() <= Date.now()) throw EhrErrors.authExpired('exchange token expired');
    return exchange;
  }

  readonly authenticate = async (raw: Record<string, unknown>): Promise<EmbeddedStorageAuthenticateResult> => {
    const params = raw as unknown as EmbeddedStorageAuthenticateParams;
    const criteria = this.matchCriteria(params);
    const hash = tokenHash(params.exchangeToken);
    const exchange = this.usable(await this.sql.row<ExchangeTokenRow>(EXCHANGE_TOKEN, [hash]));
    // Before any matching: what a linked user sends tells it nothing about other people.
    if (await this.linkOf(exchange.user_id)) throw EhrErrors.patientAlreadyLinked(ALREADY_LINKED);
    // Matching runs on the pool before the token's row is locked: a transaction holding the lock
    // while it waits for a second connection deadlocks the pool under parallel calls.
    const patient = await this.singleMatch(criteria, exchange.phone);
    // A failed match counts even though the call fails: the transaction returns that error rather
    // than throwing it, so the count commits. Other errors roll everything back.
    const outcome = await this.sql.transaction(async (trx): Promise<TransactionOutcome<EmbeddedStorageAuthenticateResult>> => {
      const locked = this.usable(await trx.row<ExchangeTokenRow>(LOCK_EXCHANGE_TOKEN, [hash]));
      if (!patient) return this.countFailure(trx, locked, EhrErrors.patientNotAuthenticated(NO_SINGLE_MATCH));
      const link = await this.createLink(trx, locked.user_id, patient.id);
      await this.storeSession(trx, locked);
      await trx.run(MARK_USED, [hash, currentRequestId() ?? null, patient.id, ...clientColumns()]);
      const userSign = openUserSign(this.userSignKey, link.user_id, link.user_sign_sealed);
      return { result: { patient, user_sign: userSign, userSign, internalUserId: patient.id } };
    });
    if ('error' in outcome) throw outcome.error;
    return outcome.result;
  };

  /** The live session of `cred` with its link and patient: one query with the built-in patient table, two with another source. */
  private async sessionPatient(cred: CallContext['cred']): Promise<{ link: LinkRow; patient: Patient | undefined; successAudited: boolean }> {
    if (!cred) throw EhrErrors.notAuthorized(NO_SESSION);
    const joined = this.patientsInSessionQuery;
    // One clock reading for the statement (which writes the audit row of a success) and the checks below: they agree.
    const now = Date.now();
    const hash = tokenHash(cred.token);
    const row = await this.sql.row<SessionRow & Partial<LinkRow> & Partial<PatientRow>>(
      joined ? SESSION_WITH_PATIENT : SESSION_WITH_LINK,
      joined ? [hash, cred.user, currentRequestId() ?? null, now, ...clientColumns()] : [hash],
    );
    if (!row || row.user_id !== cred.user) throw EhrErrors.notAuthorized(NO_SESSION);
    if (row.expires_ms <= now) throw EhrErrors.authExpired('session expired');
    // The link was removed since the session was stored.
    if (!row.patient_id) throw EhrErrors.notAuthorized(NO_SESSION);
    const link = { user_id: row.user_id, patient_id: row.patient_id, user_sign_sealed: row.user_sign_sealed! };
    if (!joined) return { link, patient: await this.patients.findById(row.patient_id), successAudited: false };
    // A link to a patient the table does not hold (any more) reads as an inactive patient.
    return { link, patient: row.id ? toPatient(row as PatientRow) : undefined, successAudited: true };
  }

  readonly getPatient = async (_params: Record<string, unknown>, { cred }: CallContext): Promise<PatientGetPatientResult> => {
    const { link, patient, successAudited } = await this.sessionPatient(cred);
    const event = { action: 'patient.get_patient', internalUserId: link.patient_id };
    if (!patient?.active) {
      const error = EhrErrors.patientNotFound('patient no longer active in the patient source');
      await this.audit.record({ ...event, outcome: outcomeOf(error) });
      throw recorded(error);
    }
    const userSign = openUserSign(this.userSignKey, link.user_id, link.user_sign_sealed);
    // A read changes nothing: its row went with the session query, or goes with the others being recorded (AuditTrail), before the answer.
    if (!successAudited) await this.audit.record({ ...event, outcome: 'ok' });
    return { patient, user_sign: userSign, userSign };
  };

  readonly removeAuthInfo = async (_params: Record<string, unknown>, { cred }: CallContext): Promise<EmbeddedStorageRemoveAuthInfoResult> => {
    const session = await this.sessionOf(cred);
    const { removed } = (await this.sql.row<{ removed: number }>(DELETE_SESSION, [
      session.token_hash,
      session.user_id,
      currentRequestId() ?? null,
      ...clientColumns(),
    ]))!;
    if (removed === 0) throw EhrErrors.notAuthorized(NO_SESSION);
    return { success: true };
  };

  readonly removeAuthentication = async (_params: Record<string, unknown>, { cred }: CallContext): Promise<EmbeddedStorageRemoveAuthenticationResult> => {
    const session = await this.liveSessionOf(cred);
    // Sessions go with the link (foreign key, on delete cascade); the sealed user_sign is in the link row.
    await this.sql.run(DELETE_LINK, [session.user_id, currentRequestId() ?? null, ...clientColumns()]);
    return { success: true };
  };
}

/** The JSON-RPC methods of interface A by name. */
export async function createEhrHandlers(dependencies: EhrDependencies): Promise<Record<string, MethodHandler>> {
  const audit = dependencies.audit ?? new AuditTrail(dependencies.sql);
  const methods = new EhrMethods(dependencies.sql, dependencies.config, await resolveDataKey(dependencies.config), dependencies.patientSource, audit);
  const internalUsers = dependencies.config.internalUsers;
  // An internal call's refusal names the internal account it claimed, when that is one of INTERNAL_USERS.
  const internalAccount = (context: CallContext) => (context.cred && internalUsers.has(context.cred.user) ? context.cred.user : null);
  const audited = (method: string, handler: MethodHandler, account?: typeof internalAccount) => auditFailures(method, handler, audit, account);
  return {
    'embedded_storage.save_exchange_token': audited('embedded_storage.save_exchange_token', methods.saveExchangeToken, internalAccount),
    'embedded_storage.save_auth_info': audited('embedded_storage.save_auth_info', methods.saveAuthInfo, internalAccount),
    'embedded_storage.authenticate': audited('embedded_storage.authenticate', methods.authenticate),
    'patient.get_patient': audited('patient.get_patient', methods.getPatient),
    'embedded_storage.remove_auth_info': audited('embedded_storage.remove_auth_info', methods.removeAuthInfo),
    'embedded_storage.remove_authentication': audited('embedded_storage.remove_authentication', methods.removeAuthentication),
  };
}

/**
 * Every call of interface A leaves a trace in the audit trail whatever its outcome: a success
 * writes its row with its change (or before its answer, for a read); a failure that wrote none
 * (nobody's data was touched: unknown credentials or tokens, refused params) is recorded per client
 * address, method and outcome (AuditTrail.refused): the first of a minute at once, the rest counted
 * in one row, so that a flood of refused calls costs two rows a minute, not a row each.
 */
function auditFailures(method: string, handler: MethodHandler, audit: AuditTrail, internalAccount?: (context: CallContext) => string | null): MethodHandler {
  return async (params, context) => {
    try {
      return await handler(params, context);
    } catch (error) {
      if (!(error instanceof Error && recordedErrors.has(error)))
        await audit.refused({ action: method, outcome: outcomeOf(error), internalAccount: internalAccount?.(context) ?? null }).catch(() => undefined);
      throw error;
    }
  };
}
