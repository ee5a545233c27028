import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logging/logger.js';

function capture() {
  const lines: string[] = [];
  const logger = createLogger('info', { write: (line: string) => lines.push(line) } as unknown as NodeJS.WritableStream);
  return { logger, lines };
}

describe('logger', () => {
  it('redacts secrets and personal data that reach a log line', () => {
    const { logger, lines } = capture();
    logger.info(
      { cred: { user: 'u', token: 'tok-secret' }, params: { patientProperties: { surname: 'Иванова', phone: '+79161234567' }, exchangeToken: 'xt-secret' } },
      'call',
    );
    const line = lines.join('');
    for (const secret of ['tok-secret', 'Иванова', '+79161234567', 'xt-secret']) expect(line).not.toContain(secret);
    expect(line).toContain('[redacted]');
  });

  it('logs an error by name, message, code and stack, without the driver detail that may quote values', () => {
    const { logger, lines } = capture();
    const error = Object.assign(new Error('duplicate key value violates unique constraint'), {
      code: '23505',
      detail: 'Key (phone)=(+79161234567) already exists.',
    });
    logger.error({ err: error }, 'failed');
    const logged = JSON.parse(lines[0]!) as { err: Record<string, unknown> };
    expect(logged.err).toMatchObject({ type: 'Error', message: 'duplicate key value violates unique constraint', code: '23505' });
    expect(lines[0]).not.toContain('+79161234567');
  });

  it('logs a database error (node-postgres) by SQLSTATE code and routine, never by its text, detail or the stack line that repeats it', () => {
    const { logger, lines } = capture();
    const error = Object.assign(new Error('insert into "ehr_patients" ("phone") values ($1) - invalid input syntax for type date: "+79161234567"'), {
      name: 'error',
      severity: 'ERROR',
      code: '22007',
      detail: 'Key (phone)=(+79161234567)',
      where: "unnamed portal parameter $1 = '+79161234567'",
      routine: 'DateTimeParseError',
      table: 'ehr_patients',
    });
    logger.error({ err: error }, 'failed');
    const logged = JSON.parse(lines[0]!) as { err: Record<string, unknown> };
    expect(logged.err).toMatchObject({
      type: 'DatabaseError',
      message: 'database error 22007',
      code: '22007',
      severity: 'ERROR',
      routine: 'DateTimeParseError',
      table: 'ehr_patients',
    });
    expect(logged.err.stack).toMatch(/^\s+at /);
    expect(lines[0]).not.toContain('+79161234567');
  });
});
