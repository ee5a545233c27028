import { statement, type Queryable } from '../../../db/sql.js';
import type { CallbackErrorItem } from '../../errors/codes.js';
import type { DocumentOwner } from '../../registry/port.js';

/**
 * Who may receive a registered document (DemandContent), as specs/openapi.yaml states it: a
 * document of one of the clinic's own organizations; another organization's document only when
 * the request names that document's patient. Everything else reads exactly as an unknown emdrId.
 */

/** Why a document may be delivered to a clinic; undefined: it may not. */
export type AccessBasis = 'own-organization' | 'all-organizations' | 'patient';

/** What the rule needs of a request: the clinic account's organizations (null: every one) and the SNILS it named (11 digits). */
export interface DocumentRequester {
  organizations: readonly string[] | null;
  patientSnils?: string;
}

/** The one answer for a document that is not there and for one the clinic may not have, so that emdrIds cannot be probed. */
export const NO_SUCH_ITEM: CallbackErrorItem = { code: 'REGISTRY_ITEM_NOT_FOUND', message: 'no registry item with this emdrId' };

export function accessBasis(document: DocumentOwner | undefined, requester: DocumentRequester): AccessBasis | undefined {
  if (!document) return undefined;
  if (requester.organizations === null) return 'all-organizations';
  if (requester.organizations.includes(document.organization)) return 'own-organization';
  if (requester.patientSnils !== undefined && requester.patientSnils === document.patientSnils) return 'patient';
  return undefined;
}

const RECORD_DISCLOSURE = statement(
  'emdr_record_disclosure',
  'insert into emdr_document_disclosures (client_id, queue_message_id, emdr_id, delivered_emdr_id, organization, basis) values ($1, $2, $3, $4, $5, $6)',
);

/**
 * Records a delivery of a document of an organization the account does not list (who, which
 * emdrId, when), in the transaction that commits the file to the clinic's callback. No personal
 * data: not the SNILS, not the file. (The registry stage records its deliveries in its settling
 * statement, pipeline/fulfil.ts.)
 */
export async function recordDisclosure(
  trx: Queryable,
  disclosure: {
    clientId: string;
    queueMessageId: string;
    emdrId: string;
    deliveredEmdrId: string;
    organization: string;
    basis: Exclude<AccessBasis, 'own-organization'>;
  },
): Promise<void> {
  await trx.run(RECORD_DISCLOSURE, [
    disclosure.clientId,
    disclosure.queueMessageId,
    disclosure.emdrId,
    disclosure.deliveredEmdrId,
    disclosure.organization,
    disclosure.basis,
  ]);
}
