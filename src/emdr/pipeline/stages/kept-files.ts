import { statement, type Queryable } from '../../../db/sql.js';
import type { KeptFile, KeptFiles } from '../../registry/port.js';
import { OPERATIONS, sourceStates, sqlList } from '../lifecycle/lifecycle.js';
import { OPERATION_HANDLERS } from '../operations/operations.js';
import { requestFileBase64Slices } from '../lifecycle/request-files.js';
import { isUuid } from '../../values/values.js';

/**
 * The documents the gateway keeps for the registry to pull (getDocumentFile): a registered
 * document's files stay with its request while the registry works on it, and go with its answer
 * (transitions.ts). A document whose request has ended is not served: the registry has it, or
 * refused it.
 */

const KEEPING = OPERATIONS.filter((operation) => OPERATION_HANDLERS[operation].registryPullsDocument);

/** The lookup of a kept document by its localUid (exported for the test of its plan). */
export const KEPT_DOCUMENT = statement(
  'emdr_kept_document',
  `select queue_message_id, octet_length(document) as document_size, coalesce(octet_length(signature), 0) as signature_size
     from emdr_requests
    where local_uid = $1 and state in (${sqlList(sourceStates('outcome'))}) and operation in (${sqlList(KEEPING)})
      and metadata->>'organization' = $2 and document is not null
    order by created_at desc limit 1`,
);

export class KeptFileStore implements KeptFiles {
  constructor(private readonly sql: Queryable) {}

  async find(localUid: string, organization: string): Promise<KeptFile | undefined> {
    if (!isUuid(localUid)) return undefined;
    const row = await this.sql.row<{ queue_message_id: string; document_size: number; signature_size: number }>(KEPT_DOCUMENT, [localUid, organization]);
    return row && { queueMessageId: row.queue_message_id, documentSize: row.document_size, signatureSize: row.signature_size };
  }

  base64Slices(file: KeptFile, which: 'document' | 'signature'): AsyncIterable<Buffer> {
    return requestFileBase64Slices(this.sql, file.queueMessageId, which, which === 'document' ? file.documentSize : file.signatureSize);
  }
}
