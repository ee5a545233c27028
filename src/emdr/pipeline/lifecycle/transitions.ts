import { randomUUID } from 'node:crypto';
import { retryOnDeadlock, statement, type Queryable, type Statement } from '../../../db/sql.js';
import type { CallbackErrorItem } from '../../errors/codes.js';
import type { AccessBasis } from './document-access.js';
import {
  callbackOf,
  sourceStates,
  sqlList,
  STAGES,
  TRANSITIONS,
  type Operation,
  type RequestStageName,
  type RequestState,
  type EmittedCallback,
  type TransitionMaker,
} from './lifecycle.js';
import { callbackUrl } from './requests.js';
import { callbackOrigin, claimedCallbackColumns, type ClaimedCallback } from './callback-rows.js';

/**
 * The SQL of the lifecycle (lifecycle.ts), in one place: a stage's claim, the extension and release
 * of its leases, and the statement that moves a batch of requests on, with the callbacks their
 * transitions emit. Each is built from the lifecycle's tables, so no state or callback position is
 * written here by hand.
 */

/** A request a stage may claim: in the stage's state, its time come, and no worker's lease on it. */
const claimable = (alias: string) => `${alias}.available_at <= now() and (${alias}.leased_until is null or ${alias}.leased_until <= now())`;

/** What every claim of requests returns (ClaimedRequestRow), and the stage's own `returning` (`r` is the request). */
const claimedColumns = (returning: string) => `r.queue_message_id, r.client_id, r.operation, r.state, r.callback_url, r.metadata, r.claims, r.trace_parent,
               (select k.organizations from emdr_clients k where k.id = r.client_id) as organizations${
                 returning
                   ? `,
               ${returning}`
                   : ''
               }`;

/**
 * A stage's claim: up to $1 requests in the stage's state whose time has come, oldest first, leased
 * for $2 ms (rows another worker holds are skipped). The lease is leased_until, which no index
 * holds: the claim can be a HOT update. The rows are updated by their ids, as an array, as in
 * claimInTurns (a join to the CTE may be planned as a read of the whole table).
 */
export function claimRequests(stage: RequestStageName, returning = ''): Statement {
  return statement(
    `emdr_${stage}_claim`,
    `with claimed as (
       select queue_message_id from emdr_requests r
        where state = '${STAGES[stage].claims}' and ${claimable('r')}
        order by available_at limit $1 for update skip locked
     )
     update emdr_requests r set leased_until = now() + $2 * interval '1 millisecond', claims = r.claims + 1
      where r.queue_message_id = any(array(select queue_message_id from claimed))
     returning ${claimedColumns(returning)}`,
  );
}

/** A claim of a fair stage (src/work/fair-stage.ts), for claimInTurns. */
export interface InTurnClaim {
  /** The table claimed from, and its alias in `claimable`, `join` and `returning`. */
  table: string;
  alias: string;
  /** Its id column. */
  id: string;
  /** The column the turns go by (an index on (key, available_at) leads with it), and its SQL type (for $4 and $7). */
  key: string;
  keyType: 'bigint' | 'text';
  /** The rows of the stage, on an alias: what the skip through the index looks for. */
  scope(alias: string): string;
  /** Whether a row of the stage may be claimed now, on an alias. */
  claimable(alias: string): string;
  /** More to set on a claimed row, after its lease. */
  set?: string;
  /** More tables for `returning`, and how they join the claimed row. */
  join?: { from: string; where: string };
  returning: string;
}

/**
 * The SQL of a claim shared fairly between keys (the clinics of the acceptance stage, the receiver
 * origins of delivery): the keys with rows in the stage are found by skipping through the index on
 * (key, available_at) one key at a time; each offers its oldest claimable rows, at most its room
 * ($4, $5: keys and their room in this process; $6 for the others; none of the keys in $7, which
 * are full); then the first of every key's offer is taken, then the second, oldest first within a
 * turn, up to $1, leased for $2 ms in leased_until, which no index holds: the claim can be a HOT
 * update. A key's backlog waits behind one row of each other key, never the other way round.
 * The rows taken are found by their ids, as an array (`= any(array(…))`): joined to the offer
 * instead, the generic plan of the prepared statement (a LIMIT of $1 rows, an estimate of hundreds)
 * read the whole table twice per claim, a hash join each (2,700 buffers and 10 ms a claim with 4,000
 * requests in the table, under make bench's pipeline load: a cost that grows with the table). The ids
 * alone select the rows locked; whether each is still in the stage and claimable (another worker may
 * have moved it since the offer was read) is computed on the locked row (`still_claimable`): given
 * those conditions as well, the planner locked through the stage's partial index whenever the
 * statistics said the stage held few rows (a backlog grown since the last ANALYZE), and every claim
 * read the whole backlog (633 heap pages, 2.5 ms of a 4.3 ms claim of 32 in make bench's pipeline).
 */
