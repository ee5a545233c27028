import { CircuitBreaker } from '../../callbacks/circuit-breaker.js';
import { CallbackSender } from '../../callbacks/delivery.js';
import type { EgressPolicy } from '../../callbacks/egress.js';
import { listen } from '../../db/notify.js';
import { FairStage, type FairStageOptions } from '../../work/fair-stage.js';
import { Stage, type StageOptions } from '../../work/stage.js';
import { AcceptanceStage, type Checked } from './stages/acceptance.js';
import type { ClaimedForAcceptance } from './operations/operation-handler.js';
import { DeadlineStage } from './stages/deadline.js';
import { DeliveryStage, type Attempted } from './stages/delivery.js';
import type { ClaimedCallback } from './lifecycle/callback-rows.js';
import { DocumentCheckPool } from './document-check/document-check.js';
import { KeptFileStore } from './stages/kept-files.js';
import { leasePollMs, STAGES, stagesWoken, type StageName, type TransitionMaker } from './lifecycle/lifecycle.js';
import { OutcomeRecorder } from './stages/outcome.js';
import type { PipelineContext } from './lifecycle/requests.js';
import { SubmissionStage } from './stages/submission.js';
import type { CallbackHandOff, Settled } from './lifecycle/transitions.js';
import { WORK, WORK_CHANNEL } from './work-channel.js';

/** Loops per stage unless lifecycle.ts says otherwise (WORKER_CONCURRENCY). */
const LOOPS = 2;

export interface Workers {
  /** New requests of a clinic (its emdr_clients id) were stored in this process. */
  requestsStored(clinic: string): void;
  stop(): Promise<void>;
}

/** What a stage's engine needs of its handler (the classes of submission.ts and deadline.ts). */
type StageHandler<T> = Pick<StageOptions<T>, 'claim' | 'extend' | 'nextDue'> & { process(batch: T[]): Promise<void> };

/** What the workers do with a stage, whichever engine runs it (Stage, or FairStage for acceptance and delivery). */
interface RunningStage {
  start(): void;
  /** There is work (of a key of a FairStage, when known). */
  wake(key?: string): void;
  wakeAt(at: number): void;
  stop(): Promise<void>;
}

/**
 * The worker role: one Stage (src/work/stage.ts) per entry of lifecycle.ts's STAGES, each waking
 * the stages whose work its transitions make, all woken by notifications from the other processes;
 * and the registry's answers (registry/port.ts) recorded as they arrive.
 */
