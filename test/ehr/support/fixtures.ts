import type { Knex } from 'knex';
import { openDatabase } from '../../../src/db/database.js';
import { seedDemoPatients, toE164 } from '../../../src/ehr/patients/patients.js';
import { createLogger } from '../../../src/logging/logger.js';
import type { Role } from '../../../src/roles.js';
import { startTestService, type TestService } from '../../support/service.js';
import { rpc, sha1hex } from './rpc.js';

export const INTERNAL_USER = 'auth';
export const INTERNAL_PASSWORD = 'pa55word';
export const INTERNAL_USERS = `${INTERNAL_USER}:${INTERNAL_PASSWORD}`;

/** The demo patient demo-1 (Иванова Мария, 1990-05-17, female, +79161234567), as a user would type her data. */
export const MARIA = { surname: ' иванова ', name: 'МАРИЯ', date: '1990-05-17 00:00:00.000', gender: 2, phone: '8 916 123-45-67' };
/** The demo patient demo-2 (Фёдоров Алексей, 1985-11-02, male, +79031112233). */
export const ALEXEY = { surname: 'Федоров', name: 'Алексей', date: '1985-11-02 00:00:00.000', gender: 1, phone: '+79031112233' };

/** The service's database, for seeding and inspecting. */
export async function databaseOf(service: TestService): Promise<{ knex: Knex; close(): Promise<void> }> {
  return openDatabase(service.config, createLogger('silent'), { adopt: false });
}

/**
 * EXCHANGE_TOKEN_PHONE=optional: for the suites about sessions, tokens and matching beyond the phone,
 * which store exchange tokens without one (the binding itself: login-fixation.test.ts, sdk-flows).
 */
export const PHONE_OPTIONAL = { EXCHANGE_TOKEN_PHONE: 'optional' } as const;

/** The real service with the test's internal account and the demo patients. */
export async function startEhrTestService(
  env: Record<string, string> = {},
  roles?: readonly Role[],
  logDestination?: NodeJS.WritableStream,
): Promise<TestService> {
  const service = await startTestService({ INTERNAL_USERS, ...env }, roles, logDestination);
  const database = await databaseOf(service);
  await seedDemoPatients(database.knex);
  await database.close();
  return service;
}

let counter = 0;
/** A value unique within the test run, for users and tokens. */
export function unique(prefix: string): string {
  counter += 1;
  return `${prefix}-${process.pid}-${counter}-${Math.random().toString(36).slice(2, 8)}`;
}

/** The authorization server's save_exchange_token, with the SHA-1 credential. */
export function saveExchangeToken(service: TestService, exchangeToken: string, authInfo: Record<string, unknown>, password = INTERNAL_PASSWORD) {
  return rpc(
    service.internalUrl,
    'embedded_storage.save_exchange_token',
    { exchangeToken, authInfo },
    { user: INTERNAL_USER, token: sha1hex(password + exchangeToken) },
  );
}

/** The authorization server's save_auth_info, with the SHA-1 credential over the user's user_sign. */
export function saveAuthInfo(service: TestService, authInfo: Record<string, unknown>, userSign: string) {
  return rpc(service.internalUrl, 'embedded_storage.save_auth_info', { authInfo }, { user: INTERNAL_USER, token: sha1hex(INTERNAL_PASSWORD + userSign) });
}

export function authenticate(service: TestService, exchangeToken: string, patientProperties: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return rpc(service.publicUrl, 'embedded_storage.authenticate', { exchangeToken, patientProperties, ...extra });
}

export function getPatient(service: TestService, cred?: { user: string; token: string }) {
  return rpc(service.publicUrl, 'patient.get_patient', {}, cred);
}

/** A user matched to `properties`' patient with a live session; returns the session and the user_sign. */
export async function authenticatedUser(service: TestService, properties: Record<string, unknown> = MARIA, ttl = 3600) {
  const user = unique('user');
  const token = unique('token');
  const exchangeToken = unique('exchange');
  // The phone the authorization server verified: the patient's (EXCHANGE_TOKEN_PHONE=required by default).
  const saved = await saveExchangeToken(service, exchangeToken, { user, token, ttl, phone: toE164(String(properties.phone)) });
  if (saved.error) throw new Error(JSON.stringify(saved.error));
  const answer = await authenticate(service, exchangeToken, properties);
  if (answer.error) throw new Error(JSON.stringify(answer.error));
  return { cred: { user, token }, userSign: (answer.result as { user_sign: string }).user_sign };
}