export function claimInTurns(claim: InTurnClaim): string {
  const { table, alias, id, key, keyType } = claim;
  return `with recursive turn_keys(turn_key) as (
       (select ${key} from ${table} s where ${claim.scope('s')} order by ${key} limit 1)
       union all
       select (select n.${key} from ${table} n where ${claim.scope('n')} and n.${key} > k.turn_key order by n.${key} limit 1)
         from turn_keys k where k.turn_key is not null
     ),
     offered as (
       select o.${id} as offered_id, o.available_at, row_number() over (partition by o.${key} order by o.available_at) as turn
         from turn_keys k
         cross join lateral (
           select x.${id}, x.${key}, x.available_at from ${table} x
            where ${claim.scope('x')} and x.${key} = k.turn_key and ${claim.claimable('x')}
            order by x.available_at
            limit coalesce((select u.room from unnest($4::${keyType}[], $5::int[]) as u(turn_key, room) where u.turn_key = k.turn_key), $6)
         ) o
        where k.turn_key is not null and k.turn_key <> all($7::${keyType}[])
     ),
     claimed as (
       select y.${id} as claimed_id, ${claim.scope('y')} and ${claim.claimable('y')} as still_claimable from ${table} y
        where y.${id} = any(array(select offered_id from offered order by turn, available_at limit $1))
        for update skip locked
     )
     update ${table} ${alias} set leased_until = now() + $2 * interval '1 millisecond'${claim.set ? `, ${claim.set}` : ''}
       ${claim.join ? `from ${claim.join.from}` : ''}
      where ${alias}.${id} = any(array(select claimed_id from claimed where still_claimable))${claim.join ? ` and ${claim.join.where}` : ''}
     returning ${claim.returning}`;
}

/** A stage's claim of requests shared fairly between clinics (claimInTurns): $3 is the stage's own, in `returning`. */
export function claimRequestsByClinic(stage: RequestStageName, returning = ''): Statement {
  return statement(
    `emdr_${stage}_claim_by_clinic`,
    claimInTurns({
      table: 'emdr_requests',
      alias: 'r',
      id: 'queue_message_id',
      key: 'client_id',
      keyType: 'bigint',
      scope: (alias) => `${alias}.state = '${STAGES[stage].claims}'`,
      claimable,
      set: 'claims = r.claims + 1',
      returning: claimedColumns(returning),
    }),
  );
}

/** The parameters $4 to $7 of claimRequestsByClinic: each clinic's room, the room of the others, the clinics that are full. */
export function clinicRoom(room: ReadonlyMap<string, number>, perClinic: number, full: readonly string[]): unknown[] {
  return [[...room.keys()], [...room.values()], perClinic, [...full]];
}

/** Extends the leases of requests in hand ($1) that are still in the state the stage claimed. */
export function extendRequests(stage: RequestStageName): Statement {
  return statement(
    `emdr_${stage}_extend`,
    `update emdr_requests set leased_until = now() + $2 * interval '1 millisecond' where queue_message_id = any($1::uuid[]) and state = '${STAGES[stage].claims}'`,
  );
}

/** Puts requests ($1) back for a later try, in $2 ms (processing them failed: the registry was unavailable, say). */
export const RELEASE_REQUESTS = statement(
  'emdr_release_requests',
  `update emdr_requests set available_at = now() + $2 * interval '1 millisecond', leased_until = null where queue_message_id = any($1::uuid[])`,
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
  ['callback_lease_ms', 'float8'],
  ['disclosed_emdr_id', 'text'],
  ['delivered_emdr_id', 'text'],
  ['disclosed_organization', 'text'],
  ['disclosure_basis', 'text'],
] as const;

