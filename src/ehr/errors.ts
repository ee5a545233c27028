import { RpcError } from './rpc/errors.js';

/**
 * The application errors of interface A (codes of the peer SDK), as documented in
 * specs/openrpc.json. `reason` is a fixed phrase: never personal data or a secret; `hint`, when
 * given, tells the expected form of what was refused, from the spec alone.
 */
const applicationError = (code: number, message: string) => (reason: string, hint?: string) =>
  new RpcError(code, message, hint === undefined ? { reason } : { reason, hint });

export const EhrErrors = {
  /** Bad internal cred, an unusable exchange token, or an end-user cred without a stored session. */
  notAuthorized: applicationError(-33000, 'NotAuthorized'),
  authExpired: applicationError(-33001, 'AuthExpired'),
  /** authenticate found no single matching patient. */
  patientNotAuthenticated: applicationError(-34001, 'PatientNotAuthenticated'),
  /** The session is valid, but its patient is no longer active. */
  patientNotFound: applicationError(-34002, 'PatientNotFound'),
  saveAuthInfoError: applicationError(-34003, 'SaveAuthInfoError'),
  saveExchangeTokenError: applicationError(-34004, 'SaveExchangeTokenError'),
  userNotFound: applicationError(-34007, 'UserNotFound'),
  /** authenticate by a user already linked to a patient. */
  patientAlreadyLinked: applicationError(-34009, 'PatientAlreadyLinked'),
  /** A medical-record read of a patient the caller may not see, or a back-office method called with an end user's cred. */
  accessForbidden: applicationError(-33403, 'AccessForbidden'),
};

/**
 * The not-found errors of the medical record's items: the peer's codes, and its message, which
 * names the handler's number, the method and the id asked for (the SDK's tests compare it).
 */
export const ITEM_NOT_FOUND = {
  appointment: { code: -34005, handler: 100, label: 'Appointment', reason: 'no such appointment' },
  appointment_result: { code: -34010, handler: 200, label: 'Appointment result', reason: 'no such appointment result' },
  prescription: { code: -34008, handler: 300, label: 'Prescription', reason: 'no such prescription' },
  diagnostic_report: { code: -34006, handler: 400, label: 'Diagnostic report', reason: 'no such diagnostic report' },
} as const;

export function itemNotFound(entity: keyof typeof ITEM_NOT_FOUND, method: string, id: string): RpcError {
  const { code, handler, label, reason } = ITEM_NOT_FOUND[entity];
  return new RpcError(code, `Request #${handler} ${method}: ${label} ${id} not found`, { reason });
}

/** -32602 raised by a handler for a rule the param schemas cannot express. */
export function invalidParam(path: string, message: string): RpcError {
  return new RpcError(-32602, 'Invalid params', { errors: [{ path, message }] });
}

/** PostgreSQL unique_violation: the database, not a prior check, decides uniqueness. */
export function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: unknown }).code === '23505';
}
