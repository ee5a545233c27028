import { randomUUID } from 'node:crypto';
import { retryOnDeadlock, statement, type Sql } from '../../../db/sql.js';
import type { CircuitBreaker } from '../../../callbacks/circuit-breaker.js';
import type { AttemptOutcome, CallbackBody, CallbackSender, OutgoingCallback } from '../../../callbacks/delivery.js';
import { runInRequest } from '../../../logging/request-context.js';
import { openClinicSecret } from '../../accounts/clients.js';
import { ENDED_STATES, FILE_CALLBACKS, sqlList } from '../lifecycle/lifecycle.js';
import { claimedCallbackColumns, type ClaimedCallback } from '../lifecycle/callback-rows.js';
import { requestFileBase64Slices } from '../lifecycle/request-files.js';
import { base64Length } from '../../values/values.js';
import type { PipelineContext } from '../lifecycle/requests.js';
import { claimInTurns } from '../lifecycle/transitions.js';
import { tracer, type SpanOptions } from '../../../tracing/tracing.js';

/**
 * The delivery stage of interface B's callbacks: due callbacks claimed by receiver origin in turn
 * (with the clinic's sealed credentials), each attempted on its own by the generic sender
 * (callbacks/) unless its origin's circuit is open (then postponed by the retry policy), and its
 * outcome recorded as soon as it is known, with the others known meanwhile, in one statement; a slow
 * receiver delays only its own callbacks. Then, once those are committed, what follows from them:
 * the callback held until this one was delivered (the next of its request, lifecycle.ts) is
 * released, and a request whose file callback was delivered loses its copy of the file
 * (retention.ts).
 */

/** The callbacks whose bodies carry the request's files, as SQL. */
const FILE_CALLBACK_NAMES = sqlList(FILE_CALLBACKS);

/**
 * Due callbacks, by receiver origin in turn (claimInTurns): a retry at its time; the first attempt
 * of a round (a new callback, a released result, a replay) CALLBACK_RETRY_SCHEDULE's first entry
 * ($3) after it became due; with the clinic's sealed credentials.
 */
const CLAIM = statement(
  'emdr_claim_callbacks',
  claimInTurns({
    table: 'emdr_callbacks',
    alias: 'c',
    id: 'id',
    key: 'origin',
    keyType: 'text',
    scope: (alias) => `${alias}.state = 'pending'`,
    claimable: (alias) => `${alias}.available_at <= now() and (${alias}.leased_until is null or ${alias}.leased_until <= now())
        and (${alias}.round_attempts > 0 or ${alias}.available_at <= now() - $3 * interval '1 millisecond')`,
    join: { from: 'emdr_requests r, emdr_clients k', where: 'r.queue_message_id = c.queue_message_id and k.id = r.client_id' },
    returning: claimedCallbackColumns({
      callback: 'c',
      client: 'k',
      operation: 'r.operation',
      requestId: 'coalesce(r.client_request_id, r.request_id)',
      traceParent: 'r.trace_parent',
      documentOctets: 'octet_length(r.document)',
      signatureOctets: 'octet_length(r.signature)',
    }),
  }),
);

