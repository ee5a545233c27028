import type PgBoss from 'pg-boss';
import type { Knex } from 'knex';
import type { Logger } from '../logging/logger.js';
import { deliverCallback, enqueueCallback, type CallbackName, type DeliveryContext } from '../callbacks/delivery.js';
import { callbackCredentialsOf } from './clients.js';
import { snilsChecksumValid, snilsDigits } from './acceptance.js';
import { instantMs } from './instant.js';
import type { CallbackErrorItem } from './codes.js';
import { accessBasis, NO_SUCH_ITEM, recordDisclosure, type DocumentRequester } from './access.js';
import { requestFileSlices } from './request-files.js';
import { dropSettledFiles } from './retention.js';
import { MAX_XML_DEPTH, xmlDocumentError } from './xml-check.js';
import type { SignatureCheckOutcome, SignatureVerifier } from './signatures/verifier.js';
import { QUEUES, jobExecutor, type CallbackJob, type RequestJob } from './queue.js';
import type { RegistryPort } from './registry/port.js';

export interface PipelineContext {
  knex: Knex;
  boss: PgBoss;
  registry: RegistryPort;
  retryScheduleMs: readonly number[];
  logger: Logger;
  /** Opens the clinics' callback secrets. */
  dataKey: Buffer;
  /** Time budget of the XML check of one document (XML_CHECK_TIMEOUT). */
  xmlCheckTimeoutMs: number;
  /** Verifies the signatures of a RegisterDocument (signatures/verifier.ts). */
  signatureVerifier: SignatureVerifier;
}

/** What the request row keeps besides the files (`metadata`). */
export interface RegisterMetadata {
  localUid: string;
  kind: string;
  organization: string;
  patientSnils: string;
  creationDateTime: string;
  documentNumber?: string;
  replaces?: string;
}

export interface DemandMetadata {
  emdrId: string;
  clientMessageId: string;
  /** 11 digits: the patient the clinic names for another organization's document. */
  patientSnils?: string;
}

interface RequestRow {
  queue_message_id: string;
  client_id: string;
  operation: 'RegisterDocument' | 'DemandContent';
  state: string;
  callback_url: string;
  local_uid: string | null;
  metadata: RegisterMetadata | DemandMetadata;
  intake_errors: CallbackErrorItem[] | null;
  created_at: Date;
}

/** The columns of RequestRow: never the files, which are read in slices or copied in SQL where needed. */
const REQUEST_COLUMNS = ['queue_message_id', 'client_id', 'operation', 'state', 'callback_url', 'local_uid', 'metadata', 'intake_errors', 'created_at'] as const;

const ACCEPTANCE_CALLBACK: Record<RequestRow['operation'], CallbackName> = {
  RegisterDocument: 'SendRegisterDocumentResponse',
  DemandContent: 'SendDemandContentResponse',
};

function withErrors(payload: Record<string, unknown>, errors: CallbackErrorItem[]): Record<string, unknown> {
  return errors.length > 0 ? { ...payload, status: 'error', errors } : { ...payload, status: 'success' };
}

/** The clinic account's organizations and the SNILS the DemandContent request named. */
async function requesterOf(knex: Knex, request: RequestRow): Promise<DocumentRequester> {
  const clinic = await knex('emdr_clients').where({ id: request.client_id }).first('organizations');
  const { patientSnils } = request.metadata as DemandMetadata;
  return { organizations: clinic.organizations, ...(patientSnils === undefined ? {} : { patientSnils }) };
}

interface AcceptanceFindings {
  errors: CallbackErrorItem[];
  warnings: CallbackErrorItem[];
}

/** The organization's signature and each personal one, named as in the request, verified over the document as it streams from the database. */
async function verifyRequestSignatures(context: PipelineContext, queueMessageId: string): Promise<SignatureCheckOutcome> {
  const files = await context.knex('emdr_requests').where({ queue_message_id: queueMessageId }).first('signature', 'personal_signatures');
  const personal = (files.personal_signatures ?? []) as Array<{ signature: string }>;
  const signatures = [
    { name: 'signature', bytes: files.signature as Buffer },
    ...personal.map((item, index) => ({ name: `personalSignatures/${index}/signature`, bytes: Buffer.from(item.signature, 'base64') })),
  ];
  return context.signatureVerifier.check(signatures, () => requestFileSlices(context.knex, queueMessageId, 'document'));
}

