import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * Paths that may carry personal data or secrets. Handlers should not log such values at all;
 * redaction is the safety net for when an object slips into a log line anyway.
 */
const REDACTED_PATHS = [
  'cred',
  'password',
  'token',
  'exchangeToken',
  'user_sign',
  'userSign',
  'patientProperties',
  'patient',
  'authorization',
  'secret',
  'signingSecret',
  'document',
  'signature',
  'headers.token',
  'headers.authorization',
  'headers["webhook-signature"]',
  '*.cred',
  '*.password',
  '*.token',
  '*.exchangeToken',
  '*.user_sign',
  '*.userSign',
  '*.patientProperties',
  '*.patient',
  '*.phone',
  '*.snils',
  '*.patientSnils',
  '*.secret',
  '*.signingSecret',
  '*.document',
  '*.signature',
  '*.databaseUrl',
  'databaseUrl',
];

/**
 * Errors are logged by name, message, code and stack only: a driver error's `detail`, `where` or
 * query parameters may quote the stored values (personal data).
 */
function serializeError(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const { code } = error as { code?: unknown };
  return { type: error.name, message: error.message, ...(code === undefined ? {} : { code }), stack: error.stack };
}

export function createLogger(level: string, destination: NodeJS.WritableStream = process.stdout): Logger {
  return pino(
    {
      level,
      base: { service: 'ehr-gateway' },
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      serializers: { err: serializeError },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}
