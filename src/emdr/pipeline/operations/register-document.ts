import type { OperationHandler } from './operation-handler.js';
import { registerDocumentAcceptance } from './register-document-checks.js';
import { withErrors, type RegisterMetadata } from '../lifecycle/requests.js';

/**
 * RegisterDocument through the lifecycle: accepted when its document and signatures check out,
 * submitted to the registry with its signatures (the registry pulls the document itself, so the
 * request keeps its files until the registry's answer), completed with the registry's emdrId.
 */
export const registerDocument: OperationHandler = {
  expects: 'registration',
  registryPullsDocument: true,

  accept(request, context) {
    return registerDocumentAcceptance(context, {
      queueMessageId: request.queue_message_id,
      clientId: request.client_id,
      intakeErrors: request.intake_errors,
      metadata: request.metadata as RegisterMetadata,
      document: request.document,
      documentSize: request.document_size,
      signatures: request.signatures_inline ? { signature: request.signature, personalSignatures: request.personal_signatures } : 'stored',
      duplicateLocalUid: request.duplicate_local_uid,
    });
  },

  acceptancePayload(request, { warnings }) {
    return {
      queueMessageId: request.queue_message_id,
      localUid: (request.metadata as RegisterMetadata).localUid,
      ...(warnings.length > 0 ? { warnings } : {}),
    };
  },

  submit(registry, request) {
    const metadata = request.metadata as RegisterMetadata;
    return registry.submitRegistration({
      messageId: request.queue_message_id,
      localUid: metadata.localUid,
      kind: metadata.kind,
      organization: metadata.organization,
      patientSnils: metadata.patientSnils,
      creationDateTime: metadata.creationDateTime,
      ...(metadata.documentNumber === undefined ? {} : { documentNumber: metadata.documentNumber }),
      ...(metadata.replaces === undefined ? {} : { replaces: metadata.replaces }),
      signature: request.signature ?? Buffer.alloc(0),
      ...(metadata.signatureChecksum === undefined ? {} : { signatureChecksum: metadata.signatureChecksum }),
      personalSignatures: request.personal_signatures ?? [],
    });
  },

  result(request, outcome) {
    const base = { queueMessageId: request.queue_message_id, localUid: (request.metadata as RegisterMetadata).localUid };
    if (outcome.ok && 'registration' in outcome) {
      const { emdrId, registrationDateTime, storeTillDate, registrationWarnings } = outcome.registration;
      const registrySaid = { ...(storeTillDate === undefined ? {} : { storeTillDate }), ...(registrationWarnings?.length ? { registrationWarnings } : {}) };
      return {
        state: 'completed',
        errors: [],
        emdrId,
        keepFiles: false,
        payload: { ...base, status: 'success', emdrId, registrationDateTime, ...registrySaid },
      };
    }
    const errors = outcome.ok ? [{ code: 'INTERNAL_ERROR' as const, message: 'the registry answered a registration with a file' }] : outcome.errors;
    return { state: 'failed', errors, keepFiles: false, payload: withErrors(base, errors) };
  },
};
