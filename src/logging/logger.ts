import { pino, type Logger } from 'pino';
import { currentRequest } from './request-context.js';

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

/** A PostgreSQL error as node-postgres reports it: a severity and a five-character SQLSTATE code. */
function isDatabaseError(error: Error): boolean {
  const { severity, code } = error as { severity?: unknown; code?: unknown };
  return typeof severity === 'string' && typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code);
}

/**
 * Errors are logged by name, message, code and stack only. A database error's text quotes the
 * values it failed on (`invalid input syntax for type date: "…"`; knex adds the query with its
 * bindings), so it is logged by its SQLSTATE code, routine and the schema objects named, and its
 * stack without the first line, which repeats the text.
 */
function serializeError(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const { code } = error as { code?: unknown };
  if (isDatabaseError(error)) {
    const { severity, routine, table, column, constraint } = error as Error & {
      severity?: string;
      routine?: string;
      table?: string;
      column?: string;
      constraint?: string;
    };
    const frames = (error.stack ?? '')
      .split('\n')
      .filter((line) => line.trimStart().startsWith('at '))
      .join('\n');
    return { type: 'DatabaseError', message: `database error ${code as string}`, code, severity, routine, table, column, constraint, stack: frames };
  }
  return { type: error.name, message: error.message, ...(code === undefined ? {} : { code }), stack: error.stack };
}

const NO_FIELDS = {};

export function createLogger(level: string, destination: NodeJS.WritableStream = process.stdout): Logger {
  return pino(
    {
      level,
      base: { service: 'ehr-gateway' },
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      serializers: { err: serializeError },
      timestamp: pino.stdTimeFunctions.isoTime,
      // Every line logged while a request is served names it.
      // requestId is the id the client sees (its own x-request-id, else the gateway's); the gateway's own beside it when they differ.
      mixin: () => {
        const request = currentRequest();
        if (request === undefined) return NO_FIELDS;
        return request.clientRequestId === undefined
          ? { requestId: request.requestId }
          : { requestId: request.clientRequestId, gatewayRequestId: request.requestId };
      },
    },
    destination,
  );
}
