import { randomBytes } from 'node:crypto';
import { isDatabaseUnavailable } from '../../db/database.js';
import { retryOnDeadlock, statement, type Sql } from '../../db/sql.js';
import { retryDelayMs } from '../../work/stage.js';
import { accessBasis, NO_SUCH_ITEM, recordDisclosure, type AccessBasis, type DocumentRequester } from '../access.js';
import type { CallbackErrorItem } from '../codes.js';
import type { RegistryPort } from '../registry/port.js';
import { snilsDigits } from './acceptance.js';
import { EXTEND_REQUESTS, RELEASE_REQUESTS } from './accept.js';
import { callbackUrl, claimRequests, RESULT_CALLBACK, type ClaimedRequestRow, withErrors, type CallbackName, type DemandMetadata, type PipelineContext, type RegisterMetadata } from './requests.js';

/**
 * The registry stage: a batch of accepted requests claimed in one statement, each registered (or its
 * document's current version fetched from the archive), then settled in one statement with its
 * result callback. The result callback waits until the acceptance callback is delivered: the
 * settling statement holds a share lock on the acceptance callbacks it reads, so a delivery
 * committing at that moment either is seen (the result is pending at once) or releases the result
 * after this commits (callbacks.ts).
 */

type ClaimedRequest = ClaimedRequestRow;

const CLAIM = claimRequests('emdr_claim_accepted', 'accepted', '');

const SETTLE = statement(
  'emdr_settle_accepted',
  `with input as (
     select * from unnest($1::uuid[], $2::text[], $3::text[], $4::jsonb[], $5::bool[], $6::text[], $7::text[], $8::text[], $9::jsonb[], $10::text[], $11::text[], $12::text[], $13::text[])
         as t(queue_message_id, state, emdr_id, errors, withheld, callback_id, callback_name, callback_url, payload, disclosed_emdr_id, delivered_emdr_id, disclosed_organization, disclosure_basis)
   ),
   acceptance as (
     -- Locked in id order, as the delivery stage locks callbacks (callbacks.ts): no deadlock between the two.
     select c.queue_message_id, c.state from emdr_callbacks c join input i using (queue_message_id) where c.sequence = 1 order by c.id for share of c
   ),
   updated as (
     update emdr_requests r
        set state = i.state, emdr_id = i.emdr_id, errors = i.errors,
            -- A registered document's files are the registry's now; a file the clinic may not have leaves no copy behind.
            document = case when i.withheld or r.operation = 'RegisterDocument' then null else r.document end,
            signature = case when i.withheld or r.operation = 'RegisterDocument' then null else r.signature end,
            personal_signatures = case when r.operation = 'RegisterDocument' then null else r.personal_signatures end,
            available_at = now(), updated_at = now()
       from input i where r.queue_message_id = i.queue_message_id and r.state = 'accepted'
     returning r.queue_message_id, r.client_id
   ),
   disclosures as (
     insert into emdr_document_disclosures (client_id, queue_message_id, emdr_id, delivered_emdr_id, organization, basis)
     select u.client_id, u.queue_message_id, i.disclosed_emdr_id, i.delivered_emdr_id, i.disclosed_organization, i.disclosure_basis
       from updated u join input i using (queue_message_id) where i.disclosure_basis is not null
   )
   insert into emdr_callbacks (id, queue_message_id, name, sequence, url, payload, state)
   select i.callback_id, i.queue_message_id, i.callback_name, 2, i.callback_url, i.payload, case when a.state = 'delivered' then 'pending' else 'waiting' end
     from input i join updated u using (queue_message_id) left join acceptance a using (queue_message_id)
   on conflict (queue_message_id, sequence) do nothing
   returning state`,
);

/** A delivery of another organization's document, to record (access.ts). */
export interface Disclosure {
  emdrId: string;
  deliveredEmdrId: string;
  organization: string;
  basis: Exclude<AccessBasis, 'own-organization'>;
}

export interface FulfilResult {
  state: 'completed' | 'failed';
  emdrId?: string;
  errors: CallbackErrorItem[];
  name: CallbackName;
  payload: Record<string, unknown>;
  /** The archive's file was copied into the request row but may not go to this clinic. */
  withheld?: boolean;
  disclosure?: Disclosure;
}