export async function startWorkers(
  context: PipelineContext & {
    databaseUrl: string;
    signatureTrustAnchors?: readonly Uint8Array[];
    callbackEgress: EgressPolicy;
    /** CALLBACK_TIMEOUT; default 15 s. */
    callbackTimeoutMs?: number;
    /** CALLBACK_CIRCUIT_FAILURES (0: never open) and CALLBACK_CIRCUIT_COOLDOWN. */
    callbackCircuit?: { failures: number; cooldownMs: number };
  },
): Promise<Workers> {
  const documents = new DocumentCheckPool(undefined, context.signatureTrustAnchors ? { trustAnchors: context.signatureTrustAnchors } : {});
  documents.start();
  const sender = new CallbackSender(context.retryScheduleMs, context.callbackEgress, context.callbackTimeoutMs);
  const circuit = context.callbackCircuit ?? { failures: 5, cooldownMs: 30_000 };
  const circuits = new CircuitBreaker({ threshold: circuit.failures === 0 ? Infinity : circuit.failures, cooldownMs: circuit.cooldownMs });
  context.metrics?.openCircuits(() => circuits.opened);
  const stages = {} as Record<StageName, RunningStage>;
  /** What a transition made: the stages claiming the states it moved requests to, and delivery for callbacks due. */
  const made = (by: TransitionMaker, settled: Settled) => {
    for (const stage of stagesWoken(by)) if (stage === 'delivery' ? settled.due > 0 : settled.moved.size > 0) stages[stage].wake();
  };
  /**
   * The callbacks a settle makes due go to this process's delivery stage, leased by the settle, when
   * it has room for them: no claim statement for them (issue 24). Not when their first attempt
   * waits (CALLBACK_RETRY_SCHEDULE's first entry): the claim keeps that wait.
   */
  const callbackHandOff: CallbackHandOff | undefined =
    (context.retryScheduleMs[0] ?? 0) > 0
      ? undefined
      : {
          leaseMs: context.leaseMs,
          reserve: (wanted) => deliveryStage.reserveHandOff(wanted),
          take: (reserved, callbacks) => deliveryStage.handOff(reserved, callbacks),
        };
  const outcomes = new OutcomeRecorder(context, (settled) => made('outcome', settled), callbackHandOff);
  const acceptance = new AcceptanceStage(context, documents, callbackHandOff);
  const submission = new SubmissionStage(context, callbackHandOff);
  const deadline = new DeadlineStage(context, outcomes);
  const delivery = new DeliveryStage(context, sender, circuits);

  const loops = context.loops ?? LOOPS;
  /** A stage of lifecycle.ts's STAGES, as the table declares it, with its handler. */
  const stageOf = <T>(name: StageName, handler: StageHandler<T>): RunningStage => {
    const declared: { batch: number; idlePollMs: number; loops?: number } = STAGES[name];
    const stage = new Stage<T>({
      name,
      batchSize: declared.batch,
      loops: declared.loops ?? loops,
      idlePollMs: Math.max(declared.idlePollMs, leasePollMs(context.leaseMs)),
      leaseMs: context.leaseMs,
      logger: context.logger,
      ...handler,
    });
    return stage;
  };
  /** A stage shared fairly by key: as many items in hand as `loops` batches of the table's size, at most half of them of one key. */
  const fairStageOf = <T, R>(
    name: 'acceptance' | 'delivery',
    handler: {
      claim: FairStageOptions<T, R>['claim'];
      keyOf(item: T): string;
      process(item: T): Promise<R>;
      settle(results: R[]): Promise<void>;
      extend(items: T[]): Promise<unknown>;
    },
  ): FairStage<T, R> => {
    const capacity = STAGES[name].batch * loops;
    return new FairStage<T, R>({
      name,
      capacity,
      perKey: Math.max(1, Math.floor(capacity / 2)),
      settleGroup: STAGES[name].batch,
      idlePollMs: Math.max(STAGES[name].idlePollMs, leasePollMs(context.leaseMs)),
      leaseMs: context.leaseMs,
      logger: context.logger,
      ...handler,
    });
  };
  const deliveryStage = fairStageOf<ClaimedCallback, Attempted>('delivery', {
    claim: (limit, room, perOrigin, full) => delivery.claim(limit, room, perOrigin, full),
    keyOf: (row) => row.origin,
    process: delivery.attempt,
    settle: async (attempted) => {
      const { released, retries } = await delivery.settle(attempted);
      if (released > 0) deliveryStage.wake();
      if (retries.length > 0) deliveryStage.wakeAt(Date.now() + Math.min(...retries));
    },
    extend: delivery.extend,
  });
  Object.assign(stages, {
    acceptance: fairStageOf<ClaimedForAcceptance, Checked>('acceptance', {
      claim: (limit, room, perClinic, full) => acceptance.claim(limit, room, perClinic, full),
      keyOf: (request) => request.client_id,
      process: acceptance.check,
      settle: async (checked) => made('acceptance', await acceptance.settle(checked)),
      extend: acceptance.extend,
    }),
    submission: stageOf('submission', {
      claim: submission.claim,
      extend: submission.extend,
      process: async (batch) => {
        const settled = await submission.process(batch);
        made('submission', settled);
        // This process wakes for the deadlines it sets; the deadline stage's idle poll and nextDue find the others'.
        if (settled.moved.size > 0) stages.deadline.wakeAt(Date.now() + context.deadlineMs);
      },
    }),
    deadline: stageOf('deadline', { claim: deadline.claim, extend: deadline.extend, nextDue: deadline.nextDue, process: deadline.process }),
    delivery: deliveryStage,
  } satisfies Record<StageName, RunningStage>);
  const all = Object.values(stages);
  // Only the stage the work is for: every woken loop costs a claim statement, and the intake announces new requests up to 200 times a second.
  const woken = (payload: string) => (payload === WORK.requests ? [stages.acceptance] : payload === WORK.callbacks ? [stages.delivery] : all);
  const listening = await listen(
    context.databaseUrl,
    WORK_CHANNEL,
    (payload) => {
      for (const stage of woken(payload)) stage.wake();
    },
    context.logger,
  );
  for (const stage of all) stage.start();
  const stopStages = async () => {
    await listening.stop();
    await Promise.all(all.map((stage) => stage.stop()));
    await documents.close();
    await sender.close();
  };
  let receiving: { stop(): Promise<void> };
  try {
    receiving = await context.registry.receive(outcomes, new KeptFileStore(context.sql));
  } catch (error) {
    await stopStages();
    throw error;
  }
  return {
    requestsStored: (clinic) => stages.acceptance.wake(clinic),
    async stop() {
      // The stages first: a submission in hand finishes with the registry's client still open.
      await stopStages();
      await receiving.stop();
    },
  };
}
