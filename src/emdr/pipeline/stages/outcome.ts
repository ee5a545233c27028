import { statement } from '../../../db/sql.js';
import type { OutcomeReceipt, OutcomeSink, RegistryOutcome } from '../../registry/port.js';
import { OPERATIONS, sourceStates, sqlList } from '../lifecycle/lifecycle.js';
import { OPERATION_HANDLERS } from '../operations/operations.js';
import type { ClaimedRequestRow, PipelineContext } from '../lifecycle/requests.js';
import { settle, type CallbackHandOff, type Settled, type Settlement } from '../lifecycle/transitions.js';
import { isUuid } from '../../values/values.js';
import { tracer } from '../../../tracing/tracing.js';
import { stageSpan } from '../lifecycle/stage-span.js';

/**
 * The registry's answers, recorded: the `outcome` transition of lifecycle.ts. The built-in
 * registry's answer loop and РЭМД's inbound endpoint hand their answers here, and so does the
 * deadline stage (ASYNC_RESPONSE_TIMEOUT). Each answer names its request by the message id of the
 * submission (the queueMessageId); the request's operation turns it into the result callback. A
 * repeated answer, or one for a request that has ended (the deadline came first), changes nothing.
 */

const REQUESTS = statement(
  'emdr_outcome_requests',
  `select r.queue_message_id, r.client_id, r.operation, r.state, r.callback_url, r.metadata, r.claims, r.trace_parent, k.organizations
     from emdr_requests r join emdr_clients k on k.id = r.client_id
    where r.queue_message_id = any($1::uuid[])`,
);

/** The operations whose outcome is a file: a delivered file is stored with such a request only. */
const FILE_OPERATIONS = OPERATIONS.filter((operation) => OPERATION_HANDLERS[operation].expects === 'file');

const STORE_FILE = statement(
  'emdr_outcome_store_file',
  `update emdr_requests set document = $2, signature = $3
    where queue_message_id = $1 and operation in (${sqlList(FILE_OPERATIONS)}) and state in (${sqlList(sourceStates('outcome'))})
   returning 1`,
);

export class OutcomeRecorder implements OutcomeSink {
  constructor(
    private readonly context: Pick<PipelineContext, 'sql' | 'logger'>,
    /** Told what each recording settled (the delivery stage has callbacks due). */
    private readonly onSettled: (settled: Settled) => void,
    /** Where the result callbacks go without a delivery claim (this process's delivery stage). */
    private readonly callbacks?: CallbackHandOff,
  ) {}

  async record(outcomes: readonly RegistryOutcome[]): Promise<OutcomeReceipt[]> {
    const ids = [...new Set(outcomes.map((outcome) => outcome.messageId).filter(isUuid))];
    const requests = ids.length === 0 ? [] : await this.context.sql.rows<ClaimedRequestRow>(REQUESTS, [ids]);
    return this.settleAnswers('outcome', requests, outcomes);
  }

  /**
   * Settles the answers to requests already read (the deadline stage brings its claimed rows and its
   * timeouts, as transitions of its own): each answer becomes its request's result unless the
   * request has moved on already.
   */
  async settleAnswers(by: 'outcome' | 'deadline', requests: readonly ClaimedRequestRow[], outcomes: readonly RegistryOutcome[]): Promise<OutcomeReceipt[]> {
    const waiting = new Set<string>(sourceStates(by));
    const byId = new Map(requests.map((request) => [request.queue_message_id, request]));
    const receipts: OutcomeReceipt[] = [];
    const settlements: Settlement[] = [];
    const taken = new Set<string>();
    for (const outcome of outcomes) {
      const id = outcome.messageId.toLowerCase();
      const request = byId.get(id);
      const handler = request && OPERATION_HANDLERS[request.operation];
      if (!request || !handler || (outcome.ok && !(handler.expects in outcome))) {
        receipts.push('unknown');
        continue;
      }
      if (!waiting.has(request.state) || taken.has(id)) {
        receipts.push('duplicate');
        continue;
      }
      taken.add(id);
      settlements.push({ queueMessageId: id, operation: request.operation, callbackBase: request.callback_url, ...handler.result(request, outcome) });
      receipts.push('recorded');
    }
    // A span per answer recorded, in its request's trace: the result the clinic's result callback carries.
    const spans = tracer().enabled
      ? settlements.map((settlement) =>
          tracer().startSpan(`registry ${by}`, stageSpan(byId.get(settlement.queueMessageId)!, { 'ehr_gateway.state': settlement.state })),
        )
      : [];
    const settled = await settle(this.context.sql, by, settlements, this.callbacks).finally(() => {
      for (const span of spans) span.end();
    });
    this.onSettled(settled);
    // Moved on by another worker or answer in the meantime: a duplicate after all.
    return receipts.map((receipt, index) => (receipt === 'recorded' && !settled.moved.has(outcomes[index]!.messageId.toLowerCase()) ? 'duplicate' : receipt));
  }

  async storeFile(messageId: string, content: Buffer, signature: Buffer): Promise<boolean> {
    if (!isUuid(messageId)) return false;
    return (await this.context.sql.row(STORE_FILE, [messageId, content, signature])) !== undefined;
  }
}