async function registerDocumentAcceptanceFindings(context: PipelineContext, request: RequestRow): Promise<AcceptanceFindings> {
  const { knex } = context;
  if (request.intake_errors && request.intake_errors.length > 0) return { errors: request.intake_errors, warnings: [] };
  const errors: CallbackErrorItem[] = [];
  const [xmlError, signatures] = await Promise.all([
    xmlDocumentError(requestFileSlices(knex, request.queue_message_id, 'document'), { maxDepth: MAX_XML_DEPTH, timeoutMs: context.xmlCheckTimeoutMs }),
    verifyRequestSignatures(context, request.queue_message_id),
  ]);
  if (xmlError !== undefined) errors.push({ code: 'XML_VALIDATION_ERROR', message: xmlError.slice(0, 300) });
  errors.push(...signatures.errors);
  const metadata = request.metadata as RegisterMetadata;
  if (!snilsChecksumValid(metadata.patientSnils)) errors.push({ code: 'VALIDATION_ERROR', message: 'patientSnils: the check number does not match' });
  if (instantMs(metadata.creationDateTime) > Date.now()) errors.push({ code: 'WRONG_CREATION_DATE', message: 'creationDateTime lies in the future' });
  // The earliest request with a localUid wins; later ones with another body are duplicates.
  const earlier = await knex('emdr_requests')
    .where({ client_id: request.client_id, operation: 'RegisterDocument', local_uid: request.local_uid })
    .whereNot({ queue_message_id: request.queue_message_id })
    .whereNot({ state: 'rejected' })
    .where((query) =>
      query.where('created_at', '<', request.created_at).orWhere((tie) => tie.where('created_at', request.created_at).where('queue_message_id', '<', request.queue_message_id)),
    )
    .first('queue_message_id');
  if (earlier) errors.push({ code: 'NOT_UNIQUE_PROVIDED_ID', message: 'a document with this localUid was already submitted by this clinic' });
  return { errors, warnings: signatures.warnings };
}

/** Acceptance: the checks, then the acceptance callback and (when accepted) the registry job, in one transaction. */
export async function acceptRequest(context: PipelineContext, queueMessageId: string): Promise<void> {
  const { knex, boss, registry, retryScheduleMs } = context;
  const request = (await knex('emdr_requests').where({ queue_message_id: queueMessageId }).first(REQUEST_COLUMNS)) as RequestRow | undefined;
  if (!request || request.state !== 'received') return;

  let errors: CallbackErrorItem[];
  let payload: Record<string, unknown>;
  if (request.operation === 'RegisterDocument') {
    const findings = await registerDocumentAcceptanceFindings(context, request);
    errors = findings.errors;
    payload = { queueMessageId, localUid: (request.metadata as RegisterMetadata).localUid, ...(findings.warnings.length > 0 ? { warnings: findings.warnings } : {}) };
  } else {
    const metadata = request.metadata as DemandMetadata;
    // A document the clinic may not have is answered as one that does not exist (access.ts).
    const basis = accessBasis(await registry.currentVersionOwner(metadata.emdrId), await requesterOf(knex, request));
    errors = basis ? [] : [NO_SUCH_ITEM];
    payload = { queueMessageId, clientMessageId: metadata.clientMessageId, emdrId: metadata.emdrId };
  }

  await knex.transaction(async (trx) => {
    const updated = await trx('emdr_requests')
      .where({ queue_message_id: queueMessageId, state: 'received' })
      .update({ state: errors.length > 0 ? 'rejected' : 'accepted', errors: errors.length > 0 ? JSON.stringify(errors) : null, updated_at: trx.fn.now() });
    if (updated === 0) return;
    await enqueueCallback(trx, boss, retryScheduleMs, {
      queueMessageId,
      name: ACCEPTANCE_CALLBACK[request.operation],
      sequence: 1,
      baseUrl: request.callback_url,
      payload: withErrors(payload, errors),
    });
    if (errors.length === 0) {
      const job: RequestJob = { queueMessageId };
      await boss.send(QUEUES.fulfil, job as unknown as object, { db: await jobExecutor(trx) });
    }
  });
}

/** The registry step: registration, or the current version from the archive; then the result callback. */
export async function fulfilRequest(context: PipelineContext, queueMessageId: string): Promise<void> {
  const { knex, boss, registry, retryScheduleMs } = context;
  const request = (await knex('emdr_requests').where({ queue_message_id: queueMessageId }).first(REQUEST_COLUMNS)) as RequestRow | undefined;
  if (!request || request.state !== 'accepted') return;

  let result: FulfilResult;
  if (request.operation === 'RegisterDocument') result = await registration(registry, queueMessageId, request.metadata as RegisterMetadata);
  else result = await documentFile(registry, queueMessageId, request.metadata as DemandMetadata, await requesterOf(knex, request));

  await knex.transaction(async (trx) => {
    const locked = await trx('emdr_requests').where({ queue_message_id: queueMessageId }).forUpdate().first('state');
    if (locked.state !== 'accepted') return;
    await trx('emdr_requests')
      .where({ queue_message_id: queueMessageId })
      .update({
        state: result.state,
        emdr_id: result.emdrId ?? null,
        errors: result.errors.length > 0 ? JSON.stringify(result.errors) : null,
        // A file the clinic may not have leaves no copy behind.
        ...(result.withheld ? { document: null, signature: null } : {}),
        updated_at: trx.fn.now(),
      });
    if (result.disclosure) await recordDisclosure(trx, { clientId: request.client_id, queueMessageId, ...result.disclosure });
    await enqueueCallback(trx, boss, retryScheduleMs, { queueMessageId, name: result.name, sequence: 2, baseUrl: request.callback_url, payload: result.payload });
  });
}