/**
 * The statement of the transitions `by` makes: each input request still in one of the states `by`
 * moves requests from (unless another worker or a repeated answer moved it first) gets its new
 * state, and the callback its transition emits. An emitted callback is held (`waiting`) until the
 * one before it was delivered: the statement locks that one, in id order as the delivery stage
 * takes its locks, and marks it `holds_next` when it holds the new one behind it; a delivery
 * committing meanwhile is either seen here (the new callback is due at once) or sees the mark, even
 * when this commits after its snapshot (the mark is an update: the delivery's update of that row
 * reads its newest version), and releases the new one (delivery.ts). A callback made due that this
 * process's delivery stage has room for (the input's callback_lease_ms) is inserted leased to it, as the
 * delivery claim would lease it, and comes back with the claim's columns (a hand-off). Returns the
 * requests moved, each with the number of callbacks it made due for a claim and the one it handed off.
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
       select c.id, c.queue_message_id, c.state from emdr_callbacks c join input i on c.queue_message_id = i.queue_message_id and c.sequence = i.sequence - 1
        order by c.id for no key update of c
     ),
     updated as (
       update emdr_requests r
          set state = i.state, errors = i.errors, emdr_id = coalesce(i.emdr_id, r.emdr_id),
              document = case when i.keep_files then r.document end,
              signature = case when i.keep_files then r.signature end,
              personal_signatures = case when i.keep_files then r.personal_signatures end,
              available_at = now() + coalesce(i.available_in_ms, 0) * interval '1 millisecond', leased_until = null, updated_at = now()
         from input i where r.queue_message_id = i.queue_message_id and r.state in (${sqlList(sourceStates(by))})
       returning r.queue_message_id, r.client_id, r.operation, coalesce(r.client_request_id, r.request_id) as request_id, r.trace_parent,
                 octet_length(r.document) as document_octets, octet_length(r.signature) as signature_octets
     ),
     disclosures as (
       insert into emdr_document_disclosures (client_id, queue_message_id, emdr_id, delivered_emdr_id, organization, basis)
       select u.client_id, u.queue_message_id, i.disclosed_emdr_id, i.delivered_emdr_id, i.disclosed_organization, i.disclosure_basis
         from updated u join input i using (queue_message_id) where i.disclosure_basis is not null
     ),
     emitted as (
       insert into emdr_callbacks (id, queue_message_id, name, sequence, url, payload, state, leased_until)
       select i.callback_id, i.queue_message_id, i.callback_name, i.sequence, i.callback_url, i.payload,
              case when coalesce(p.state, 'delivered') = 'delivered' then 'pending' else 'waiting' end,
              case when coalesce(p.state, 'delivered') = 'delivered' then now() + i.callback_lease_ms * interval '1 millisecond' end
         from input i join updated u using (queue_message_id) left join previous p using (queue_message_id)
        where i.callback_id is not null
       on conflict (queue_message_id, sequence) do nothing
       returning id, origin, name, url, payload, queue_message_id, sequence, round_attempts, state, leased_until is not null as handed
     ),
     -- The callback before one held behind it knows: its delivery releases the held one (delivery.ts).
     held_behind as (
       update emdr_callbacks c set holds_next = true
         from emitted e join previous p using (queue_message_id)
        where e.state = 'waiting' and c.id = p.id
     )
     select u.queue_message_id as moved_id,
            (select count(*) from emitted e where e.queue_message_id = u.queue_message_id and e.state = 'pending' and not e.handed)::int as due,
            ${claimedCallbackColumns({
              callback: 'h',
              client: 'k',
              operation: 'u.operation',
              requestId: 'u.request_id',
              traceParent: 'u.trace_parent',
              documentOctets: 'u.document_octets',
              signatureOctets: 'u.signature_octets',
            })}
       from updated u
       left join emitted h on h.queue_message_id = u.queue_message_id and h.handed
       left join emdr_clients k on k.id = u.client_id and h.id is not null`,
  );
}

const SETTLE: Record<TransitionMaker, Statement> = {
  acceptance: settleStatement('acceptance'),
  submission: settleStatement('submission'),
  outcome: settleStatement('outcome'),
  deadline: settleStatement('deadline'),
};

/**
 * A new callback's webhook-id (Standard Webhooks): the same on every attempt. 32 hex digits of a
 * random UUID (122 random bits): Node draws those from a cached batch, where randomBytes(16) asked
 * OpenSSL each time (3.4 against 0.7 µs alone; 2% of the worker's main thread under make bench's
 * pipeline, two ids a document).
 */
export const newWebhookId = () => `msg_${randomUUID().replaceAll('-', '')}`;