/** Each attempt recorded and the callback's next step: delivered, another attempt at its time, or failed (unless a concurrent duplicate settled it). */
const RECORD = statement(
  'emdr_record_attempts',
  `with input as (
     select * from unnest($1::text[], $2::bool[], $3::int[], $4::text[], $5::timestamptz[], $6::float8[], $7::int[]) as t(id, delivered, http_status, error, at, retry_in_ms, duration_ms)
   ),
   -- Locked in id order, as a settling transition locks the callback before the one it emits (transitions.ts): no deadlock between the two.
   locked as (
     select c.id from emdr_callbacks c join input i using (id) order by c.id for update of c
   ),
   updated as (
     update emdr_callbacks c
        set state = case when i.delivered then 'delivered' when i.retry_in_ms is null then 'failed' else 'pending' end,
            delivered_at = case when i.delivered then now() else c.delivered_at end,
            round_attempts = c.round_attempts + 1,
            attempt_count = c.attempt_count + 1,
            last_error = case when i.delivered then c.last_error else i.error end,
            available_at = case when i.retry_in_ms is null then c.available_at else now() + i.retry_in_ms * interval '1 millisecond' end,
            leased_until = null
       from input i join locked l using (id) where c.id = i.id and c.state = 'pending'
     returning c.id, c.queue_message_id, c.sequence, c.state, c.attempt_count, c.name, c.holds_next
   ),
   attempts as (
     insert into emdr_callback_attempts (callback_id, attempt, at, http_status, error, duration_ms)
     select u.id, u.attempt_count, i.at, i.http_status, i.error, i.duration_ms from updated u join input i using (id)
   ),
   -- A callback's final outcome in the audit trail (src/audit/trail.ts); the file callback says whether the document was another organization's.
   audited as (
     insert into audit_events (request_id, business_id, action, emdr_id, queue_message_id, cross_organization, outcome)
     select r.request_id, k.business_id, u.name, r.emdr_id, u.queue_message_id,
            case when u.name in (${FILE_CALLBACK_NAMES}) then exists (select 1 from emdr_document_disclosures d where d.queue_message_id = u.queue_message_id) end,
            u.state
       from updated u join emdr_requests r on r.queue_message_id = u.queue_message_id join emdr_clients k on k.id = r.client_id
      where u.state in ('delivered', 'failed')
   )
   -- Whether a callback is held behind this one: marked by the settle that held it (read here in its newest version, even
   -- when that settle committed after this statement began), or seen waiting (held before emdr_0013 added the mark, or
   -- put back by a replay).
   select id, queue_message_id, sequence, state,
          holds_next or exists (select 1 from emdr_callbacks w where w.queue_message_id = u.queue_message_id and w.sequence = u.sequence + 1 and w.state = 'waiting') as holds_next
     from updated u`,
);

/**
 * What follows once the outcomes are committed: the callback after each one delivered ($1, $2: its
 * request and position), held until then, is released; requests whose file callback was delivered
 * ($3) lose their copy of the file, once they have ended (a RegisterDocument's went when the
 * registry answered, transitions.ts).
 */
const FOLLOW_UP = statement(
  'emdr_callbacks_follow_up',
  `with released as (
     update emdr_callbacks w set state = 'pending', available_at = now()
       from unnest($1::uuid[], $2::int2[]) as d(queue_message_id, sequence)
      where w.queue_message_id = d.queue_message_id and w.sequence = d.sequence + 1 and w.state = 'waiting'
     returning w.queue_message_id
   ),
   dropped as (
     update emdr_requests r set document = null, signature = null, personal_signatures = null
      where r.queue_message_id = any($3::uuid[]) and r.state in (${sqlList(ENDED_STATES)})
        and (r.document is not null or r.signature is not null or r.personal_signatures is not null)
        and not exists (select 1 from emdr_callbacks c where c.queue_message_id = r.queue_message_id and c.name in (${FILE_CALLBACK_NAMES}) and c.state <> 'delivered')
     returning 1
   )
   select (select count(*) from released)::int as released`,
);

/** Held callbacks whose predecessor is delivered (a worker stopped between RECORD and FOLLOW_UP). */
const RELEASE_STRANDED = statement(
  'emdr_release_stranded_callbacks',
  `update emdr_callbacks w set state = 'pending', available_at = now()
    where w.state = 'waiting'
      and exists (select 1 from emdr_callbacks a where a.queue_message_id = w.queue_message_id and a.sequence = w.sequence - 1 and a.state = 'delivered')`,
);
/** A stranded callback needs a worker stopped between two statements: looked for as rarely as a lease runs out. */
const STRANDED_SWEEP_MS = 30_000;

const EXTEND_CALLBACKS = statement(
  'emdr_extend_callbacks',
  `update emdr_callbacks set leased_until = now() + $2 * interval '1 millisecond' where id = any($1::text[]) and state = 'pending'`,
);

/** The opened credentials of a clinic, kept while its sealed secrets are the same. */
interface OpenedCredentials {
  tokenSealed: Buffer;
  secretSealed: Buffer;
  token: string;
  signingSecret: string;
}
const CREDENTIALS_CACHE_SIZE = 1000;

