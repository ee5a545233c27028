import { retryDelayMs } from '../../work/stage.js';
import type { DocumentCheckPool } from './document-check.js';
import type { AcceptanceFindings, ClaimedForAcceptance } from './operation-handler.js';
import { OPERATION_HANDLERS } from './operations.js';
import type { PipelineContext } from './requests.js';
import { withErrors } from './requests.js';
import { claimRequests, extendRequests, RELEASE_REQUESTS, settle, type Settled, type Settlement } from './transitions.js';
import { tracer, type ActiveSpan } from '../../tracing/tracing.js';
import { stageSpan } from './stage-span.js';

/**
 * The acceptance stage: a batch of received requests claimed in one statement (with what the checks
 * need: the clinic's organizations, a small document itself, whether the localUid was used before),
 * checked by their operation's handler, then settled in one statement: each request accepted or
 * rejected with its acceptance callback, which the delivery stage then sends.
 */

/** Documents up to this size come with the claim; larger ones are read in slices by the document check. */
const INLINE_DOCUMENT_BYTES = 64 * 1024;

const CLAIM = claimRequests(
  'acceptance',
  `r.intake_errors, r.signature, r.personal_signatures,
   coalesce(octet_length(r.document), 0) as document_size,
   case when octet_length(r.document) <= $3 then r.document end as document,
   (r.local_uid is not null and exists (
      select 1 from emdr_requests e
       where e.client_id = r.client_id and e.operation = 'RegisterDocument' and e.local_uid = r.local_uid
         and e.queue_message_id <> r.queue_message_id and e.state <> 'rejected'
         and (e.created_at < r.created_at or (e.created_at = r.created_at and e.queue_message_id < r.queue_message_id)))) as duplicate_local_uid`,
);
const EXTEND = extendRequests('acceptance');

export class AcceptanceStage {
  constructor(
    private readonly context: PipelineContext,
    private readonly documents: DocumentCheckPool,
  ) {}

  readonly claim = (limit: number): Promise<ClaimedForAcceptance[]> => this.context.sql.rows<ClaimedForAcceptance>(CLAIM, [limit, this.context.leaseMs, INLINE_DOCUMENT_BYTES]);

  readonly extend = (batch: ClaimedForAcceptance[]) => this.context.sql.run(EXTEND, [batch.map((request) => request.queue_message_id), this.context.leaseMs]);

  private findingsOf(request: ClaimedForAcceptance): Promise<AcceptanceFindings> {
    const { sql, registry, xmlCheckTimeoutMs } = this.context;
    return OPERATION_HANDLERS[request.operation].accept(request, { sql, registry, documents: this.documents, xmlCheckTimeoutMs });
  }

  /** The checks' findings, their verdict on the span. */
  private async checked(request: ClaimedForAcceptance, span: ActiveSpan): Promise<AcceptanceFindings> {
    const findings = await this.findingsOf(request);
    span.setAttributes({ 'ehr_gateway.verdict': findings.errors.length > 0 ? 'rejected' : 'accepted', 'ehr_gateway.error_codes': findings.errors.map((error) => error.code).join(' ') });
    return findings;
  }

  /** Checks the batch; settles what was decided, and puts back (for a later try) what failed to be checked. */
  readonly process = async (batch: ClaimedForAcceptance[]): Promise<Settled> => {
    const decided: Settlement[] = [];
    const failed: ClaimedForAcceptance[] = [];
    await Promise.all(
      batch.map(async (request) => {
        try {
          decided.push(settlementOf(request, await tracer().inSpan('acceptance check', stageSpan(request), (span) => this.checked(request, span))));
        } catch (error) {
          this.context.logger.error({ err: error, queueMessageId: request.queue_message_id }, 'acceptance check failed; trying again later');
          failed.push(request);
        }
      }),
    );
    for (const request of failed) await this.context.sql.run(RELEASE_REQUESTS, [[request.queue_message_id], retryDelayMs(request.claims, this.context.leaseMs)]);
    return settle(this.context.sql, 'acceptance', decided);
  };
}

/** Accepted, or rejected (a rejected request has ended: its copy of the files goes at once), with its acceptance callback. */
function settlementOf(request: ClaimedForAcceptance, findings: AcceptanceFindings): Settlement {
  const rejected = findings.errors.length > 0;
  return {
    queueMessageId: request.queue_message_id,
    operation: request.operation,
    state: rejected ? 'rejected' : 'accepted',
    errors: findings.errors,
    keepFiles: !rejected,
    callbackBase: request.callback_url,
    payload: withErrors(OPERATION_HANDLERS[request.operation].acceptancePayload(request, findings), findings.errors),
  };
}
