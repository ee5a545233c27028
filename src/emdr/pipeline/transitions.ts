import { randomBytes } from 'node:crypto';
import { retryOnDeadlock, statement, type Queryable, type Statement } from '../../db/sql.js';
import type { CallbackErrorItem } from '../codes.js';
import type { AccessBasis } from '../access.js';
import { callbackOf, sourceStates, sqlList, STAGES, TRANSITIONS, type Operation, type RequestStageName, type RequestState, type TransitionMaker } from './lifecycle.js';
import { callbackUrl } from './requests.js';

/**
 * The SQL of the lifecycle (lifecycle.ts), in one place: a stage's claim, the extension and release
 * of its leases, and the statement that moves a batch of requests on, with the callbacks their
 * transitions emit. Each is built from the lifecycle's tables, so no state or callback position is
 * written here by hand.
 */

/**
 * A stage's claim: up to $1 requests in the stage's state whose time has come, oldest first, leased
 * for $2 ms (rows another worker holds are skipped), each returned with the columns of
 * ClaimedRequestRow and the stage's `returning` (`r` is the request).
 */
export function claimRequests(stage: RequestStageName, returning = ''): Statement {
  return statement(
    `emdr_${stage}_claim`,
    `with claimed as (
       select queue_message_id from emdr_requests
        where state = '${STAGES[stage].claims}' and available_at <= now()
        order by available_at limit $1 for update skip locked
     )
     update emdr_requests r set available_at = now() + $2 * interval '1 millisecond', claims = r.claims + 1
       from claimed c where r.queue_message_id = c.queue_message_id
     returning r.queue_message_id, r.client_id, r.operation, r.state, r.callback_url, r.metadata, r.claims, r.trace_parent,
               (select k.organizations from emdr_clients k where k.id = r.client_id) as organizations${returning ? `,
               ${returning}` : ''}`,
  );
}

/** Extends the leases of requests in hand ($1) that are still in the state the stage claimed. */
export function extendRequests(stage: RequestStageName): Statement {
  return statement(
    `emdr_${stage}_extend`,
    `update emdr_requests set available_at = now() + $2 * interval '1 millisecond' where queue_message_id = any($1::uuid[]) and state = '${STAGES[stage].claims}'`,
  );
}

/** Puts requests ($1) back for a later try, in $2 ms (processing them failed: the registry was unavailable, say). */
export const RELEASE_REQUESTS = statement(
  'emdr_release_requests',
  `update emdr_requests set available_at = now() + $2 * interval '1 millisecond' where queue_message_id = any($1::uuid[])`,
);

/** A delivery of another organization's document, to record (access.ts). */
export interface Disclosure {
  emdrId: string;
  deliveredEmdrId: string;
  organization: string;
  basis: Exclude<AccessBasis, 'own-organization'>;
}

/** One request moved on by a transition of lifecycle.ts. */
export interface Settlement {
  queueMessageId: string;
  operation: Operation;
  state: RequestState;
  errors?: readonly CallbackErrorItem[];
  emdrId?: string;
  /** When the request may be claimed next, from now (a submitted request: its deadline); default now. */
  availableInMs?: number;
  /** Whether the request keeps its copy of the files (see retention.ts for who needs them). */
  keepFiles: boolean;
  /** The clinic's callback base URL; the callback the transition emits goes to `<it>/api/<name>`. */
  callbackBase: string;
  /** The body of the callback the transition emits (lifecycle.ts says whether it emits one). */
  payload?: Record<string, unknown>;
  disclosure?: Disclosure;
}

const COLUMNS = [
  ['queue_message_id', 'uuid'],
  ['state', 'text'],
  ['errors', 'jsonb'],
  ['emdr_id', 'text'],
  ['available_in_ms', 'float8'],
  ['keep_files', 'bool'],
  ['callback_id', 'text'],
  ['sequence', 'int2'],
  ['callback_name', 'text'],
  ['callback_url', 'text'],
  ['payload', 'jsonb'],
  ['disclosed_emdr_id', 'text'],
  ['delivered_emdr_id', 'text'],
  ['disclosed_organization', 'text'],
  ['disclosure_basis', 'text'],
] as const;

/**
 * The statement of the transitions `by` makes: each input request still in one of the states `by`
 * moves requests from (unless another worker or a repeated answer moved it first) gets its new
 * state, and the callback its transition emits. An emitted callback is held (`waiting`) until the
 * one before it was delivered: the statement holds a share lock on that one, taken in id order as
 * the delivery stage takes its locks, so a delivery committing meanwhile either is seen here or
 * releases the new callback after this commits (delivery.ts). Returns the requests moved, each
 * with the number of callbacks it made due at once.
 */
