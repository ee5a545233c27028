import { CallbackSender } from '../../callbacks/delivery.js';
import type { EgressPolicy } from '../../callbacks/egress.js';
import { listen } from '../../db/notify.js';
import { Stage } from '../../work/stage.js';
import { AcceptanceStage } from './accept.js';
import { CallbackStage } from './callbacks.js';
import { FulfilmentStage } from './fulfil.js';
import type { PipelineContext } from './requests.js';
import { DocumentCheckPool } from './document-check.js';

/** The NOTIFY channel on which processes announce new work of interface B to the workers. */
export const WORK_CHANNEL = 'ehr_gateway_emdr_work';
/**
 * What a notification on WORK_CHANNEL announces: new requests (the acceptance stage's work) or
 * callbacks due (the delivery stage's); any other payload, an empty one included, wakes every stage.
 */
export const WORK = { requests: 'requests', callbacks: 'callbacks' } as const;

/**
 * Each stage claims up to BATCH rows at a time, in LOOPS loops (WORKER_CONCURRENCY; one batch in hand each). Idle
 * loops look for work nobody announced (a lease that ran out: the rows of a worker that was
 * killed or hangs) every IDLE_POLL_MS: such rows come back within JOB_EXPIRY and that.
 */
const BATCH = { acceptance: 32, registry: 32, delivery: 64 } as const;
const LOOPS = 2;
const IDLE_POLL_MS = 1000;

export interface Workers {
  /** New requests were stored in this process. */
  requestsStored(): void;
  stop(): Promise<void>;
}

/**
 * The worker role: the acceptance, registry and delivery stages of interface B, each waking the next
 * as it hands work on, and all woken by notifications from the other processes.
 */
export async function startWorkers(context: PipelineContext & { databaseUrl: string; signatureTrustAnchors?: readonly Uint8Array[]; callbackEgress: EgressPolicy }): Promise<Workers> {
  const documents = new DocumentCheckPool(undefined, context.signatureTrustAnchors ? { trustAnchors: context.signatureTrustAnchors } : {});
  documents.start();
  const sender = new CallbackSender(context.retryScheduleMs, context.callbackEgress);
  const acceptance = new AcceptanceStage(context, documents);
  const registry = new FulfilmentStage(context);
  const delivery = new CallbackStage(context, sender);
  const common = { loops: context.loops ?? LOOPS, idlePollMs: IDLE_POLL_MS, logger: context.logger, leaseMs: context.leaseMs };

  const deliveryStage: Stage<Awaited<ReturnType<CallbackStage['claim']>>[number]> = new Stage({
    name: 'delivery',
    batchSize: BATCH.delivery,
    ...common,
    claim: delivery.claim,
    extend: delivery.extend,
    process: async (batch) => {
      const { released, retries } = await delivery.process(batch);
      if (released > 0) deliveryStage.wake();
      if (retries.length > 0) deliveryStage.wakeAt(Date.now() + Math.min(...retries));
    },
  });
  const registryStage = new Stage({
    name: 'registry',
    batchSize: BATCH.registry,
    ...common,
    claim: registry.claim,
    extend: registry.extend,
    process: async (batch) => {
      if ((await registry.process(batch)) > 0) deliveryStage.wake();
    },
  });
  const acceptanceStage = new Stage({
    name: 'acceptance',
    batchSize: BATCH.acceptance,
    ...common,
    claim: acceptance.claim,
    extend: acceptance.extend,
    process: async (batch) => {
      if ((await acceptance.process(batch)) > 0) {
        registryStage.wake();
        deliveryStage.wake();
      }
    },
  });
  const stages = [acceptanceStage, registryStage, deliveryStage];
  // Only the stage the work is for: every woken loop costs a claim statement, and the intake announces new requests up to 200 times a second.
  const woken = (payload: string) => (payload === WORK.requests ? [acceptanceStage] : payload === WORK.callbacks ? [deliveryStage] : stages);
  const listening = await listen(context.databaseUrl, WORK_CHANNEL, (payload) => woken(payload).forEach((stage) => stage.wake()), context.logger);
  for (const stage of stages) stage.start();
  return {
    requestsStored: () => acceptanceStage.wake(),
    async stop() {
      await listening.stop();
      await Promise.all(stages.map((stage) => stage.stop()));
      await documents.close();
      await sender.close();
    },
  };
}