/** A callback claimed and its attempt's outcome. */
export interface Attempted {
  row: ClaimedCallback;
  outcome: AttemptOutcome;
}

export class DeliveryStage {
  private readonly credentials = new Map<string, OpenedCredentials>();
  private lastSweep = 0;

  constructor(
    private readonly context: PipelineContext,
    private readonly sender: CallbackSender,
    private readonly circuits: CircuitBreaker,
  ) {}

  /** Up to `limit` due callbacks, by origin in turn: none of the origins in `full`, at most its room of an origin in `room`, `perOrigin` of another. */
  async claim(limit: number, room: ReadonlyMap<string, number>, perOrigin: number, full: readonly string[]): Promise<ClaimedCallback[]> {
    if (Date.now() - this.lastSweep > STRANDED_SWEEP_MS) {
      this.lastSweep = Date.now();
      await this.context.sql.run(RELEASE_STRANDED);
    }
    return this.context.sql.rows<ClaimedCallback>(CLAIM, [
      limit,
      this.context.leaseMs,
      this.context.retryScheduleMs[0] ?? 0,
      [...room.keys()],
      [...room.values()],
      perOrigin,
      [...full],
    ]);
  }

  private opened(row: ClaimedCallback): OpenedCredentials {
    const key = `${row.business_id}\u0000${row.user_name}`;
    const cached = this.credentials.get(key);
    if (cached?.tokenSealed.equals(row.callback_token_sealed) && cached.secretSealed.equals(row.signing_secret_sealed)) return cached;
    const account = { businessId: row.business_id, user: row.user_name };
    const opened = {
      tokenSealed: row.callback_token_sealed,
      secretSealed: row.signing_secret_sealed,
      token: openClinicSecret(this.context.dataKey, 'callback_token', account, row.callback_token_sealed),
      signingSecret: openClinicSecret(this.context.dataKey, 'signing_secret', account, row.signing_secret_sealed),
    };
    if (this.credentials.size >= CREDENTIALS_CACHE_SIZE) this.credentials.clear();
    this.credentials.set(key, opened);
    return opened;
  }

  private outgoing(row: ClaimedCallback): OutgoingCallback {
    const credentials = this.opened(row);
    return {
      id: row.id,
      url: row.url,
      headers: { businessId: row.business_id, user: row.callback_user, token: credentials.token, 'x-request-id': row.request_id },
      signingSecret: credentials.signingSecret,
      body: callbackBody(this.context.sql, row),
      roundAttempts: row.round_attempts,
    };
  }

  /** An attempt in a client span of the request's trace: which callback, which attempt, whether it was delivered (never the URL, the body or the answer). */
  private tracedAttempt(row: ClaimedCallback): Promise<AttemptOutcome> {
    const options = (): SpanOptions => ({
      kind: 'client',
      parent: row.trace_parent,
      attributes: {
        'ehr_gateway.callback': row.name,
        'ehr_gateway.webhook_id': row.id,
        'ehr_gateway.queue_message_id': row.queue_message_id,
        'ehr_gateway.callback_sequence': row.sequence,
        'ehr_gateway.round_attempt': row.round_attempts + 1,
      },
    });
    return tracer().inSpan('callback attempt', options, async (span) => {
      const outcome = await this.sender.attempt(this.outgoing(row));
      span.setAttributes(() => ({
        'ehr_gateway.delivered': outcome.delivered,
        ...(outcome.httpStatus === undefined ? {} : { 'http.response.status_code': outcome.httpStatus }),
      }));
      if (!outcome.delivered) span.fail(outcome.httpStatus === undefined ? 'no answer' : `HTTP ${outcome.httpStatus}`);
      return outcome;
    });
  }