/** The callback a settlement's transition emits (lifecycle.ts), with its URL; throws when the lifecycle has no transition to its state by `by`. */
function emittedBy(by: TransitionMaker, settlement: Settlement): { callback: EmittedCallback; url: string } | undefined {
  if (!TRANSITIONS.some((candidate) => candidate.by === by && candidate.to === settlement.state))
    throw new Error(`the lifecycle has no transition to ${settlement.state} by ${by}`);
  const phase = TRANSITIONS.find((candidate) => candidate.by === by && candidate.to === settlement.state && 'emits' in candidate);
  if (!phase || !('emits' in phase)) return undefined;
  const callback = callbackOf(settlement.operation, phase.emits);
  if (settlement.payload === undefined) throw new Error(`${by} → ${settlement.state} emits ${callback.name}: a payload is needed`);
  return { callback, url: callbackUrl(settlement.callbackBase, callback.name) };
}

/**
 * The SETTLE arrays of a batch: one element per settlement, with the callback its transition emits
 * (`emitted`, in the same order) and how long that stays leased to this process (`callbackLeaseMs`: a hand-off; null: not).
 */
function settleColumns(
  settlements: readonly Settlement[],
  emitted: ReadonlyArray<ReturnType<typeof emittedBy>>,
  callbackLeaseMs: ReadonlyArray<number | null>,
): unknown[][] {
  const columns: unknown[][] = COLUMNS.map(() => []);
  settlements.forEach((settlement, index) => {
    const { callback, url } = emitted[index] ?? {};
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
      url ?? null,
      callback ? JSON.stringify(settlement.payload) : null,
      callbackLeaseMs[index] ?? null,
      settlement.disclosure?.emdrId ?? null,
      settlement.disclosure?.deliveredEmdrId ?? null,
      settlement.disclosure?.organization ?? null,
      settlement.disclosure?.basis ?? null,
    ];
    values.forEach((value, column) => {
      columns[column]!.push(value);
    });
  });
  return columns;
}

/**
 * Where the callbacks a settle makes due go without a claim statement: this process's delivery
 * stage (workers.ts), as many as it has room for. A callback handed off is inserted leased to this
 * process, as the delivery claim would lease it; one held (`waiting`) is not handed off.
 */
export interface CallbackHandOff {
  leaseMs: number;
  /** Places for callbacks of these receiver origins (origin → how many wanted): how many of each it may take now. */
  reserve(wanted: ReadonlyMap<string, number>): Map<string, number>;
  /** Ends a reservation with the callbacks the settle leased to this process (none when it failed). */
  take(reserved: ReadonlyMap<string, number>, callbacks: ClaimedCallback[]): void;
}

/** What a settle did: the requests it moved (others had moved on already) and how many callbacks it made due for a claim. */
export interface Settled {
  moved: Set<string>;
  due: number;
}

type SettledRow = { moved_id: string; due: number } & ({ id: null } | ClaimedCallback);

/** Moves a batch of requests on by the transitions of `by`, in one statement; the callbacks it makes due go to `handOff` as far as it has room. */
export async function settle(sql: Queryable, by: TransitionMaker, settlements: readonly Settlement[], handOff?: CallbackHandOff): Promise<Settled> {
  if (settlements.length === 0) return { moved: new Set(), due: 0 };
  const emitted = settlements.map((settlement) => emittedBy(by, settlement));
  const origins = emitted.map((entry) => (entry ? callbackOrigin(entry.url) : undefined));
  const wanted = new Map<string, number>();
  for (const origin of origins) if (origin !== undefined) wanted.set(origin, (wanted.get(origin) ?? 0) + 1);
  const reserved = handOff && wanted.size > 0 ? handOff.reserve(wanted) : new Map<string, number>();
  // Each callback with a reserved place of its origin is leased on; the rest wait for a claim.
  const places = new Map(reserved);
  const leases = origins.map((origin) => {
    const left = origin === undefined ? 0 : (places.get(origin) ?? 0);
    if (!handOff || left <= 0) return null;
    places.set(origin!, left - 1);
    return handOff.leaseMs;
  });
  let handed: ClaimedCallback[] = [];
  try {
    const columns = settleColumns(settlements, emitted, leases);
    const rows = await retryOnDeadlock(() => sql.rows<SettledRow>(SETTLE[by], columns));
    handed = rows.flatMap((row) => (row.id === null ? [] : [row as ClaimedCallback]));
    return { moved: new Set(rows.map((row) => row.moved_id)), due: rows.reduce((sum, row) => sum + row.due, 0) };
  } finally {
    if (handOff && wanted.size > 0) handOff.take(reserved, handed);
  }
}
