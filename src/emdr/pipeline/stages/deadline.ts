import { statement } from '../../../db/sql.js';
import type { CallbackErrorItem } from '../../errors/codes.js';
import { STAGES } from '../lifecycle/lifecycle.js';
import type { OutcomeRecorder } from './outcome.js';
import type { ClaimedRequestRow, PipelineContext } from '../lifecycle/requests.js';
import { claimRequests, extendRequests } from '../lifecycle/transitions.js';

/**
 * The deadline stage: submitted requests whose answer did not come by REGISTRY_DEADLINE (a
 * submitted request's `available_at` is its deadline) end with ASYNC_RESPONSE_TIMEOUT, through the
 * outcome recorder, so an answer arriving at the same moment and the timeout cannot both count.
 */

const CLAIM = claimRequests('deadline');
const EXTEND = extendRequests('deadline');
/** When the next deadline falls, so an idle loop wakes for it (deadlines another process set, or set before a restart). */
const NEXT_DEADLINE = statement(
  'emdr_deadline_next',
  `select (extract(epoch from min(greatest(available_at, leased_until))) * 1000)::float8 as at from emdr_requests where state = '${STAGES.deadline.claims}'`,
);

const TIMEOUT: CallbackErrorItem = {
  code: 'ASYNC_RESPONSE_TIMEOUT',
  message: 'the registry did not answer within the deadline (REGISTRY_DEADLINE); the document may still have been registered: search for it by localUid',
};

export class DeadlineStage {
  constructor(
    private readonly context: PipelineContext,
    private readonly outcomes: OutcomeRecorder,
  ) {}

  readonly claim = (limit: number): Promise<ClaimedRequestRow[]> => this.context.sql.rows<ClaimedRequestRow>(CLAIM, [limit, this.context.leaseMs]);

  readonly extend = (batch: ClaimedRequestRow[]) => this.context.sql.run(EXTEND, [batch.map((request) => request.queue_message_id), this.context.leaseMs]);

  readonly process = async (batch: ClaimedRequestRow[]): Promise<void> => {
    for (const request of batch) this.context.logger.warn({ queueMessageId: request.queue_message_id }, 'no answer from the registry by the deadline');
    await this.outcomes.settleAnswers(
      'deadline',
      batch,
      batch.map((request) => ({ messageId: request.queue_message_id, ok: false, errors: [TIMEOUT] })),
    );
  };

  /** The next deadline (epoch ms), if any request waits. */
  readonly nextDue = async (): Promise<number | undefined> => (await this.context.sql.row<{ at: number | null }>(NEXT_DEADLINE))?.at ?? undefined;
}