  /** One callback's attempt, or its postponement while its origin's circuit is open; the circuit learns whether the receiver answered. */
  readonly attempt = async (row: ClaimedCallback): Promise<Attempted> => {
    const admission = this.circuits.admit(row.origin);
    if (!admission.send) return { row, outcome: this.sender.postpone({ id: row.id, roundAttempts: row.round_attempts }, admission.reason) };
    const outcome = await this.tracedAttempt(row);
    if (outcome.httpStatus !== undefined || outcome.silent) {
      const before = this.circuits.state(row.origin);
      this.circuits.record(row.origin, outcome.httpStatus !== undefined, admission.probe);
      const after = this.circuits.state(row.origin);
      if (after !== before && after === 'open')
        this.context.logger.warn(
          { origin: row.origin, error: outcome.error },
          'callback receiver not answering: its circuit is open, its callbacks are postponed by the retry schedule until a probe is answered',
        );
      if (after !== before && after === 'closed') this.context.logger.info({ origin: row.origin }, 'callback receiver answers again: its circuit is closed');
    }
    return { row, outcome };
  };

  /** Records the outcomes in one statement and what follows from them; returns how many callbacks became due at once (released results) and when retries fall due. */
  readonly settle = async (attempted: readonly Attempted[]): Promise<{ released: number; retries: number[] }> => {
    const batch = attempted.map((entry) => entry.row);
    const outcomes = attempted.map((entry) => entry.outcome);
    const settled = await recordOutcomes(this.context.sql, outcomes);
    this.count(batch, outcomes, settled);
    this.logFailures(batch, outcomes, settled);
    const claimed = new Map(batch.map((row) => [row.id, row]));
    const delivered = settled.filter((row) => row.state === 'delivered');
    // Delivered callbacks with one held behind them (lifecycle.ts): that one may go now. Most have none held (the next
    // one was not made yet, or was made due at once): no statement for them.
    const withNext = delivered.filter((row) => row.holds_next);
    // Delivered file callbacks: their requests' copies of the file may go.
    const fileDelivered = delivered
      .filter((row) => FILE_CALLBACKS.includes(claimed.get(row.id)!.name as (typeof FILE_CALLBACKS)[number]))
      .map((row) => row.queue_message_id);
    const retries = outcomes.flatMap((outcome) => (outcome.delivered || outcome.retryInMs === null ? [] : [outcome.retryInMs]));
    if (withNext.length === 0 && fileDelivered.length === 0) return { released: 0, retries };
    const followUp = await retryOnDeadlock(() =>
      this.context.sql.row<{ released: number }>(FOLLOW_UP, [withNext.map((row) => row.queue_message_id), withNext.map((row) => row.sequence), fileDelivered]),
    );
    return { released: followUp!.released, retries };
  };

  /**
   * Each failed attempt at warn, in the request's context (its request id), with when the next one
   * goes; then, once the schedule ran out, that the callback failed and waits for a replay.
   */
  private logFailures(batch: readonly ClaimedCallback[], outcomes: readonly AttemptOutcome[], settled: ReadonlyArray<{ id: string; state: string }>): void {
    const rows = new Map(batch.map((row) => [row.id, row]));
    const exhausted = new Set(settled.filter((row) => row.state === 'failed').map((row) => row.id));
    for (const outcome of outcomes) {
      if (outcome.delivered) continue;
      const row = rows.get(outcome.id)!;
      const fields = {
        queueMessageId: row.queue_message_id,
        callback: row.name,
        webhookId: row.id,
        url: row.url,
        httpStatus: outcome.httpStatus,
        error: outcome.error,
      };
      runInRequest({ requestId: row.request_id }, () => {
        // A postponement is one line per callback of a receiver already logged as not answering: debug.
        if (outcome.postponed) this.context.logger.debug({ ...fields, nextAttemptInMs: outcome.retryInMs }, 'callback attempt postponed: circuit open');
        else this.context.logger.warn({ ...fields, nextAttemptInMs: outcome.retryInMs }, 'callback attempt failed');
        if (exhausted.has(row.id))
          this.context.logger.warn(
            fields,
            'callback failed: retry schedule exhausted; replay it from /console, POST /api/messages/{id}/replay or ehr-gateway callbacks replay',
          );
      });
    }
  }

