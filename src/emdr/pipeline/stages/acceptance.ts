import { retryDelayMs } from '../../../work/stage.js';
import type { DocumentCheckPool } from '../document-check/document-check.js';
import type { AcceptanceFindings, ClaimedForAcceptance } from '../operations/operation-handler.js';
import { OPERATION_HANDLERS } from '../operations/operations.js';
import type { PipelineContext } from '../lifecycle/requests.js';
import { withErrors } from '../lifecycle/requests.js';
import {
  claimRequestsByClinic,
  clinicRoom,
  extendRequests,
  RELEASE_REQUESTS,
  settle,
  type CallbackHandOff,
  type Settled,
  type Settlement,
} from '../lifecycle/transitions.js';
import { tracer } from '../../../tracing/tracing.js';
import { stageSpan } from '../lifecycle/stage-span.js';

/**
 * The acceptance stage: received requests claimed by clinic in turn (with what the checks need: the
 * clinic's organizations, a small document itself, whether the localUid was used before, by any clinic), each
 * checked by its operation's handler on its own, and settled as soon as it is decided, together with
 * the others decided meanwhile: accepted or rejected, with its acceptance callback, which the
 * delivery stage then sends. The engine (src/work/fair-stage.ts) keeps one clinic from holding more
 * than half of the places; a free document-check worker goes to the clinic with the fewest checks under way (document-check.ts).
 */

/**
 * Documents up to this size come with the claim; larger ones are read in slices by the document
 * check. So do a request's signatures, up to this size together (as stored): larger ones are read
 * when a check worker takes the request (register-document-checks.ts). A claim takes up to 32
 * requests, and each waits in this process's heap for a worker: with their signatures, 32 of one
 * clinic's requests of 21 signatures × 16 signers carried 32 × ~0.5 MB of text to parse and hold (issue 21 M2).
 */
const INLINE_BYTES = 64 * 1024;

const SIGNATURES_SIZE = 'coalesce(pg_column_size(r.signature), 0) + coalesce(pg_column_size(r.personal_signatures), 0)';

const CLAIM = claimRequestsByClinic(
  'acceptance',
  `r.intake_errors,
   ${SIGNATURES_SIZE} <= $3 as signatures_inline,
   case when ${SIGNATURES_SIZE} <= $3 then r.signature end as signature,
   case when ${SIGNATURES_SIZE} <= $3 then r.personal_signatures end as personal_signatures,
   coalesce(octet_length(r.document), 0) as document_size,
   case when octet_length(r.document) <= $3 then r.document end as document,
   (r.local_uid is not null and exists (
      select 1 from emdr_requests e
       where e.local_uid = r.local_uid and e.operation = 'RegisterDocument'
         and e.queue_message_id <> r.queue_message_id and e.state <> 'rejected'
         and (e.created_at < r.created_at or (e.created_at = r.created_at and e.queue_message_id < r.queue_message_id)))) as duplicate_local_uid`,
);
const EXTEND = extendRequests('acceptance');

/** A request's check: decided, or failed to be checked (it is put back for a later try). */
export type Checked = { decided: Settlement } | { failed: ClaimedForAcceptance };

export class AcceptanceStage {
  constructor(
    private readonly context: PipelineContext,
    private readonly documents: DocumentCheckPool,
    /** Where the acceptance callbacks go without a delivery claim (this process's delivery stage). */
    private readonly callbacks?: CallbackHandOff,
  ) {}

  /** Up to `limit` requests, by clinic in turn: none of the clinics in `full`, at most its room of a clinic in `room`, `perClinic` of another. */
  claim(limit: number, room: ReadonlyMap<string, number>, perClinic: number, full: readonly string[]): Promise<ClaimedForAcceptance[]> {
    return this.context.sql.rows<ClaimedForAcceptance>(CLAIM, [limit, this.context.leaseMs, INLINE_BYTES, ...clinicRoom(room, perClinic, full)]);
  }

  readonly extend = (batch: ClaimedForAcceptance[]) => this.context.sql.run(EXTEND, [batch.map((request) => request.queue_message_id), this.context.leaseMs]);

  /** The checks of one request. */
  readonly check = async (request: ClaimedForAcceptance): Promise<Checked> => {
    const { sql, registry, xmlCheckTimeoutMs } = this.context;
    try {
      const findings = await tracer().inSpan(
        'acceptance check',
        () => stageSpan(request),
        async (span) => {
          const found = await OPERATION_HANDLERS[request.operation].accept(request, { sql, registry, documents: this.documents, xmlCheckTimeoutMs });
          span.setAttributes(() => ({
            'ehr_gateway.verdict': found.errors.length > 0 ? 'rejected' : 'accepted',
            'ehr_gateway.error_codes': found.errors.map((error) => error.code).join(' '),
          }));
          return found;
        },
      );
      return { decided: settlementOf(request, findings) };
    } catch (error) {
      this.context.logger.error({ err: error, queueMessageId: request.queue_message_id }, 'acceptance check failed; trying again later');
      return { failed: request };
    }
  };

  /** Settles what was decided, in one statement, and puts back (for a later try) what failed to be checked. */
  readonly settle = async (checked: readonly Checked[]): Promise<Settled> => {
    for (const entry of checked) {
      if ('failed' in entry)
        await this.context.sql.run(RELEASE_REQUESTS, [[entry.failed.queue_message_id], retryDelayMs(entry.failed.claims, this.context.leaseMs)]);
    }
    return settle(
      this.context.sql,
      'acceptance',
      checked.flatMap((entry) => ('decided' in entry ? [entry.decided] : [])),
      this.callbacks,
    );
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
