import { accessBasis, NO_SUCH_ITEM, type DocumentRequester } from '../lifecycle/document-access.js';
import type { ClaimedRequestRow, DemandMetadata } from '../lifecycle/requests.js';
import type { OperationHandler } from './operation-handler.js';
import { withErrors } from '../lifecycle/requests.js';

/** Who asks for a document: the clinic account's organizations and the SNILS its request named. */
export const requesterOf = (request: ClaimedRequestRow): DocumentRequester => {
  const metadata = request.metadata as DemandMetadata;
  return { organizations: request.organizations, ...(metadata.patientSnils === undefined ? {} : { patientSnils: metadata.patientSnils }) };
};

/**
 * DemandContent through the lifecycle: accepted when the clinic may have the document (access.ts; a
 * document it may not have reads as one that does not exist), submitted to the registry, completed
 * when the archive's file arrives and the clinic may still have that version (a newer version
 * registered since acceptance may be another patient's). The file stays with the request until
 * its file callback is delivered.
 */
export const demandContent: OperationHandler = {
  expects: 'file',
  registryPullsDocument: false,

  async accept(request, context) {
    const owner = await context.registry.currentVersionOwner((request.metadata as DemandMetadata).emdrId);
    return { errors: accessBasis(owner, requesterOf(request)) ? [] : [NO_SUCH_ITEM], warnings: [] };
  },

  acceptancePayload(request) {
    const metadata = request.metadata as DemandMetadata;
    return { queueMessageId: request.queue_message_id, clientMessageId: metadata.clientMessageId, emdrId: metadata.emdrId };
  },

  submit(registry, request) {
    return registry.submitDemand({ messageId: request.queue_message_id, emdrId: (request.metadata as DemandMetadata).emdrId });
  },

  result(request, outcome) {
    const metadata = request.metadata as DemandMetadata;
    const base = { queueMessageId: request.queue_message_id, clientMessageId: metadata.clientMessageId, emdrId: metadata.emdrId };
    const failed = (errors: (typeof NO_SUCH_ITEM)[]) => ({ state: 'failed' as const, errors, keepFiles: false, payload: withErrors(base, errors) });
    if (!outcome.ok) return failed(outcome.errors);
    if (!('file' in outcome)) return failed([{ code: 'INTERNAL_ERROR', message: 'the registry answered a demand with a registration' }]);
    const { file } = outcome;
    const basis = accessBasis(file, requesterOf(request));
    if (!basis) return failed([NO_SUCH_ITEM]);
    return {
      state: 'completed',
      errors: [],
      emdrId: metadata.emdrId,
      keepFiles: true,
      payload: { ...base, status: 'success', document: { localUid: file.localUid, kind: file.kind, version: file.version, fileName: file.fileName } },
      ...(basis === 'own-organization'
        ? {}
        : { disclosure: { emdrId: metadata.emdrId, deliveredEmdrId: file.emdrId, organization: file.organization, basis } }),
    };
  },
};
