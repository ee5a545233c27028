import { CallbackSender } from '../../callbacks/delivery.js';
import type { EgressPolicy } from '../../callbacks/egress.js';
import { listen } from '../../db/notify.js';
import { Stage, type StageOptions } from '../../work/stage.js';
import { AcceptanceStage } from './acceptance.js';
import { DeadlineStage } from './deadline.js';
import { DeliveryStage } from './delivery.js';
import { DocumentCheckPool } from './document-check.js';
import { KeptFileStore } from './kept-files.js';
import { STAGES, stagesWoken, type StageName, type TransitionMaker } from './lifecycle.js';
import { OutcomeRecorder } from './outcome.js';
import type { PipelineContext } from './requests.js';
import { SubmissionStage } from './submission.js';
import type { Settled } from './transitions.js';

/** The NOTIFY channel on which processes announce new work of interface B to the workers. */
export const WORK_CHANNEL = 'ehr_gateway_emdr_work';
/**
 * What a notification on WORK_CHANNEL announces: new requests (the acceptance stage's work) or
 * callbacks due (the delivery stage's); any other payload, an empty one included, wakes every stage.
 */
export const WORK = { requests: 'requests', callbacks: 'callbacks' } as const;

/** Loops per stage unless lifecycle.ts says otherwise (WORKER_CONCURRENCY). */
const LOOPS = 2;

export interface Workers {
  /** New requests were stored in this process. */
  requestsStored(): void;
  stop(): Promise<void>;
}

/** What a stage's engine needs of its handler (the classes of acceptance.ts, submission.ts, deadline.ts, delivery.ts). */
type StageHandler<T> = Pick<StageOptions<T>, 'claim' | 'extend' | 'nextDue'> & { process(batch: T[]): Promise<void> };

/**
 * The worker role: one Stage (src/work/stage.ts) per entry of lifecycle.ts's STAGES, each waking
 * the stages whose work its transitions make, all woken by notifications from the other processes;
 * and the registry's answers (registry/port.ts) recorded as they arrive.
 */
export async function startWorkers(context: PipelineContext & { databaseUrl: string; signatureTrustAnchors?: readonly Uint8Array[]; callbackEgress: EgressPolicy }): Promise<Workers> {
  const documents = new DocumentCheckPool(undefined, context.signatureTrustAnchors ? { trustAnchors: context.signatureTrustAnchors } : {});
  documents.start();
  const sender = new CallbackSender(context.retryScheduleMs, context.callbackEgress);
  const stages = {} as Record<StageName, Stage<unknown>>;
  /** What a transition made: the stages claiming the states it moved requests to, and delivery for callbacks due. */
  const made = (by: TransitionMaker, settled: Settled) => {
    for (const stage of stagesWoken(by)) if (stage === 'delivery' ? settled.due > 0 : settled.moved.size > 0) stages[stage].wake();
  };
  const outcomes = new OutcomeRecorder(context, (settled) => made('outcome', settled));
  const acceptance = new AcceptanceStage(context, documents);
  const submission = new SubmissionStage(context);
  const deadline = new DeadlineStage(context, outcomes);
  const delivery = new DeliveryStage(context, sender);

  /** A stage of lifecycle.ts's STAGES, as the table declares it, with its handler. */
  const stageOf = <T>(name: StageName, handler: StageHandler<T>): Stage<unknown> => {
    const declared: { batch: number; idlePollMs: number; loops?: number } = STAGES[name];
    const stage = new Stage<T>({
      name,
      batchSize: declared.batch,
      loops: declared.loops ?? context.loops ?? LOOPS,
      idlePollMs: declared.idlePollMs,
      leaseMs: context.leaseMs,
      logger: context.logger,
      ...handler,
    });
    return stage as unknown as Stage<unknown>;
  };
  Object.assign(stages, {
    acceptance: stageOf('acceptance', { claim: acceptance.claim, extend: acceptance.extend, process: async (batch) => made('acceptance', await acceptance.process(batch)) }),
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
    delivery: stageOf('delivery', {
      claim: delivery.claim,
      extend: delivery.extend,
      process: async (batch) => {
        const { released, retries } = await delivery.process(batch);
        if (released > 0) stages.delivery.wake();
        if (retries.length > 0) stages.delivery.wakeAt(Date.now() + Math.min(...retries));
      },
    }),
  } satisfies Record<StageName, Stage<unknown>>);
  const all = Object.values(stages);
  // Only the stage the work is for: every woken loop costs a claim statement, and the intake announces new requests up to 200 times a second.
  const woken = (payload: string) => (payload === WORK.requests ? [stages.acceptance] : payload === WORK.callbacks ? [stages.delivery] : all);
  const listening = await listen(context.databaseUrl, WORK_CHANNEL, (payload) => woken(payload).forEach((stage) => stage.wake()), context.logger);
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
    requestsStored: () => stages.acceptance.wake(),
    async stop() {
      // The stages first: a submission in hand finishes with the registry's client still open.
      await stopStages();
      await receiving.stop();
    },
  };
}
