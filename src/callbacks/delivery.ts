import { randomBytes, randomUUID } from 'node:crypto';
import type PgBoss from 'pg-boss';
import type { Knex } from 'knex';
import type { Logger } from '../logging/logger.js';
import { QUEUES, jobExecutor, type CallbackJob } from '../emdr/queue.js';
import { requestFileBase64Slices } from '../emdr/request-files.js';
import { signWebhook } from './signing.js';

export const CALLBACK_TIMEOUT_MS = 15_000;
/** What the gateway keeps of a clinic's answer, for `messages show`. */
const ERROR_TEXT_LIMIT = 200;

export type CallbackName =
  | 'SendRegisterDocumentResponse'
  | 'SendRegisterDocumentResultResponse'
  | 'SendDemandContentResponse'
  | 'SendDocumentFileResultResponse';

export interface NewCallback {
  queueMessageId: string;
  name: CallbackName;
  /** 1: acceptance, 2: result (held until 1 is delivered). */
  sequence: 1 | 2;
  /** The clinic's base callback URL; the callback goes to `<base>/api/<name>`. */
  baseUrl: string;
  payload: Record<string, unknown>;
}

/** Who the gateway is to the receiver of a request's callbacks. */
export interface CallbackCredentials {
  businessId: string;
  user: string;
  token: string;
  /** Standard Webhooks secret (`whsec_…`) for webhook-signature. */
  signingSecret: string;
}

export interface DeliveryContext {
  knex: Knex;
  boss: PgBoss;
  retryScheduleMs: readonly number[];
  logger: Logger;
  /** The credentials for the callbacks of request `queueMessageId`. */
  credentialsOf(queueMessageId: string): Promise<CallbackCredentials>;
  /** Called in the transaction that settles a callback of the request for good (delivered, or failed with the schedule exhausted). */
  onSettled?(trx: Knex.Transaction, queueMessageId: string): Promise<void>;
}

function callbackUrl(baseUrl: string, name: CallbackName): string {
  return `${baseUrl.replace(/\/+$/, '')}/api/${name}`;
}

async function sendAttemptJob(boss: PgBoss, db: PgBoss.Db, callbackId: string, delayMs: number): Promise<void> {
  const job: CallbackJob = { callbackId };
  await boss.send(QUEUES.callback, job as unknown as object, { db, startAfter: new Date(Date.now() + delayMs) });
}

/**
 * Records a callback in the caller's transaction. A result callback waits until the acceptance
 * callback of its request is delivered: the acceptance row is locked, so a delivery committing at
 * the same moment either sees this row (and releases it) or this insert sees it delivered.
 */
export async function enqueueCallback(trx: Knex.Transaction, boss: PgBoss, retryScheduleMs: readonly number[], callback: NewCallback): Promise<void> {
  let state: 'pending' | 'waiting' = 'pending';
  if (callback.sequence === 2) {
    const acceptance = await trx('emdr_callbacks').where({ queue_message_id: callback.queueMessageId, sequence: 1 }).forUpdate().first('state');
    if (acceptance?.state !== 'delivered') state = 'waiting';
  }
  const id = `msg_${randomBytes(16).toString('hex')}`;
  const inserted = await trx('emdr_callbacks')
    .insert({
      id,
      queue_message_id: callback.queueMessageId,
      name: callback.name,
      sequence: callback.sequence,
      url: callbackUrl(callback.baseUrl, callback.name),
      payload: callback.payload,
      state,
    })
    .onConflict(['queue_message_id', 'sequence'])
    .ignore()
    .returning('id');
  if (inserted.length > 0 && state === 'pending') await sendAttemptJob(boss, await jobExecutor(trx), id, retryScheduleMs[0] ?? 0);
}

/**
 * The exact bytes of a callback body, in chunks. The file callback's files come from the request
 * row slice by slice, their base64 spliced into the JSON, so the document never sits in memory as
 * one base64 string, one JSON string and one Buffer at once.
 */
async function callbackBody(knex: Knex, row: { name: string; queue_message_id: string; payload: Record<string, unknown> }): Promise<Buffer[]> {
  const payload = row.payload;
  if (row.name !== 'SendDocumentFileResultResponse' || !payload.document) return [Buffer.from(JSON.stringify(payload))];
  // A fresh UUID occurs nowhere else in the JSON, so it marks where each file's base64 goes.
  const marker = randomUUID();
  const json = JSON.stringify({ ...payload, document: { ...(payload.document as object), content: marker, signature: marker } });
  const [beforeContent, beforeSignature, after] = json.split(marker);
  const chunks = [Buffer.from(beforeContent!)];
  for await (const slice of requestFileBase64Slices(knex, row.queue_message_id, 'document')) chunks.push(Buffer.from(slice));
  chunks.push(Buffer.from(beforeSignature!));
  for await (const slice of requestFileBase64Slices(knex, row.queue_message_id, 'signature')) chunks.push(Buffer.from(slice));
  chunks.push(Buffer.from(after!));
  return chunks;
}

interface AttemptResult {
  delivered: boolean;
  httpStatus?: number;
  error?: string;
}

