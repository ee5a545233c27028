import type { PurgeStep } from '../db/retention.js';
import { statement, type Sql } from '../db/sql.js';
import { currentRequest } from '../logging/request-context.js';

/**
 * The audit trail (152-ФЗ art. 10: who accessed whose health data): one row of audit_events per
 * access to patient data, registry request, delivered document and callback outcome. Identifiers
 * only, never personal data. Where the access changes something, the domain's own statement
 * writes the row in the same statement (a CTE); what changes nothing (a read, a refusal) is
 * recorded here, and the caller awaits its commit (not its WAL flush) before it answers. Rows recorded while an insert is
 * under way go together in the next one (a group commit): under load, one insert carries many.
 */

export interface AuditEvent {
  /** The JSON-RPC method, the OpenAPI operation, or the callback's name. */
  action: string;
  /** ok, or the error code of the answer. */
  outcome: string;
  internalAccount?: string | null;
  internalUserId?: string | null;
  businessId?: string | null;
  emdrId?: string | null;
  queueMessageId?: string | null;
  crossOrganization?: boolean | null;
  /** Default: the request being served (request-context.ts), as are the client's address and own request id. */
  requestId?: string | null;
}

/** A refused call, counted rather than written on its own (AuditTrail.refused). */
export interface RefusalEvent {
  action: string;
  outcome: string;
  /** The internal account the call named, when it is one of INTERNAL_USERS. */
  internalAccount?: string | null;
}

/** The columns a domain statement fills in its own CTE (the same order as INSERT_EVENTS'). */
export const AUDIT_COLUMNS =
  'request_id, internal_account, internal_user_id, business_id, action, emdr_id, queue_message_id, cross_organization, outcome, client_address, client_request_id, occurrences';

/** The request's own columns of an audit row (client_address, client_request_id): what a domain statement passes beside its own. */
export function clientColumns(): [string | null, string | null] {
  const request = currentRequest();
  return [request?.clientAddress ?? null, request?.clientRequestId ?? null];
}

/**
 * A FROM item that commits the statement's own transaction without waiting for the WAL flush
 * (synchronous_commit off), for the audit rows of reads: a read's row is committed, and visible,
 * before the answer goes out, so a crash of the service loses none; only a crash of PostgreSQL
 * itself within its WAL writer's delay (about 0.6 s at most) can. Waiting for the flush made every
 * get_patient wait for a disk sync (0.20x of its baseline). Rows of changes are written by the
 * change's own statement and keep its durability.
 */
export const WITHOUT_WAL_FLUSH = `(select set_config('synchronous_commit', 'off', true)) as unflushed`;

const INSERT_EVENTS = statement(
  'audit_insert_events',
  `insert into audit_events (${AUDIT_COLUMNS})
   select t.* from ${WITHOUT_WAL_FLUSH},
          unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::uuid[], $8::bool[], $9::text[], $10::text[], $11::text[], $12::int[]) as t`,
);

/** Rows per insert at most (a backlog goes in several). */
const MAX_BATCH = 500;

interface Pending {
  values: unknown[];
  done: (error?: unknown) => void;
}

/** Refusals are counted per client address, method, outcome and account over this window, then written as one row. */
export const REFUSAL_WINDOW_MS = 60_000;
/** Distinct refusal keys kept per window; more are counted under no address. */
const MAX_REFUSAL_KEYS = 10_000;

export class AuditTrail {
  private queue: Pending[] = [];
  private flushing = false;
  private refusals = new Map<string, { event: RefusalEvent; clientAddress: string | null; occurrences: number }>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly sql: Sql,
    refusalWindowMs = REFUSAL_WINDOW_MS,
  ) {
    this.timer = setInterval(() => void this.writeRefusals().catch(() => undefined), refusalWindowMs);
    this.timer.unref();
  }

  /** Records an event; resolves once it is committed (rejects when it could not be). */
  record(event: AuditEvent): Promise<void> {
    const request = currentRequest();
    const requestId = event.requestId === undefined ? (request?.requestId ?? null) : event.requestId;
    const values = [
      requestId,
      event.internalAccount ?? null,
      event.internalUserId ?? null,
      event.businessId ?? null,
      event.action,
      event.emdrId ?? null,
      event.queueMessageId ?? null,
      event.crossOrganization ?? null,
      event.outcome,
      request?.clientAddress ?? null,
      request?.clientRequestId ?? null,
      1,
    ];
    return this.enqueue(values);
  }

  /**
   * Records a refused call that touched nobody's data (unknown credentials, a token that does not
   * exist, params refused): the first one of a client address, method, outcome and account in a
   * window is written at once, like any row; the others of the window are counted and written as
   * one row when it ends (and when the trail stops), with their count in `occurrences`. So a
   * flood of refused calls costs two rows a minute, not a row each (an unauthenticated client could
   * otherwise write thousands a second, kept a year).
   */
  refused(event: RefusalEvent): Promise<void> {
    const clientAddress = currentRequest()?.clientAddress ?? null;
    const key = JSON.stringify([event.action, event.outcome, event.internalAccount ?? null, clientAddress]);
    const counted = this.refusals.get(key);
    if (counted) {
      counted.occurrences += 1;
      return Promise.resolve();
    }
    // Past the keys a window keeps, refusals are counted under no address.
    if (this.refusals.size >= MAX_REFUSAL_KEYS) {
      const overflow = JSON.stringify([event.action, event.outcome, event.internalAccount ?? null, null]);
      const entry = this.refusals.get(overflow);
      if (entry) entry.occurrences += 1;
      else this.refusals.set(overflow, { event, clientAddress: null, occurrences: 1 });
      return Promise.resolve();
    }
    this.refusals.set(key, { event, clientAddress, occurrences: 0 });
    return this.record({ action: event.action, outcome: event.outcome, internalAccount: event.internalAccount ?? null });
  }

  /** The refusals counted so far, as rows (each a window's count). */
  async writeRefusals(): Promise<void> {
    if (this.refusals.size === 0) return;
    const counted = [...this.refusals.values()].filter((entry) => entry.occurrences > 0);
    this.refusals = new Map();
    await Promise.all(
      counted.map(({ event, clientAddress, occurrences }) =>
        this.enqueue([null, event.internalAccount ?? null, null, null, event.action, null, null, null, event.outcome, clientAddress, null, occurrences]),
      ),
    );
  }

  /** Writes the refusals still counted and stops the window's timer. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.writeRefusals().catch(() => undefined);
  }

  private enqueue(values: unknown[]): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ values, done: (error) => (error === undefined ? resolve() : reject(error)) });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, MAX_BATCH);
      try {
        await this.sql.run(INSERT_EVENTS, columnsOf(batch));
        for (const item of batch) item.done();
      } catch (error) {
        for (const item of batch) item.done(error);
      }
    }
    this.flushing = false;
  }
}

function columnsOf(batch: readonly Pending[]): unknown[][] {
  const columns: unknown[][] = Array.from({ length: 12 }, () => []);
  for (const { values } of batch)
    values.forEach((value, index) => {
      columns[index]!.push(value);
    });
  return columns;
}

const PURGE = statement(
  'audit_purge',
  `delete from audit_events where id in (select id from audit_events where at < now() - $2 * interval '1 millisecond' order by at limit $1)`,
);

/** The retention step of the trail: rows older than AUDIT_RETENTION (its own period, not RETENTION's). */
export function auditPurgeStep(retentionMs: number): PurgeStep {
  return { name: 'audit_events', purge: (trx, _cutoff, limit) => trx.run(PURGE, [limit, retentionMs]) };
}