interface FulfilResult {
  state: 'completed' | 'failed';
  emdrId?: string;
  errors: CallbackErrorItem[];
  name: CallbackName;
  payload: Record<string, unknown>;
  /** The archive's file was copied into the request row but may not go to this clinic. */
  withheld?: boolean;
  /** A delivery to record (access.ts). */
  disclosure?: Omit<Parameters<typeof recordDisclosure>[1], 'clientId' | 'queueMessageId'>;
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
  const name = 'SendRegisterDocumentResultResponse';
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
async function documentFile(registry: RegistryPort, queueMessageId: string, metadata: DemandMetadata, requester: DocumentRequester): Promise<FulfilResult> {
  const outcome = await registry.fetchCurrentVersion(metadata.emdrId, queueMessageId);
  const base = { queueMessageId, clientMessageId: metadata.clientMessageId, emdrId: metadata.emdrId };
  const name = 'SendDocumentFileResultResponse';
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

/**
 * Before `callbacks replay`: when the file callback of a DemandContent is to be sent again after the
 * request's copy of the file was dropped (retention.ts), the current version is fetched from the
 * archive again, under the same access rule, and the callback names the version fetched. Throws
 * when the clinic may not have the document any more.
 */
export async function refetchDroppedFile(knex: Knex, registry: RegistryPort, queueMessageId: string): Promise<void> {
  const request = (await knex('emdr_requests')
    .where({ queue_message_id: queueMessageId, operation: 'DemandContent', state: 'completed' })
    .whereNull('document')
    .first(REQUEST_COLUMNS)) as RequestRow | undefined;
  const fileCallback = request && (await knex('emdr_callbacks').where({ queue_message_id: queueMessageId, sequence: 2 }).whereIn('state', ['failed', 'waiting']).first('id'));
  if (!request || !fileCallback) return;
  const result = await documentFile(registry, queueMessageId, request.metadata as DemandMetadata, await requesterOf(knex, request));
  await knex.transaction(async (trx) => {
    if (result.withheld || result.state !== 'completed') {
      await trx('emdr_requests').where({ queue_message_id: queueMessageId }).update({ document: null, signature: null });
      return;
    }
    await trx('emdr_callbacks').where({ id: fileCallback.id }).update({ payload: result.payload });
    if (result.disclosure) await recordDisclosure(trx, { clientId: request.client_id, queueMessageId, ...result.disclosure });
  });
  if (result.state !== 'completed') throw new Error(`the document of request ${queueMessageId} cannot be fetched for this clinic again: ${result.errors.map((error) => error.code).join(', ')}`);
}

/** How many jobs of each queue one worker process runs at once. */
const CONCURRENCY = { [QUEUES.accept]: 2, [QUEUES.fulfil]: 2, [QUEUES.callback]: 4 } as const;
/** Acceptance jobs one worker process runs at once: the signature verifier's pool size. */
export const ACCEPT_CONCURRENCY = CONCURRENCY[QUEUES.accept];

/** Subscribes the worker role to the three queues. */
export async function startWorkers(context: PipelineContext): Promise<void> {
  const { boss, logger } = context;
  const options = { batchSize: 1, pollingIntervalSeconds: 0.5 };
  const run = async (name: string, work: () => Promise<void>) => {
    try {
      await work();
    } catch (error) {
      logger.error({ err: error, queue: name }, 'job failed; pg-boss retries it');
      throw error;
    }
  };
  for (let i = 0; i < CONCURRENCY[QUEUES.accept]; i += 1) {
    await boss.work<RequestJob>(QUEUES.accept, options, async ([job]) => run(QUEUES.accept, () => acceptRequest(context, job!.data.queueMessageId)));
  }
  for (let i = 0; i < CONCURRENCY[QUEUES.fulfil]; i += 1) {
    await boss.work<RequestJob>(QUEUES.fulfil, options, async ([job]) => run(QUEUES.fulfil, () => fulfilRequest(context, job!.data.queueMessageId)));
  }
  const delivery: DeliveryContext = {
    ...context,
    credentialsOf: (queueMessageId) => callbackCredentialsOf(context.knex, context.dataKey, queueMessageId),
    // Once no callback of the request is left to send, its copy of the files goes (retention.ts).
    onSettled: async (trx, queueMessageId) => void (await dropSettledFiles(trx, { queueMessageId })),
  };
  for (let i = 0; i < CONCURRENCY[QUEUES.callback]; i += 1) {
    await boss.work<CallbackJob>(QUEUES.callback, options, async ([job]) => run(QUEUES.callback, () => deliverCallback(delivery, job!.data.callbackId)));
  }
}