function settleStatement(by: TransitionMaker): Statement {
  const columns = COLUMNS.map(([name]) => name).join(', ');
  const arrays = COLUMNS.map(([, type], index) => `$${index + 1}::${type}[]`).join(', ');
  return statement(
    `emdr_${by}_settle`,
    `with input as (
       select * from unnest(${arrays}) as t(${columns})
     ),
     previous as (
       select c.queue_message_id, c.state from emdr_callbacks c join input i on c.queue_message_id = i.queue_message_id and c.sequence = i.sequence - 1
        order by c.id for share of c
     ),
     updated as (
       update emdr_requests r
          set state = i.state, errors = i.errors, emdr_id = coalesce(i.emdr_id, r.emdr_id),
              document = case when i.keep_files then r.document end,
              signature = case when i.keep_files then r.signature end,
              personal_signatures = case when i.keep_files then r.personal_signatures end,
              available_at = now() + coalesce(i.available_in_ms, 0) * interval '1 millisecond', updated_at = now()
         from input i where r.queue_message_id = i.queue_message_id and r.state in (${sqlList(sourceStates(by))})
       returning r.queue_message_id, r.client_id
     ),
     disclosures as (
       insert into emdr_document_disclosures (client_id, queue_message_id, emdr_id, delivered_emdr_id, organization, basis)
       select u.client_id, u.queue_message_id, i.disclosed_emdr_id, i.delivered_emdr_id, i.disclosed_organization, i.disclosure_basis
         from updated u join input i using (queue_message_id) where i.disclosure_basis is not null
     ),
     emitted as (
       insert into emdr_callbacks (id, queue_message_id, name, sequence, url, payload, state)
       select i.callback_id, i.queue_message_id, i.callback_name, i.sequence, i.callback_url, i.payload,
              case when coalesce(p.state, 'delivered') = 'delivered' then 'pending' else 'waiting' end
         from input i join updated u using (queue_message_id) left join previous p using (queue_message_id)
        where i.callback_id is not null
       on conflict (queue_message_id, sequence) do nothing
       returning queue_message_id, state
     )
     select u.queue_message_id, (select count(*) from emitted e where e.queue_message_id = u.queue_message_id and e.state = 'pending')::int as due
       from updated u`,
  );
}

const SETTLE: Record<TransitionMaker, Statement> = {
  acceptance: settleStatement('acceptance'),
  submission: settleStatement('submission'),
  outcome: settleStatement('outcome'),
  deadline: settleStatement('deadline'),
};

/** A new callback's webhook-id (Standard Webhooks): the same on every attempt. */
export const newWebhookId = () => `msg_${randomBytes(16).toString('hex')}`;

/** The SETTLE arrays of a batch: one element per settlement, its callback as the lifecycle says the transition emits it. */
function settleColumns(by: TransitionMaker, settlements: readonly Settlement[]): unknown[][] {
  const columns: unknown[][] = COLUMNS.map(() => []);
  for (const settlement of settlements) {
    const phase = TRANSITIONS.find((candidate) => candidate.by === by && candidate.to === settlement.state && 'emits' in candidate);
    if (!TRANSITIONS.some((candidate) => candidate.by === by && candidate.to === settlement.state)) throw new Error(`the lifecycle has no transition to ${settlement.state} by ${by}`);
    const callback = phase && 'emits' in phase ? callbackOf(settlement.operation, phase.emits) : undefined;
    if (callback && settlement.payload === undefined) throw new Error(`${by} → ${settlement.state} emits ${callback.name}: a payload is needed`);
    const values = [
      settlement.queueMessageId,
      settlement.state,
      settlement.errors && settlement.errors.length > 0 ? JSON.stringify(settlement.errors) : null,
      settlement.emdrId ?? null,
      settlement.availableInMs ?? null,
      settlement.keepFiles,
      callback ? newWebhookId() : null,
      callback?.sequence ?? null,
      callback?.name ?? null,
      callback ? callbackUrl(settlement.callbackBase, callback.name) : null,
      callback ? JSON.stringify(settlement.payload) : null,
      settlement.disclosure?.emdrId ?? null,
      settlement.disclosure?.deliveredEmdrId ?? null,
      settlement.disclosure?.organization ?? null,
      settlement.disclosure?.basis ?? null,
    ];
    values.forEach((value, index) => columns[index]!.push(value));
  }
  return columns;
}

/** What a settle did: the requests it moved (others had moved on already) and how many callbacks it made due. */
export interface Settled {
  moved: Set<string>;
  due: number;
}

/** Moves a batch of requests on by the transitions of `by`, in one statement. */
export async function settle(sql: Queryable, by: TransitionMaker, settlements: readonly Settlement[]): Promise<Settled> {
  if (settlements.length === 0) return { moved: new Set(), due: 0 };
  const rows = await retryOnDeadlock(() => sql.rows<{ queue_message_id: string; due: number }>(SETTLE[by], settleColumns(by, settlements)));
  return { moved: new Set(rows.map((row) => row.queue_message_id)), due: rows.reduce((sum, row) => sum + row.due, 0) };
}
