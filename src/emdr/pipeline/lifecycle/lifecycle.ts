/**
 * The lifecycle of an interface B request, declared once: its states, the transitions between them
 * (and who makes each), the callbacks of each operation in the order the clinic receives them, and
 * the stages that claim requests. The stage engine (workers.ts), the SQL (transitions.ts, the
 * claims, the metrics' queues, retention) and the tests read these tables; nothing else names a
 * state list or a callback's position. A new callback is one entry of CALLBACKS (and the transition
 * that emits it); a new operation, one entry of OPERATIONS and CALLBACKS plus its handler
 * (operations.ts).
 *
 *   received ──acceptance──▶ accepted ──submission──▶ submitted ──outcome──▶ completed | failed
 *       │                       │  └──────outcome─────────────────────────▶ completed | failed
 *       └─acceptance─▶ rejected  └──submission (refused at once)──▶ failed      submitted ──deadline──▶ failed
 *
 * `outcome` claims nothing: the registry's answer arrives as an event (registry/port.ts), days
 * later, through the built-in registry's answer loop or РЭМД's inbound endpoint; it may overtake
 * the submission's own commit (hence `accepted` among its sources).
 */

export const OPERATIONS = ['RegisterDocument', 'DemandContent'] as const;
export type Operation = (typeof OPERATIONS)[number];

/** The states of a request, in the order a request passes them. */
export const REQUEST_STATES = ['received', 'accepted', 'submitted', 'rejected', 'completed', 'failed'] as const;
export type RequestState = (typeof REQUEST_STATES)[number];

/** States a request ends in: only its callbacks' delivery goes on. */
export const ENDED_STATES = ['rejected', 'completed', 'failed'] as const satisfies readonly RequestState[];

/** The states of a callback: held until the callback before it was delivered, due, delivered, or failed for good (replayable). */
export const CALLBACK_STATES = ['waiting', 'pending', 'delivered', 'failed'] as const;
export type CallbackState = (typeof CALLBACK_STATES)[number];

/** What emits a callback: the acceptance checks' verdict, or the request's result. */
export type Phase = 'acceptance' | 'result';

export interface CallbackDeclaration {
  phase: Phase;
  name: string;
  /** The callback's body carries the request's files (the document demanded): they are kept until it is delivered. */
  carriesFile?: boolean;
}

/**
 * Each operation's callbacks, in the order the clinic receives them: a callback is held (`waiting`)
 * until the one before it was delivered. Its position, from 1, is its `sequence` in emdr_callbacks.
 */
export const CALLBACKS = {
  RegisterDocument: [
    { phase: 'acceptance', name: 'SendRegisterDocumentResponse' },
    { phase: 'result', name: 'SendRegisterDocumentResultResponse' },
  ],
  DemandContent: [
    { phase: 'acceptance', name: 'SendDemandContentResponse' },
    { phase: 'result', name: 'SendDocumentFileResultResponse', carriesFile: true },
  ],
} as const satisfies Record<Operation, readonly CallbackDeclaration[]>;

export type CallbackName = (typeof CALLBACKS)[Operation][number]['name'];

/** Who moves requests on: a stage that claims them, or the registry's answer. */
export type TransitionMaker = 'acceptance' | 'submission' | 'outcome' | 'deadline';

export interface Transition {
  by: TransitionMaker;
  from: RequestState;
  to: RequestState;
  /** The callback this transition emits, by phase. */
  emits?: Phase;
}

export const TRANSITIONS = [
  { by: 'acceptance', from: 'received', to: 'accepted', emits: 'acceptance' },
  { by: 'acceptance', from: 'received', to: 'rejected', emits: 'acceptance' },
  { by: 'submission', from: 'accepted', to: 'submitted' },
  // The registry refused the request at once (its answer to the submission).
  { by: 'submission', from: 'accepted', to: 'failed', emits: 'result' },
  { by: 'outcome', from: 'submitted', to: 'completed', emits: 'result' },
  { by: 'outcome', from: 'submitted', to: 'failed', emits: 'result' },
  // The answer overtook the submission's commit (a worker stopped in between, or a registry that answers at once).
  { by: 'outcome', from: 'accepted', to: 'completed', emits: 'result' },
  { by: 'outcome', from: 'accepted', to: 'failed', emits: 'result' },
  // No answer by REGISTRY_DEADLINE: ASYNC_RESPONSE_TIMEOUT.
  { by: 'deadline', from: 'submitted', to: 'failed', emits: 'result' },
] as const satisfies readonly Transition[];

