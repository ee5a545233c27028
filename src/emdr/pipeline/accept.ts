import { randomBytes } from 'node:crypto';
import { retryOnDeadlock, statement } from '../../db/sql.js';
import { retryDelayMs } from '../../work/stage.js';
import { accessBasis, NO_SUCH_ITEM } from '../access.js';
import type { CallbackErrorItem } from '../codes.js';
import { registerDocumentAcceptance, type AcceptanceFindings } from './acceptance.js';
import { ACCEPTANCE_CALLBACK, callbackUrl, claimRequests, type ClaimedRequestRow, withErrors, type DemandMetadata, type PipelineContext, type RegisterMetadata } from './requests.js';
import type { DocumentCheckPool } from './document-check.js';

/**
 * The acceptance stage: a batch of received requests claimed in one statement (with what the checks
 * need: the clinic's organizations, a small document itself, whether the localUid was used before),
 * checked, then settled in one statement: each request accepted or rejected with its acceptance
 * callback, which the delivery stage then sends.
 */

/** Documents up to this size come with the claim; larger ones are read in slices by the document check. */
const INLINE_DOCUMENT_BYTES = 64 * 1024;

interface ClaimedRequest extends ClaimedRequestRow {
  intake_errors: CallbackErrorItem[] | null;
  signature: Buffer | null;
  personal_signatures: Array<{ signature: string }> | null;
  document_size: number;
  document: Buffer | null;
  duplicate_local_uid: boolean;
}

const CLAIM = claimRequests(
  'emdr_claim_received',
  'received',
  `r.intake_errors, r.signature, r.personal_signatures,
   coalesce(octet_length(r.document), 0) as document_size,
   case when octet_length(r.document) <= $3 then r.document end as document,
   (r.local_uid is not null and exists (
      select 1 from emdr_requests e
       where e.client_id = r.client_id and e.operation = 'RegisterDocument' and e.local_uid = r.local_uid
         and e.queue_message_id <> r.queue_message_id and e.state <> 'rejected'
         and (e.created_at < r.created_at or (e.created_at = r.created_at and e.queue_message_id < r.queue_message_id)))) as duplicate_local_uid`,
);

/**
 * Each request accepted or rejected (unless another worker settled it first) with its acceptance
 * callback; a rejected request has ended, and its copy of the files goes at once (retention.ts).
 */
const SETTLE = statement(
  'emdr_settle_received',
  `with input as (
     select * from unnest($1::uuid[], $2::text[], $3::jsonb[], $4::text[], $5::text[], $6::text[], $7::jsonb[])
         as t(queue_message_id, state, errors, callback_id, callback_name, callback_url, payload)
   ),
   updated as (
     update emdr_requests r
        set state = i.state, errors = i.errors, available_at = now(), updated_at = now(),
            document = case when i.state = 'rejected' then null else r.document end,
            signature = case when i.state = 'rejected' then null else r.signature end,
            personal_signatures = case when i.state = 'rejected' then null else r.personal_signatures end
       from input i where r.queue_message_id = i.queue_message_id and r.state = 'received'
     returning r.queue_message_id
   )
   insert into emdr_callbacks (id, queue_message_id, name, sequence, url, payload, state)
   select i.callback_id, i.queue_message_id, i.callback_name, 1, i.callback_url, i.payload, 'pending'
     from input i join updated u using (queue_message_id)
   on conflict (queue_message_id, sequence) do nothing
   returning queue_message_id`,
);

/** Extends the leases of requests in hand ($1) that are still in state $3. */
export const EXTEND_REQUESTS = statement('emdr_extend_requests', `update emdr_requests set available_at = now() + $2 * interval '1 millisecond' where queue_message_id = any($1::uuid[]) and state = $3`);

export const RELEASE_REQUESTS = statement('emdr_release_requests', `update emdr_requests set available_at = now() + $2 * interval '1 millisecond' where queue_message_id = any($1::uuid[])`);