async function registration(registry: RegistryPort, queueMessageId: string, metadata: RegisterMetadata): Promise<FulfilResult> {
  const outcome = await registry.register({
    requestKey: queueMessageId,
    localUid: metadata.localUid,
    kind: metadata.kind,
    organization: metadata.organization,
    patientSnils: snilsDigits(metadata.patientSnils),
    documentNumber: metadata.documentNumber,
    creationDateTime: metadata.creationDateTime,
    replaces: metadata.replaces,
  });
  const base = { queueMessageId, localUid: metadata.localUid };
  const name = RESULT_CALLBACK.RegisterDocument;
  if (!outcome.ok) return { state: 'failed', errors: outcome.errors, name, payload: withErrors(base, outcome.errors) };
  return {
    state: 'completed',
    emdrId: outcome.emdrId,
    errors: [],
    name,
    payload: { ...base, status: 'success', emdrId: outcome.emdrId, registrationDateTime: outcome.registrationDateTime },
  };
}

/**
 * The current version from the archive, which stores its files in the request row (the callback body is built from
 * them at each attempt). The access rule is checked again on the version fetched: a newer version registered since
 * acceptance may be another patient's.
 */
export async function documentFile(registry: RegistryPort, queueMessageId: string, metadata: DemandMetadata, requester: DocumentRequester): Promise<FulfilResult> {
  const outcome = await registry.fetchCurrentVersion(metadata.emdrId, queueMessageId);
  const base = { queueMessageId, clientMessageId: metadata.clientMessageId, emdrId: metadata.emdrId };
  const name = RESULT_CALLBACK.DemandContent;
  if (!outcome.ok) return { state: 'failed', errors: outcome.errors, name, payload: withErrors(base, outcome.errors) };
  const { file } = outcome;
  const basis = accessBasis(file, requester);
  if (!basis) return { state: 'failed', errors: [NO_SUCH_ITEM], name, payload: withErrors(base, [NO_SUCH_ITEM]), withheld: true };
  return {
    state: 'completed',
    emdrId: metadata.emdrId,
    errors: [],
    name,
    payload: { ...base, status: 'success', document: { localUid: file.localUid, kind: file.kind, version: file.version, fileName: file.fileName } },
    ...(basis === 'own-organization' ? {} : { disclosure: { emdrId: metadata.emdrId, deliveredEmdrId: file.emdrId, organization: file.organization, basis } }),
  };
}

export const requesterOf = (organizations: readonly string[] | null, metadata: DemandMetadata): DocumentRequester => ({
  organizations,
  ...(metadata.patientSnils === undefined ? {} : { patientSnils: metadata.patientSnils }),
});

export class FulfilmentStage {
  constructor(private readonly context: PipelineContext) {}

  readonly claim = (limit: number): Promise<ClaimedRequest[]> => this.context.sql.rows<ClaimedRequest>(CLAIM, [limit, this.context.leaseMs]);

  readonly extend = (batch: ClaimedRequest[]) => this.context.sql.run(EXTEND_REQUESTS, [batch.map((request) => request.queue_message_id), this.context.leaseMs, 'accepted']);

  private resultOf(request: ClaimedRequest): Promise<FulfilResult> {
    const { registry } = this.context;
    if (request.operation === 'RegisterDocument') return registration(registry, request.queue_message_id, request.metadata as RegisterMetadata);
    const metadata = request.metadata as DemandMetadata;
    return documentFile(registry, request.queue_message_id, metadata, requesterOf(request.organizations, metadata));
  }

  /** Registers (or fetches) the batch; settles what came back, and puts back (for a later try) what the registry could not do now. Returns how many result callbacks are pending at once. */
  readonly process = async (batch: ClaimedRequest[]): Promise<number> => {
    const results: Array<{ request: ClaimedRequest; result: FulfilResult }> = [];
    await Promise.all(
      batch.map(async (request) => {
        try {
          results.push({ request, result: await this.resultOf(request) });
        } catch (error) {
          // The registry is unavailable (a thrown error, port.ts): the request waits and tries again.
          this.context.logger.error({ err: error, queueMessageId: request.queue_message_id }, 'registry step failed; trying again later');
          await this.context.sql.run(RELEASE_REQUESTS, [[request.queue_message_id], retryDelayMs(request.claims, this.context.leaseMs)]);
        }
      }),
    );
    if (results.length === 0) return 0;
    const settled = await settleFulfilled(this.context.sql, results);
    return settled.filter((row) => row.state === 'pending').length;
  };
}

