import { setTimeout as sleep } from 'node:timers/promises';
import { statement, type Sql } from '../../db/sql.js';
import type { Logger } from '../../logging/logger.js';
import { Stage } from '../../work/stage.js';
import { instantMs } from '../values/instant.js';
import type {
  DemandSubmission,
  DocumentOwner,
  OutcomeSink,
  RegistrationSubmission,
  RegistryErrorItem,
  RegistryItem,
  RegistryOutcome,
  RegistryPort,
  RegistryRecord,
  RegistrySearch,
  Submission,
} from './port.js';

export interface BuiltInRegistryOptions {
  latencyMs: number;
  /** Test switch: refuse every registration and file request with RUNTIME_ERROR. */
  fail: boolean;
  /** How long after a submission the registry answers (REGISTRY_ANSWER_DELAY). */
  answerDelayMs?: number;
  /** The lease of a batch of answers in hand (JOB_EXPIRY). */
  leaseMs?: number;
  logger?: Logger;
}

/** `current_version`: the row of the newest version of the document registered as `$1` (its `superseded_by` chain followed). */
const CURRENT_VERSION = `
  chain as (
    select emdr_id, superseded_by, 0 as depth from emdr_registry_documents where emdr_id = $1
    union all
    select d.emdr_id, d.superseded_by, c.depth + 1 from emdr_registry_documents d join chain c on d.emdr_id = c.superseded_by
  ),
  current_version as (
    select d.* from emdr_registry_documents d where d.emdr_id = (select emdr_id from chain order by depth desc limit 1)
  )`;

function toItem(row: Record<string, unknown>): RegistryItem {
  return {
    emdrId: row.emdr_id as string,
    localUid: row.local_uid as string,
    kind: row.kind as string,
    organization: row.organization as string,
    registrationDateTime: (row.registration_date_time as Date).toISOString(),
    version: row.version as number,
  };
}

/** The registry's answer to a registration, as JSON built by the database: `{ok, registration}`. */
const REGISTERED = (row: string) =>
  `jsonb_build_object('ok', true, 'registration', jsonb_build_object('emdrId', ${row}.emdr_id,
     'registrationDateTime', to_char(${row}.registration_date_time at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')))`;
/** The registry keeps localUid unique across all its senders (emdr_0010_local_uid_gateway_wide). */
const NOT_UNIQUE: RegistryErrorItem = { code: 'NOT_UNIQUE_PROVIDED_ID', message: 'a document with this localUid is already registered' };

/**
 * Registers documents ($1 to $9, one element each) with the files of the gateway requests that
 * submitted them (the message id is the queueMessageId; copied by the database), and queues each
 * answer (due in $10 ms, or leased for $10 ms to this process when it hands them on itself): the
 * registration, or the earlier one of the same message (a repeated submission), or $11,
 * NOT_UNIQUE_PROVIDED_ID, when any organization registered the localUid. Returns the answers queued
 * now (an answer queued before, for a repeated submission, is not).
 */