interface Decision extends AcceptanceFindings {
  request: ClaimedRequest;
}

export class AcceptanceStage {
  constructor(
    private readonly context: PipelineContext,
    private readonly documents: DocumentCheckPool,
  ) {}

  readonly claim = (limit: number): Promise<ClaimedRequest[]> => this.context.sql.rows<ClaimedRequest>(CLAIM, [limit, this.context.leaseMs, INLINE_DOCUMENT_BYTES]);

  readonly extend = (batch: ClaimedRequest[]) => this.context.sql.run(EXTEND_REQUESTS, [batch.map((request) => request.queue_message_id), this.context.leaseMs, 'received']);

  private async findingsOf(request: ClaimedRequest): Promise<AcceptanceFindings> {
    if (request.operation === 'RegisterDocument') {
      return registerDocumentAcceptance(
        { sql: this.context.sql, documents: this.documents, xmlCheckTimeoutMs: this.context.xmlCheckTimeoutMs },
        {
          queueMessageId: request.queue_message_id,
          intakeErrors: request.intake_errors,
          metadata: request.metadata as RegisterMetadata,
          document: request.document,
          documentSize: request.document_size,
          signature: request.signature,
          personalSignatures: request.personal_signatures,
          duplicateLocalUid: request.duplicate_local_uid,
        },
      );
    }
    // A document the clinic may not have is answered as one that does not exist (access.ts).
    const metadata = request.metadata as DemandMetadata;
    const owner = await this.context.registry.currentVersionOwner(metadata.emdrId);
    const allowed = accessBasis(owner, { organizations: request.organizations, ...(metadata.patientSnils === undefined ? {} : { patientSnils: metadata.patientSnils }) });
    return { errors: allowed ? [] : [NO_SUCH_ITEM], warnings: [] };
  }

  /** Checks the batch; settles what was decided, and puts back (for a later try) what failed to be checked. */
  readonly process = async (batch: ClaimedRequest[]): Promise<number> => {
    const decided: Decision[] = [];
    const failed: ClaimedRequest[] = [];
    await Promise.all(
      batch.map(async (request) => {
        try {
          decided.push({ request, ...(await this.findingsOf(request)) });
        } catch (error) {
          this.context.logger.error({ err: error, queueMessageId: request.queue_message_id }, 'acceptance check failed; trying again later');
          failed.push(request);
        }
      }),
    );
    for (const request of failed) await this.context.sql.run(RELEASE_REQUESTS, [[request.queue_message_id], retryDelayMs(request.claims, this.context.leaseMs)]);
    if (decided.length === 0) return 0;
    return retryOnDeadlock(() => this.context.sql.run(SETTLE, settleColumns(decided)));
  };
}

/** The SETTLE statement's arrays, one element per decided request. */
function settleColumns(decided: readonly Decision[]): unknown[][] {
  const columns: unknown[][] = [[], [], [], [], [], [], []];
  for (const { request, errors, warnings } of decided) {
    const name = ACCEPTANCE_CALLBACK[request.operation];
    const payload =
      request.operation === 'RegisterDocument'
        ? { queueMessageId: request.queue_message_id, localUid: (request.metadata as RegisterMetadata).localUid, ...(warnings.length > 0 ? { warnings } : {}) }
        : { queueMessageId: request.queue_message_id, clientMessageId: (request.metadata as DemandMetadata).clientMessageId, emdrId: (request.metadata as DemandMetadata).emdrId };
    const values = [
      request.queue_message_id,
      errors.length > 0 ? 'rejected' : 'accepted',
      errors.length > 0 ? JSON.stringify(errors) : null,
      `msg_${randomBytes(16).toString('hex')}`,
      name,
      callbackUrl(request.callback_url, name),
      JSON.stringify(withErrors(payload, errors)),
    ];
    values.forEach((value, index) => columns[index]!.push(value));
  }
  return columns;
}