function settleFulfilled(sql: Sql, results: ReadonlyArray<{ request: ClaimedRequest; result: FulfilResult }>): Promise<Array<{ state: string }>> {
  const columns: unknown[][] = Array.from({ length: 13 }, () => []);
  for (const { request, result } of results) {
    const values = [
      request.queue_message_id,
      result.state,
      result.emdrId ?? null,
      result.errors.length > 0 ? JSON.stringify(result.errors) : null,
      result.withheld ?? false,
      `msg_${randomBytes(16).toString('hex')}`,
      result.name,
      callbackUrl(request.callback_url, result.name),
      JSON.stringify(result.payload),
      result.disclosure?.emdrId ?? null,
      result.disclosure?.deliveredEmdrId ?? null,
      result.disclosure?.organization ?? null,
      result.disclosure?.basis ?? null,
    ];
    values.forEach((value, index) => columns[index]!.push(value));
  }
  return retryOnDeadlock(() => sql.rows<{ state: string }>(SETTLE, columns));
}

const DROPPED_FILE_REQUEST = statement(
  'emdr_dropped_file_request',
  `select r.client_id, r.metadata, k.organizations,
          (select c.id from emdr_callbacks c where c.queue_message_id = r.queue_message_id and c.sequence = 2 and c.state in ('failed', 'waiting')) as file_callback_id
     from emdr_requests r join emdr_clients k on k.id = r.client_id
    where r.queue_message_id = $1 and r.operation = 'DemandContent' and r.state = 'completed' and r.document is null`,
);
const DROP_FILES = statement('emdr_drop_request_files', 'update emdr_requests set document = null, signature = null where queue_message_id = $1');
const SET_PAYLOAD = statement('emdr_set_callback_payload', 'update emdr_callbacks set payload = $2 where id = $1');

/**
 * Before `callbacks replay`: when the file callback of a DemandContent is to be sent again after the
 * request's copy of the file was dropped (retention.ts), the current version is fetched from the
 * archive again, under the same access rule, and the callback names the version fetched. Throws
 * when the clinic may not have the document any more.
 */
export async function refetchDroppedFile(sql: Sql, registry: RegistryPort, queueMessageId: string): Promise<void> {
  const request = await sql.row<{ client_id: string; metadata: DemandMetadata; organizations: string[] | null; file_callback_id: string | null }>(DROPPED_FILE_REQUEST, [queueMessageId]);
  if (!request?.file_callback_id) return;
  let result: FulfilResult;
  try {
    result = await documentFile(registry, queueMessageId, request.metadata, requesterOf(request.organizations, request.metadata));
  } catch (error) {
    // A thrown error of the port means the registry or archive is unavailable (port.ts); the database's own unavailability stays what it is.
    throw isDatabaseUnavailable(error) ? error : new RegistryUnavailableError(error);
  }
  await sql.transaction(async (trx) => {
    if (result.withheld || result.state !== 'completed') {
      await trx.run(DROP_FILES, [queueMessageId]);
      return;
    }
    await trx.run(SET_PAYLOAD, [request.file_callback_id, JSON.stringify(result.payload)]);
    if (result.disclosure) await recordDisclosure(trx, { clientId: request.client_id, queueMessageId, ...result.disclosure });
  });
  if (result.state !== 'completed') throw new FileGoneError(queueMessageId, result.errors);
}

/** The registry or the archive could not be reached to fetch a dropped file again: try later. */
export class RegistryUnavailableError extends Error {
  constructor(cause: unknown) {
    super('the registry could not be reached to fetch the document again', { cause });
    this.name = 'RegistryUnavailableError';
  }
}

/** The document of a DemandContent whose copy was dropped can no longer be fetched for its clinic (the registry's errors say why). */
export class FileGoneError extends Error {
  constructor(
    queueMessageId: string,
    readonly errors: readonly CallbackErrorItem[],
  ) {
    super(`the document of request ${queueMessageId} cannot be fetched for this clinic again: ${errors.map((error) => error.code).join(', ')}`);
    this.name = 'FileGoneError';
  }
}