/**
 * The stages of the worker role: each claims up to `batch` rows at a time (requests in `claims`, or
 * due callbacks) in WORKER_CONCURRENCY loops, or `loops` when it says so. An idle stage looks for
 * work nobody announced every `idlePollMs`, or every leasePollMs(JOB_EXPIRY) when that is longer: a
 * lease that ran out, a NOTIFY that was lost, another process's retry that fell due, or (deadline) a
 * time that came.
 */
export const STAGES = {
  acceptance: { claims: 'received', batch: 32, idlePollMs: 1000 },
  submission: { claims: 'accepted', batch: 32, idlePollMs: 1000 },
  // Deadlines are days long: a process wakes this stage at the deadlines it sets, and once a minute for the others'.
  // A request comes into its state due only at its deadline: moving one there wakes nothing (that cost a claim and a
  // read of the next deadline per submission batch, a third of a statement per document).
  deadline: { claims: 'submitted', batch: 64, idlePollMs: 60_000, loops: 1, dueLater: true },
  delivery: { claims: 'callbacks', batch: 64, idlePollMs: 1000 },
} as const satisfies Record<string, { claims: RequestState | 'callbacks'; batch: number; idlePollMs: number; loops?: number; dueLater?: true }>;

export type StageName = keyof typeof STAGES;

/**
 * The idle poll a lease allows: the rows of a worker that died come back when their lease ends
 * (JOB_EXPIRY, 30 s by default), so looking for them more often than a third of a lease finds them
 * barely sooner, and every look is a claim statement (issue 24: an idle worker's polls were 4
 * transactions a second). Announced work never waits for it (NOTIFY, or this process's own wake-ups
 * and retry timers). At most 10 s (a lost NOTIFY, or another process's retry, waits no longer), at
 * least 1 s (a short lease, as the tests set, keeps its quick recovery).
 */
export const leasePollMs = (leaseMs: number): number => Math.min(10_000, Math.max(1000, Math.round(leaseMs / 3)));
/** The stages that claim requests (delivery claims callbacks). */
export type RequestStageName = Exclude<StageName, 'delivery'>;

/** The states requests are in when `by` moves them on. */
export function sourceStates(by: TransitionMaker): RequestState[] {
  return [...new Set(TRANSITIONS.filter((transition) => transition.by === by).map((transition) => transition.from))];
}

/** The transition `by` makes from `from` to `to`; throws when the lifecycle has none (a bug in a stage). */
export function transition(by: TransitionMaker, from: RequestState, to: RequestState): Transition {
  const found = TRANSITIONS.find((candidate) => candidate.by === by && candidate.from === from && candidate.to === to);
  if (!found) throw new Error(`the lifecycle has no transition ${from} → ${to} by ${by}`);
  return found;
}

/**
 * The stages whose work `by` makes at once: those claiming the states it moves requests to (unless
 * their requests come due later: `dueLater`), and delivery when it emits callbacks.
 */
export function stagesWoken(by: TransitionMaker): StageName[] {
  const made = TRANSITIONS.filter((candidate) => candidate.by === by);
  const woken = (Object.keys(STAGES) as StageName[]).filter(
    (stage) => !('dueLater' in STAGES[stage]) && made.some((candidate) => candidate.to === STAGES[stage].claims),
  );
  if (made.some((candidate) => 'emits' in candidate)) woken.push('delivery');
  return woken;
}

export interface EmittedCallback {
  name: CallbackName;
  /** Its position among the operation's callbacks, from 1. */
  sequence: number;
  carriesFile: boolean;
}

/** The callback an operation emits in `phase`. */
export function callbackOf(operation: Operation, phase: Phase): EmittedCallback {
  const callbacks: readonly CallbackDeclaration[] = CALLBACKS[operation];
  const index = callbacks.findIndex((callback) => callback.phase === phase);
  if (index < 0) throw new Error(`${operation} has no ${phase} callback`);
  const callback = callbacks[index]!;
  return { name: callback.name as CallbackName, sequence: index + 1, carriesFile: callback.carriesFile === true };
}

/** The callbacks whose bodies carry the request's files. */
export const FILE_CALLBACKS: readonly CallbackName[] = OPERATIONS.flatMap((operation) =>
  (CALLBACKS[operation] as readonly CallbackDeclaration[]).filter((callback) => callback.carriesFile).map((callback) => callback.name as CallbackName),
);

/** A list of SQL string literals (the lifecycle's own names: no quoting needed beyond the quotes). */
export function sqlList(values: readonly string[]): string {
  for (const value of values) if (!/^[A-Za-z]+$/.test(value)) throw new Error(`not a lifecycle name: ${value}`);
  return values.map((value) => `'${value}'`).join(', ');
}
