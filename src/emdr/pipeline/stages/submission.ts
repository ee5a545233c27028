import { isDatabaseUnavailable } from '../../../db/database.js';
import { retryDelayMs } from '../../../work/stage.js';
import type { Submission } from '../../registry/port.js';
import type { ClaimedForSubmission } from '../operations/operation-handler.js';
import { OPERATION_HANDLERS } from '../operations/operations.js';
import type { PipelineContext } from '../lifecycle/requests.js';
import { claimRequests, extendRequests, RELEASE_REQUESTS, settle, type CallbackHandOff, type Settled, type Settlement } from '../lifecycle/transitions.js';
import { tracer } from '../../../tracing/tracing.js';
import { stageSpan } from '../lifecycle/stage-span.js';

/**
 * The submission stage: a batch of accepted requests claimed in one statement, each sent to the
 * registry by its operation's handler, then settled in one statement: submitted (waiting for the
 * registry's answer until REGISTRY_DEADLINE), or failed when the registry refused it at once. A
 * request the registry could not take now stays accepted and is sent again later, under the same
 * message id (its queueMessageId), so a worker stopped between the sending and the settling sends
 * the same message again rather than another one.
 */

const CLAIM = claimRequests('submission', 'r.signature, r.personal_signatures');
const EXTEND = extendRequests('submission');

export class SubmissionStage {
  constructor(
    private readonly context: PipelineContext,
    /** Where the result callbacks of refusals go without a delivery claim (this process's delivery stage). */
    private readonly callbacks?: CallbackHandOff,
  ) {}

  readonly claim = (limit: number): Promise<ClaimedForSubmission[]> => this.context.sql.rows<ClaimedForSubmission>(CLAIM, [limit, this.context.leaseMs]);

  readonly extend = (batch: ClaimedForSubmission[]) => this.context.sql.run(EXTEND, [batch.map((request) => request.queue_message_id), this.context.leaseMs]);

  /** Submits the batch; settles what the registry took or refused, and puts back what it could not take now. */
  readonly process = async (batch: ClaimedForSubmission[]): Promise<Settled> => {
    const answered: Settlement[] = [];
    await Promise.all(
      batch.map(async (request) => {
        const handler = OPERATION_HANDLERS[request.operation];
        let submission: Submission;
        try {
          submission = await tracer().inSpan(
            'registry submission',
            () => stageSpan(request),
            async (span) => {
              const submitted = await handler.submit(this.context.registry, request);
              span.setAttributes(() => ({
                'ehr_gateway.verdict': submitted.accepted ? 'submitted' : 'refused',
                ...(submitted.accepted ? {} : { 'ehr_gateway.error_codes': submitted.errors.map((error) => error.code).join(' ') }),
              }));
              return submitted;
            },
          );
        } catch (error) {
          if (isDatabaseUnavailable(error)) throw error;
          this.context.logger.warn({ err: error, queueMessageId: request.queue_message_id }, 'the registry did not take the request; trying again later');
          await this.context.sql.run(RELEASE_REQUESTS, [[request.queue_message_id], retryDelayMs(request.claims, this.context.leaseMs)]);
          return;
        }
        if (submission.accepted) {
          answered.push({
            queueMessageId: request.queue_message_id,
            operation: request.operation,
            state: 'submitted',
            // A registration's document, for the registry to pull; or a file that overtook this settle (a registry that answers at once).
            keepFiles: true,
            availableInMs: this.context.deadlineMs,
            callbackBase: request.callback_url,
          });
          return;
        }
        const result = handler.result(request, { messageId: request.queue_message_id, ok: false, errors: submission.errors });
        answered.push({ queueMessageId: request.queue_message_id, operation: request.operation, callbackBase: request.callback_url, ...result });
      }),
    );
    return settle(this.context.sql, 'submission', answered, this.callbacks);
  };
}