const REGISTER = statement(
  'registry_register',
  `with input as (
     select * from unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::float8[], $8::int[], $9::text[])
         as t(message_id, local_uid, kind, organization, patient_snils, document_number, creation_ms, version, replaces)
   ),
   numbered as (
     -- nextval in the select list: a number per row
     select i.*, to_char(now(), 'YY.MM.') || lpad(nextval('emdr_registry_number')::text, 9, '0') as emdr_id from input i
   ),
   inserted as (
     insert into emdr_registry_documents
       (emdr_id, request_key, local_uid, kind, organization, patient_snils, document_number, creation_date_time,
        registration_date_time, version, replaces, file_name, content, signature, personal_signatures)
     select n.emdr_id, n.message_id::text, n.local_uid, n.kind, n.organization, n.patient_snils, n.document_number, to_timestamp(n.creation_ms / 1000.0),
            now(), n.version, n.replaces, n.emdr_id || '.xml', r.document, r.signature, r.personal_signatures
       from numbered n join emdr_requests r on r.queue_message_id = n.message_id
     on conflict do nothing
     returning request_key, emdr_id, registration_date_time
   ),
   earlier as (select d.request_key, d.emdr_id, d.registration_date_time from emdr_registry_documents d join input i on d.request_key = i.message_id::text)
   insert into emdr_registry_answers (message_id, outcome, available_at)
   select i.message_id,
          coalesce((select ${REGISTERED('x')} from inserted x where x.request_key = i.message_id::text),
                   (select ${REGISTERED('e')} from earlier e where e.request_key = i.message_id::text), $11::jsonb),
          now() + $10 * interval '1 millisecond'
     from input i
   on conflict (message_id) do nothing
   returning message_id::text, outcome`,
);
const EARLIER = statement('registry_earlier', 'select emdr_id from emdr_registry_documents where request_key = $1');
const LOCK_REPLACED = statement(
  'registry_lock_replaced',
  'select organization, superseded_by, version from emdr_registry_documents where emdr_id = $1 for update',
);
const SUPERSEDE = statement('registry_supersede', 'update emdr_registry_documents set superseded_by = $2 where emdr_id = $1');
const ANSWER = statement(
  'registry_answer',
  `insert into emdr_registry_answers (message_id, outcome, available_at) values ($1, $2, now() + $3 * interval '1 millisecond') on conflict (message_id) do nothing`,
);
const OWNER = statement('registry_current_owner', `with recursive ${CURRENT_VERSION} select organization, patient_snils from current_version`);
/** The current version's files copied into the gateway request $2 that demanded it (not twice), and what it is. */
const FETCH = statement(
  'registry_fetch_current',
  `with recursive ${CURRENT_VERSION},
   stored as (
     update emdr_requests r set document = v.content, signature = v.signature
       from current_version v
      where r.queue_message_id = $2::uuid and r.document is null
   )
   select emdr_id, local_uid, kind, version, file_name, organization, patient_snils from current_version`,
);
/**
 * The answers due, leased for $2 ms (up to $1), after the ones answered before ($3) are deleted: the
 * delete rides on the next claim, and an answer handed over twice (a worker stopped in between) is
 * recorded once (the sink is idempotent).
 */
const CLAIM_ANSWERS = statement(
  'registry_claim_answers',
  `with answered as (
     delete from emdr_registry_answers where message_id = any($3::uuid[])
   ),
   due as (
     select message_id from emdr_registry_answers where available_at <= now() order by available_at limit $1 for update skip locked
   )
   update emdr_registry_answers a set available_at = now() + $2 * interval '1 millisecond'
     from due d where a.message_id = d.message_id and a.message_id <> all($3::uuid[])
   returning a.message_id::text, a.outcome`,
);
const EXTEND_ANSWERS = statement(
  'registry_extend_answers',
  `update emdr_registry_answers set available_at = now() + $2 * interval '1 millisecond' where message_id = any($1::uuid[])`,
);
const DELETE_ANSWERED = statement('registry_delete_answered', 'delete from emdr_registry_answers where message_id = any($1::uuid[])');
const NEXT_ANSWER = statement('registry_next_answer', 'select (extract(epoch from min(available_at)) * 1000)::float8 as at from emdr_registry_answers');
const SEARCH = statement(
  'registry_search',
  `select emdr_id, local_uid, kind, organization, registration_date_time, version from emdr_registry_documents
    where ($1::text is null or patient_snils = $1) and ($2::text is null or kind = $2) and ($3::text is null or organization = $3)
      and ($4::uuid is null or local_uid = $4)
      and ($5::float8 is null or registration_date_time >= to_timestamp($5 / 1000.0))
      and ($6::float8 is null or registration_date_time < to_timestamp($6 / 1000.0))
      and ($7::text[] is null or organization = any($7))
    order by registration_date_time desc limit $8`,
);

const RECORD = statement(
  'registry_record',
  `select emdr_id, local_uid, kind, organization, registration_date_time, version, patient_snils from emdr_registry_documents where emdr_id = $1`,
);

/** A queued answer: a registration's outcome, or a demand whose file is fetched when the answer falls due. */
type StoredAnswer =
  | Omit<Extract<RegistryOutcome, { ok: true; registration: unknown }>, 'messageId'>
  | { ok: false; errors: RegistryErrorItem[] }
  | { ok: true; demand: string };

