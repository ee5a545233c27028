import PgBoss from 'pg-boss';
import type { Knex } from 'knex';
import type { Config } from '../config/config.js';
import type { Logger } from '../logging/logger.js';

/** The pg-boss queues of interface B: acceptance checks, registry work, callback attempts. */
export const QUEUES = {
  accept: 'emdr-accept',
  fulfil: 'emdr-fulfil',
  callback: 'emdr-callback',
} as const;

export interface RequestJob {
  queueMessageId: string;
}

export interface CallbackJob {
  callbackId: string;
}

/**
 * Starts pg-boss on the service database. `supervise` (the worker role) runs pg-boss maintenance,
 * which hands expired jobs of a killed worker back: maintenance every half JOB_EXPIRY (at most 15 s),
 * so such a job returns within about 1.5 × JOB_EXPIRY.
 */
export async function startBoss(url: string, config: Config, logger: Logger, options: { supervise: boolean }): Promise<PgBoss> {
  const expireInSeconds = Math.max(1, Math.round(config.jobExpiryMs / 1000));
  const boss = new PgBoss({
    connectionString: url,
    max: 4,
    supervise: options.supervise,
    schedule: false,
    maintenanceIntervalSeconds: Math.max(1, Math.min(15, Math.floor(expireInSeconds / 2))),
  });
  boss.on('error', (error) => logger.error({ err: error }, 'pg-boss error'));
  await boss.start();
  // Crashes and expiries only: failed HTTP attempts are scheduled by the delivery itself (CALLBACK_RETRY_SCHEDULE).
  const retries = { retryLimit: 10, retryDelay: 2, retryBackoff: true, expireInSeconds };
  for (const name of Object.values(QUEUES)) {
    await boss.createQueue(name, { name, ...retries });
    await boss.updateQueue(name, { name, ...retries });
  }
  return boss;
}

/** pg-boss's executor bound to a knex transaction, so a job is sent in the same transaction as our rows. */
export async function jobExecutor(trx: Knex.Transaction): Promise<PgBoss.Db> {
  const connection = (await trx.client.acquireConnection()) as { query(text: string, values: unknown[]): Promise<{ rows: unknown[] }> };
  return { executeSql: (text, values) => connection.query(text, values) as Promise<{ rows: any[] }> };
}