async function attempt(url: string, headers: Record<string, string>, body: readonly Buffer[]): Promise<AttemptResult> {
  try {
    // Node's fetch wants `duplex: 'half'` with a stream body; the RequestInit typings lack it.
    const init: RequestInit & { duplex: 'half' } = {
      method: 'POST',
      // Streamed chunk by chunk (not joined into one more copy), with its length known up front.
      headers: { ...headers, 'content-length': String(body.reduce((total, chunk) => total + chunk.length, 0)) },
      body: new ReadableStream({
        start(controller) {
          for (const chunk of body) controller.enqueue(chunk);
          controller.close();
        },
      }),
      duplex: 'half',
      signal: AbortSignal.timeout(CALLBACK_TIMEOUT_MS),
      redirect: 'manual',
    };
    const response = await fetch(url, init);
    const text = await response.text();
    if (response.status !== 200) return { delivered: false, httpStatus: response.status, error: `HTTP ${response.status}` };
    let status: unknown;
    try {
      status = (JSON.parse(text) as { status?: unknown }).status;
    } catch {
      return { delivered: false, httpStatus: 200, error: 'answer is not JSON' };
    }
    if (status !== 'Success') return { delivered: false, httpStatus: 200, error: `answer status is ${JSON.stringify(status)?.slice(0, ERROR_TEXT_LIMIT)}, not "Success"` };
    return { delivered: true, httpStatus: 200 };
  } catch (error) {
    const err = error as Error & { cause?: { code?: string } };
    if (err.name === 'TimeoutError') return { delivered: false, error: `no answer within ${CALLBACK_TIMEOUT_MS / 1000} s` };
    return { delivered: false, error: `connection failed: ${err.cause?.code ?? err.message}`.slice(0, ERROR_TEXT_LIMIT) };
  }
}

/** One attempt of one callback (a pg-boss job), then the next step: done, next attempt, or failed. */
export async function deliverCallback(context: DeliveryContext, callbackId: string): Promise<void> {
  const { knex, boss, retryScheduleMs, logger } = context;
  const row = await knex('emdr_callbacks').where({ id: callbackId }).first('id', 'name', 'url', 'payload', 'state', 'queue_message_id');
  if (!row || row.state !== 'pending') return;

  const credentials = await context.credentialsOf(row.queue_message_id);
  const body = await callbackBody(knex, row);
  const timestamp = Math.floor(Date.now() / 1000);
  const headers = {
    'content-type': 'application/json',
    businessId: credentials.businessId,
    user: credentials.user,
    token: credentials.token,
    'webhook-id': row.id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signWebhook(credentials.signingSecret, row.id, timestamp, body),
  };
  const startedAt = new Date();
  const started = performance.now();
  const result = await attempt(row.url, headers, body);
  const durationMs = Math.round(performance.now() - started);

  await knex.transaction(async (trx) => {
    const current = await trx('emdr_callbacks').where({ id: callbackId }).forUpdate().first('state', 'round_attempts');
    // A concurrent duplicate (an expired job that came back) already settled it.
    if (current.state !== 'pending') return;
    const { count } = (await trx('emdr_callback_attempts').where({ callback_id: callbackId }).count({ count: '*' }).first()) as { count: string };
    await trx('emdr_callback_attempts').insert({
      callback_id: callbackId,
      attempt: Number(count) + 1,
      at: startedAt,
      http_status: result.httpStatus ?? null,
      error: result.error ?? null,
      duration_ms: durationMs,
    });
    const roundAttempts = current.round_attempts + 1;
    if (result.delivered) {
      await trx('emdr_callbacks').where({ id: callbackId }).update({ state: 'delivered', delivered_at: trx.fn.now(), round_attempts: roundAttempts });
      const released = await trx('emdr_callbacks').where({ queue_message_id: row.queue_message_id, state: 'waiting' }).update({ state: 'pending' }).returning('id');
      const db = released.length > 0 ? await jobExecutor(trx) : undefined;
      for (const { id } of released) await sendAttemptJob(boss, db!, id, retryScheduleMs[0] ?? 0);
      await context.onSettled?.(trx, row.queue_message_id);
      return;
    }
    if (roundAttempts < retryScheduleMs.length) {
      await trx('emdr_callbacks').where({ id: callbackId }).update({ round_attempts: roundAttempts, last_error: result.error });
      await sendAttemptJob(boss, await jobExecutor(trx), callbackId, retryScheduleMs[roundAttempts]!);
    } else {
      await trx('emdr_callbacks').where({ id: callbackId }).update({ state: 'failed', round_attempts: roundAttempts, last_error: result.error });
      await context.onSettled?.(trx, row.queue_message_id);
      logger.warn({ callbackId, queueMessageId: row.queue_message_id, name: row.name }, 'callback failed: retry schedule exhausted');
    }
  });
}

/** Puts the failed callbacks of a request back on a fresh retry schedule; returns their webhook ids. */
export async function replayFailedCallbacks(knex: Knex, boss: PgBoss, retryScheduleMs: readonly number[], queueMessageId: string): Promise<string[]> {
  return knex.transaction(async (trx) => {
    const replayed = await trx('emdr_callbacks')
      .where({ queue_message_id: queueMessageId, state: 'failed' })
      .update({ state: 'pending', round_attempts: 0 })
      .returning(['id', 'sequence']);
    const db = replayed.length > 0 ? await jobExecutor(trx) : undefined;
    for (const { id, sequence } of replayed) {
      // A failed result callback stays held while its acceptance callback is not delivered.
      const acceptance = sequence === 2 ? await trx('emdr_callbacks').where({ queue_message_id: queueMessageId, sequence: 1 }).first('state') : undefined;
      if (acceptance && acceptance.state !== 'delivered') await trx('emdr_callbacks').where({ id }).update({ state: 'waiting' });
      else await sendAttemptJob(boss, db!, id, retryScheduleMs[0] ?? 0);
    }
    return replayed.map(({ id }) => id as string);
  });
}