const ANSWER_BATCH = 64;
type QueuedAnswer = { message_id: string; outcome: StoredAnswer };
/** Answers due come from this process's submissions (it wakes its loop) or, after a worker stopped, back from its lease: looked for this often. */
const ANSWER_IDLE_POLL_MS = 60_000;
const FAILING: RegistryErrorItem[] = [{ code: 'RUNTIME_ERROR', message: 'the registry failed (REGISTRY_FAIL is set)' }];

/**
 * The default registry: keeps registered documents in emdr_registry_documents of the service's own
 * database and acts as the providing archive too. emdrIds are `YY.MM.NNNNNNNNN` from a sequence;
 * a document that `replaces` the current version of another becomes its next version. It answers
 * as the federal registry does, asynchronously: a submission queues its answer in
 * emdr_registry_answers, due REGISTRY_ANSWER_DELAY later, and the worker role's answer loop hands
 * the answers due to the outcome sink, the path of РЭМД's answers too.
 */
export class BuiltInRegistry implements RegistryPort {
  private answering: Stage<QueuedAnswer> | undefined;
  /** Where the answer loop hands the answers (receive): registrations answered at once go there without a claim. */
  private sink: OutcomeSink | undefined;
  /** Answers recorded: deleted by the answer loop's next claim, which comes at the latest a third of a lease later. */
  private recorded: string[] = [];
  private cleanup: NodeJS.Timeout | undefined;
  /** Answers handed on without a claim, being recorded. */
  private readonly handing = new Set<Promise<void>>();
  /** Registrations submitted in this turn of the event loop: registered together, in one statement. */
  private queued: Array<{ submission: RegistrationSubmission; done: (error?: unknown) => void }> = [];
  private flushScheduled = false;

  constructor(
    private readonly sql: Sql,
    private readonly options: BuiltInRegistryOptions,
  ) {}

  private async delay(): Promise<void> {
    if (this.options.latencyMs > 0) await sleep(this.options.latencyMs);
  }

  private get answerDelayMs(): number {
    return this.options.answerDelayMs ?? 0;
  }

  /** Queues an answer and wakes this process's answer loop when it falls due. */
  private async answer(messageId: string, outcome: StoredAnswer): Promise<Submission> {
    await this.sql.run(ANSWER, [messageId, JSON.stringify(outcome), this.answerDelayMs]);
    this.answered();
    return { accepted: true };
  }

  private answered(): void {
    if (this.answerDelayMs === 0) this.answering?.wake();
    else this.answering?.wakeAt(Date.now() + this.answerDelayMs);
  }

  private get leaseMs(): number {
    return this.options.leaseMs ?? 30_000;
  }

  async submitRegistration(input: RegistrationSubmission): Promise<Submission> {
    await this.delay();
    if (this.options.fail) return this.answer(input.messageId, { ok: false, errors: FAILING });
    if (input.replaces !== undefined) {
      const refusal = await this.registerVersion(input);
      if (refusal) return this.answer(input.messageId, refusal);
      this.answered();
    } else {
      await this.registerTogether(input);
    }
    return { accepted: true };
  }

