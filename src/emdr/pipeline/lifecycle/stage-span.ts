import type { SpanAttributes, SpanOptions } from '../../../tracing/tracing.js';
import type { ClaimedRequestRow } from './requests.js';

/**
 * A stage's span of one request: a consumer span continuing the trace of the request that stored
 * the row (its traceparent travels in the row, from the API process to this worker), with the
 * request's ids and the attempt's number, nothing of its content.
 */
export function stageSpan(
  request: Pick<ClaimedRequestRow, 'trace_parent' | 'queue_message_id' | 'operation' | 'claims'>,
  more: SpanAttributes = {},
): SpanOptions {
  return {
    kind: 'consumer',
    parent: request.trace_parent,
    attributes: {
      'ehr_gateway.queue_message_id': request.queue_message_id,
      'ehr_gateway.operation': request.operation,
      'ehr_gateway.claims': request.claims,
      ...more,
    },
  };
}