  /** The attempts in the metrics, by callback name. */
  private count(batch: readonly ClaimedCallback[], outcomes: readonly AttemptOutcome[], settled: ReadonlyArray<{ id: string; state: string }>): void {
    const metrics = this.context.metrics;
    if (!metrics) return;
    const names = new Map(batch.map((row) => [row.id, row.name]));
    for (const outcome of outcomes) {
      const callback = names.get(outcome.id)!;
      if (outcome.postponed) {
        metrics.callbackPostponements.inc({ callback });
        continue;
      }
      metrics.callbackAttempts.inc({ callback });
      (outcome.delivered ? metrics.callbackDeliveries : metrics.callbackFailures).inc({ callback });
    }
    for (const row of settled) if (row.state === 'failed') metrics.callbacksExhausted.inc({ callback: names.get(row.id)! });
  }

  readonly extend = (batch: ClaimedCallback[]) => this.context.sql.run(EXTEND_CALLBACKS, [batch.map((row) => row.id), this.context.leaseMs]);
}

function recordOutcomes(
  sql: Sql,
  outcomes: readonly AttemptOutcome[],
): Promise<Array<{ id: string; queue_message_id: string; sequence: number; state: string; holds_next: boolean }>> {
  return retryOnDeadlock(() =>
    sql.rows(RECORD, [
      outcomes.map((outcome) => outcome.id),
      outcomes.map((outcome) => outcome.delivered),
      outcomes.map((outcome) => outcome.httpStatus ?? null),
      outcomes.map((outcome) => outcome.error ?? null),
      outcomes.map((outcome) => outcome.at),
      outcomes.map((outcome) => outcome.retryInMs),
      outcomes.map((outcome) => outcome.durationMs),
    ]),
  );
}

/**
 * The exact bytes of a callback body. The file callback's files come from the request row slice
 * by slice, their base64 (encoded by PostgreSQL) spliced into the JSON, so the document is never
 * held: the sender reads the slices once to sign and once to send.
 */
function callbackBody(sql: Sql, row: ClaimedCallback): CallbackBody {
  if (row.document_size === null && row.signature_size === null) return { bytes: Buffer.from(row.payload) };
  const payload = JSON.parse(row.payload) as Record<string, unknown>;
  if (!payload.document) return { bytes: Buffer.from(row.payload) };
  // A fresh UUID occurs nowhere else in the JSON, so it marks where each file's base64 goes.
  const marker = randomUUID();
  const json = JSON.stringify({ ...payload, document: { ...(payload.document as object), content: marker, signature: marker } });
  const [beforeContent, beforeSignature, after] = json.split(marker).map((part) => Buffer.from(part));
  const documentSize = row.document_size ?? 0;
  const signatureSize = row.signature_size ?? 0;
  return {
    length: beforeContent!.length + base64Length(documentSize) + beforeSignature!.length + base64Length(signatureSize) + after!.length,
    async *chunks() {
      yield beforeContent!;
      yield* requestFileBase64Slices(sql, row.queue_message_id, 'document', documentSize);
      yield beforeSignature!;
      yield* requestFileBase64Slices(sql, row.queue_message_id, 'signature', signatureSize);
      yield after!;
    },
  };
}

/**
 * Puts the failed callbacks of a request back on a fresh retry schedule; returns their webhook ids.
 * A callback stays held while one before it is not delivered (the callbacks before are locked, as a
 * delivery would change them).
 */
const REPLAY = statement(
  'emdr_replay_failed',
  `with callbacks as (select id, sequence, state from emdr_callbacks where queue_message_id = $1 order by id for share)
   update emdr_callbacks c
      set state = case when exists (select 1 from callbacks e where e.sequence < c.sequence and e.state <> 'delivered') then 'waiting' else 'pending' end,
          round_attempts = 0, available_at = now(), leased_until = null
    where c.queue_message_id = $1 and c.state = 'failed'
   returning c.id`,
);

export async function replayFailedCallbacks(sql: Sql, queueMessageId: string): Promise<string[]> {
  return (await sql.rows<{ id: string }>(REPLAY, [queueMessageId])).map((row) => row.id);
}