  /**
   * Registers a document with the others submitted in the same turn of the event loop (a
   * submission stage's batch), in one statement. Answered at once (no REGISTRY_ANSWER_DELAY), the
   * answers are leased to this process by that statement and handed to the sink: no claim of the
   * answer loop for them (issue 24: a statement a document at a steady rate). Otherwise the answer
   * loop is woken once for them all.
   */
  private registerTogether(submission: RegistrationSubmission): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queued.push({ submission, done: (error) => (error === undefined ? resolve() : reject(error)) });
      if (this.flushScheduled) return;
      this.flushScheduled = true;
      setImmediate(() => {
        this.flushScheduled = false;
        const batch = this.queued.splice(0);
        const sink = this.answerDelayMs === 0 ? this.sink : undefined;
        this.register(
          this.sql,
          batch.map((item) => ({ submission: item.submission, version: 1 })),
          sink ? this.leaseMs : this.answerDelayMs,
        ).then(
          (answers) => {
            for (const item of batch) item.done();
            if (sink) this.handOn(sink, answers);
            // An answer queued before (a repeated submission) is the answer loop's to claim.
            if (!sink || answers.length < batch.length) this.answered();
          },
          (error: unknown) => {
            for (const item of batch) item.done(error);
          },
        );
      });
    });
  }

  /** Registers the documents (REGISTER), which queues their answers itself, due in `answerInMs` (the answer delay, or a lease). */
  private register(
    sql: Pick<Sql, 'rows'>,
    registrations: ReadonlyArray<{ submission: RegistrationSubmission; version: number }>,
    answerInMs = this.answerDelayMs,
  ): Promise<QueuedAnswer[]> {
    const column = <T>(value: (submission: RegistrationSubmission, version: number) => T) => registrations.map((item) => value(item.submission, item.version));
    return sql.rows<QueuedAnswer>(REGISTER, [
      column((input) => input.messageId),
      column((input) => input.localUid),
      column((input) => input.kind),
      column((input) => input.organization),
      column((input) => input.patientSnils),
      column((input) => input.documentNumber ?? null),
      column((input) => instantMs(input.creationDateTime)),
      column((_input, version) => version),
      column((input) => input.replaces ?? null),
      answerInMs,
      JSON.stringify({ ok: false, errors: [NOT_UNIQUE] }),
    ]);
  }

  /**
   * A new version of the document named in `replaces`, which must be the current version of the
   * same organization; returns the refusal to answer, or nothing when REGISTER queued the answer.
   */
  private registerVersion(input: RegistrationSubmission): Promise<StoredAnswer | undefined> {
    return this.sql.transaction(async (trx) => {
      // Registered for this message before (a repeated submission): REGISTER answers with the earlier registration.
      if (await trx.row(EARLIER, [input.messageId])) {
        await this.register(trx, [{ submission: input, version: 0 }]);
        return undefined;
      }
      const replaced = await trx.row<{ organization: string; superseded_by: string | null; version: number }>(LOCK_REPLACED, [input.replaces]);
      // Another organization's document reads as an unknown one: emdrIds cannot be probed through replaces either.
      if (!replaced || replaced.organization !== input.organization) {
        return { ok: false, errors: [{ code: 'REGISTRY_ITEM_NOT_FOUND', message: 'the document named in replaces is not registered' }] };
      }
      if (replaced.superseded_by !== null)
        return { ok: false, errors: [{ code: 'CANT_REG_VERSION', message: 'the document named in replaces is not the current version' }] };
      await this.register(trx, [{ submission: input, version: replaced.version + 1 }]);
      const registered = await trx.row<{ emdr_id: string }>(EARLIER, [input.messageId]);
      if (registered) await trx.run(SUPERSEDE, [input.replaces, registered.emdr_id]);
      return undefined;
    });
  }

  async submitDemand(input: DemandSubmission): Promise<Submission> {
    await this.delay();
    return this.answer(input.messageId, this.options.fail ? { ok: false, errors: FAILING } : { ok: true, demand: input.emdrId });
  }

  async currentVersionOwner(emdrId: string): Promise<DocumentOwner | undefined> {
    await this.delay();
    const row = await this.sql.row<{ organization: string; patient_snils: string }>(OWNER, [emdrId]);
    return row && { organization: row.organization, patientSnils: row.patient_snils };
  }

  async search(criteria: RegistrySearch): Promise<RegistryItem[]> {
    await this.delay();
    const rows = await this.sql.rows<Record<string, unknown>>(SEARCH, [
      criteria.patientSnils ?? null,
      criteria.kind ?? null,
      criteria.organization ?? null,
      criteria.localUid ?? null,
      criteria.registerDateBegin === undefined ? null : instantMs(criteria.registerDateBegin),
      criteria.registerDateEnd === undefined ? null : instantMs(criteria.registerDateEnd),
      criteria.organizations === undefined ? null : [...criteria.organizations],
      criteria.limit,
    ]);
    return rows.map(toItem);
  }

  async record(emdrId: string): Promise<RegistryRecord | undefined> {
    await this.delay();
    const row = await this.sql.row<Record<string, unknown>>(RECORD, [emdrId]);
    return row && { ...toItem(row), patientSnils: row.patient_snils as string };
  }

  /**
   * The answer loop: answers due, handed to the sink in batches (a demand's file is fetched from the
   * archive first); and the answers of registrations answered at once, handed on by registerTogether.
   */
  async receive(sink: OutcomeSink): Promise<{ stop(): Promise<void> }> {
    const logger = this.options.logger;
    if (!logger) throw new Error('the built-in registry answers only with a logger (the worker role gives one)');
    const stage = new Stage<QueuedAnswer>({
      name: 'registry answers',
      batchSize: ANSWER_BATCH,
      loops: 1,
      idlePollMs: ANSWER_IDLE_POLL_MS,
      leaseMs: this.leaseMs,
      logger,
      claim: async (limit) => {
        // The answers recorded since the last claim are deleted by it: no statement of their own.
        const deleting = this.recorded;
        this.recorded = [];
        try {
          return await this.sql.rows<QueuedAnswer>(CLAIM_ANSWERS, [limit, this.leaseMs, deleting]);
        } catch (error) {
          this.recorded.push(...deleting);
          throw error;
        }
      },
      extend: (batch) => this.sql.run(EXTEND_ANSWERS, [batch.map((row) => row.message_id), this.leaseMs]),
      nextDue: async () => (await this.sql.row<{ at: number | null }>(NEXT_ANSWER))?.at ?? undefined,
      process: (batch) => this.recordAnswers(sink, batch),
    });
    this.answering = stage;
    this.sink = sink;
    stage.start();
    return {
      stop: async () => {
        this.answering = undefined;
        this.sink = undefined;
        clearTimeout(this.cleanup);
        await Promise.all(this.handing);
        await stage.stop();
        // What is recorded and not yet deleted would come back when its lease ends, to be recorded again (as a duplicate).
        const deleting = this.recorded.splice(0);
        if (deleting.length > 0) await this.sql.run(DELETE_ANSWERED, [deleting]).catch(() => undefined);
      },
    };
  }

  /** Answers leased to this process by REGISTER, recorded as the answer loop would; one that fails comes back when its lease ends. */
  private handOn(sink: OutcomeSink, answers: readonly QueuedAnswer[]): void {
    if (answers.length === 0) return;
    const handing: Promise<void> = this.recordAnswers(sink, answers)
      .catch((error: unknown) =>
        this.options.logger?.error({ err: error, stage: 'registry answers' }, 'recording answers failed; they come back when their leases end'),
      )
      .finally(() => this.handing.delete(handing));
    this.handing.add(handing);
  }

  /** Hands answers to the sink; their rows are deleted by the answer loop's next claim, woken for it within a third of a lease. */
  private async recordAnswers(sink: OutcomeSink, answers: readonly QueuedAnswer[]): Promise<void> {
    const outcomes = await Promise.all(answers.map((row) => this.outcomeOf(row.message_id, row.outcome)));
    await sink.record(outcomes);
    this.recorded.push(...answers.map((row) => row.message_id));
    // Deleted before their leases end, or another worker would claim them and record them again (as duplicates).
    if (this.recorded.length >= ANSWER_BATCH) this.answering?.wake();
    else
      this.cleanup ??= setTimeout(() => {
        this.cleanup = undefined;
        if (this.recorded.length > 0) this.answering?.wake();
      }, this.leaseMs / 3).unref();
  }

  /** A queued answer as the outcome the sink takes: a demand's file is fetched (and stored with the request) now. */
  private async outcomeOf(messageId: string, stored: StoredAnswer): Promise<RegistryOutcome> {
    if (!('demand' in stored)) return { messageId, ...stored };
    const row = await this.sql.row<Record<string, unknown>>(FETCH, [stored.demand, messageId]);
    if (!row) return { messageId, ok: false, errors: [{ code: 'REGISTRY_ITEM_NOT_FOUND', message: 'no registry item with this emdrId' }] };
    return {
      messageId,
      ok: true,
      file: {
        emdrId: row.emdr_id as string,
        localUid: row.local_uid as string,
        kind: row.kind as string,
        version: row.version as number,
        fileName: row.file_name as string,
        organization: row.organization as string,
        patientSnils: row.patient_snils as string,
      },
    };
  }
}
