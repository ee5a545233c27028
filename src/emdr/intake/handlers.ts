import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { components } from '../../../generated/emdr-api.js';
import { statement, type Sql } from '../../db/sql.js';
import type { Notification } from '../../db/notify.js';
import { AuditTrail, clientColumns } from '../../audit/trail.js';
import { currentRequest } from '../../logging/request-context.js';
import { tracer } from '../../tracing/tracing.js';
import { streamedBytes } from '../../memory/garbage.js';
import { decodeBase64Strict, isStrictBase64, snilsDigits } from '../values/values.js';
import { DECODED_MEMBER_BYTES } from './body/base64-member.js';
import { bodyHash } from './body/body-hash.js';
import { authenticateClinic, type ClinicAccount } from '../accounts/clients.js';
import type { CallbackErrorItem } from '../errors/codes.js';
import { ApiError } from '../errors/errors.js';
import type { OperationHandler, OperationRequest, SecurityHandler } from './router.js';
import { messageState } from '../pipeline/lifecycle/messages.js';
import type { DemandMetadata, RegisterMetadata } from '../pipeline/lifecycle/requests.js';
import { RegistryUnavailableError, type RegistryPort } from '../registry/port.js';

type RegisterDocumentRequest = components['schemas']['RegisterDocumentRequest'];
type RegisterDocumentAcknowledgement = components['schemas']['RegisterDocumentAcknowledgement'];
type DemandContentRequest = components['schemas']['DemandContentRequest'];
type DemandContentAcknowledgement = components['schemas']['DemandContentAcknowledgement'];
type SearchRegistryItemRequest = components['schemas']['SearchRegistryItemRequest'];
type SearchRegistryItemResponse = components['schemas']['SearchRegistryItemResponse'];
type GetRegistryItemRequest = components['schemas']['GetRegistryItemRequest'];
type GetRegistryItemResponse = components['schemas']['GetRegistryItemResponse'];

export interface EmdrHandlerDependencies {
  sql: Sql;
  registry: RegistryPort;
  /** Called once a request is stored (unless its statement sent notificationWithStore's): the acceptance stage has work of the clinic (its emdr_clients id), in this process and in the other workers'. */
  requestStored(clinic: string): void;
  /** The workers' wake-up for the storing statement to send with its commit, when one would go now (db/notify.ts, takeTurn); none when the workers run in this process. */
  notificationWithStore?(): Notification | undefined;
  /** The audit trail's writer for what changes nothing (a search, a retry, a refusal); by default one of its own on `sql`. */
  audit?: AuditTrail;
}

const SEARCH_LIMIT = 100;
/** Seconds a clinic is told to wait when the registry cannot be reached for a search. */
const REGISTRY_RETRY_AFTER_SECONDS = 30;

function header(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name.toLowerCase()];
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

/**
 * The three headers as the OpenAPI security schemes BusinessId, User and Token, required together.
 * Token does the lookup (all three headers); the other two only check presence.
 */
export function clinicSecurityHandlers(sql: Sql): Record<string, SecurityHandler> {
  return {
    BusinessId: async (request) => header(request, 'businessId') !== undefined,
    User: async (request) => header(request, 'user') !== undefined,
    Token: async (request) => {
      const businessId = header(request, 'businessId');
      const user = header(request, 'user');
      const token = header(request, 'token');
      if (businessId === undefined || user === undefined || token === undefined) return false;
      return (await authenticateClinic(sql, businessId, user, token)) ?? false;
    },
  };
}

/** A new request row: the acceptance stage picks it up (state received). */
interface NewRequest {
  clientId: number;
  operation: 'RegisterDocument' | 'DemandContent';
  idempotencyKey: string | null;
  bodyHash: string;
  callbackUrl: string;
  localUid: string | null;
  clientMessageId: string | null;
  metadata: RegisterMetadata | DemandMetadata;
  /** The document's base64 (strict) as ASCII bytes, or null. */
  document: Buffer | null;
  /** The document's bytes when they were decoded at intake (base64-member.ts), else decoded on storing. */
  decodedDocument?: Buffer;
  /** The signature's bytes (decoded from strict base64 at intake), or null. */
  signature: Buffer | null;
  personalSignatures: string | null;
  intakeErrors: CallbackErrorItem[] | null;
  /** The gateway's id of the request (its audit rows'). */
  requestId: string;
  /** The client's own x-request-id, when it sent one: its callbacks carry it (else requestId). */
  clientRequestId: string | null;
  /** The clinic's businessId, for the audit row. */
  businessId: string;
}

/**
 * One statement: the identical retry hits the unique key (clinic, operation, idempotency key, body
 * hash) and inserts nothing. The files go as binary (bytea) parameters, decoded here (Node's decoder
 * costs a fraction of PostgreSQL's decode(), and a quarter fewer bytes cross the connection); a
 * document over STAGED_DOCUMENT_BYTES of base64 goes in decoded chunks (insertStaged).
 */
const INSERT_REQUEST_TEXT = (document: string) =>
  `with inserted as (
     insert into emdr_requests (queue_message_id, client_id, operation, idempotency_key, body_hash, state, callback_url, local_uid, client_message_id, metadata,
                                document, signature, personal_signatures, intake_errors, request_id, client_request_id, trace_parent)
     values ($1, $2, $3, $4, $5, 'received', $6, $7, $8, $9, ${document}, $11::bytea, $12, $13, $14, $16, $18)
     on conflict (client_id, operation, idempotency_key, body_hash) do nothing
     returning queue_message_id, metadata
   ),
   -- The audit row of the registry request, with it (src/audit/trail.ts).
   audited as (
     insert into audit_events (request_id, business_id, action, emdr_id, queue_message_id, outcome, client_address, client_request_id)
     select $14, $15, $3, metadata->>'emdrId', queue_message_id, 'ok', $17, $16 from inserted
   ),
   -- The workers' wake-up with this commit when it is the first after a quiet spell ($19, $20; null: none), in place of a statement of its own (db/notify.ts).
   notified as (
     select pg_notify($19, $20) from inserted where $19::text is not null
   )
   -- The metadata is the caller's own: not sent back (a jsonb to print and parse per acknowledgement).
   select queue_message_id, (select count(*) from notified)::int as notified from inserted`;
const INSERT_REQUEST = statement('emdr_insert_request', INSERT_REQUEST_TEXT('$10::bytea'));
/**
 * A large document goes to PostgreSQL a chunk at a time (STAGED_CHUNK_BYTES of its base64, decoded
 * here, into a temporary table of the connection) and is joined there: node-postgres copies a
 * parameter whole into its outgoing message, so one parameter would be one more copy of the document
 * and one long stretch of the event loop while it is built and written; a chunk is a few
 * milliseconds, and other requests are served between chunks (each waits for its insert). The
 * chunks are stored uncompressed (storage external): pglz would compress each only for the join to
 * decompress it a moment later (emdr_requests.document is external too).
 */
const STAGED_DOCUMENT_BYTES = DECODED_MEMBER_BYTES;
const STAGED_CHUNK_BYTES = 1024 * 1024;
const CREATE_STAGING = statement(
  'emdr_create_upload_chunks',
  'create temporary table if not exists emdr_upload_chunks (n integer not null, chunk bytea storage external not null) on commit delete rows',
);
const STAGE_CHUNK = statement('emdr_stage_upload_chunk', 'insert into emdr_upload_chunks (n, chunk) values ($1, $2)');
const INSERT_STAGED_REQUEST = statement(
  'emdr_insert_staged_request',
  INSERT_REQUEST_TEXT(`(select string_agg(chunk, ''::bytea order by n) from emdr_upload_chunks where $10::bytea is null)`),
);

const EXISTING_REQUEST = statement(
  'emdr_existing_request',
  `select queue_message_id, metadata from emdr_requests where client_id = $1 and operation = $2 and idempotency_key = $3 and body_hash = $4`,
);

/** The INSERT_REQUEST values of a request: the document's bytes (decoded) tenth, or null for a staged one; the notification to send with it last. */
function requestValues(request: NewRequest, document: Buffer | null, notification: Notification | undefined): unknown[] {
  return [
    randomUUID(),
    request.clientId,
    request.operation,
    request.idempotencyKey,
    request.bodyHash,
    request.callbackUrl,
    request.localUid,
    request.clientMessageId,
    JSON.stringify(request.metadata),
    document,
    request.signature,
    request.personalSignatures,
    request.intakeErrors === null ? null : JSON.stringify(request.intakeErrors),
    request.requestId,
    request.businessId,
    request.clientRequestId,
    clientColumns()[0],
    // The workers' spans of this request continue its trace from here (null when tracing is off).
    tracer().traceparent() ?? null,
    notification?.channel ?? null,
    notification?.payload ?? null,
  ];
}

type Stored = { queue_message_id: string; metadata: Record<string, unknown> };
type Inserted = Pick<Stored, 'queue_message_id'> & { notified: number };

/**
 * Base64 text of a multiple of 4 characters read as text this much at a time: a string of up to
 * ~128 KiB is made in V8's young generation and dies there, a larger one goes straight to the old
 * generation (1 MiB strings of every chunk grew serve's heap by ~60 MB per 24 MiB document, and full
 * collections followed).
 */
const DECODED_TEXT_CHARACTERS = 64 * 1024;

/** The bytes of strict base64 `text` (checked before), decoded into one buffer from young strings. */
function decodeBase64(text: Buffer): Buffer {
  const bytes = Buffer.allocUnsafe((text.length / 4) * 3);
  let written = 0;
  for (let at = 0; at < text.length; at += DECODED_TEXT_CHARACTERS) {
    written += bytes.write(text.toString('latin1', at, Math.min(text.length, at + DECODED_TEXT_CHARACTERS)), written, 'base64');
  }
  return bytes.subarray(0, written);
}

/**
 * The request row with a large document (strict base64, checked at intake) sent in decoded chunks,
 * in one transaction. A chunk of base64 is a multiple of 4 characters, so each decodes on its own.
 */
function insertStaged(sql: Sql, request: NewRequest, document: Buffer, notification: Notification | undefined): Promise<Inserted | undefined> {
  return sql.transaction(async (trx) => {
    await trx.run(CREATE_STAGING);
    for (let offset = 0, n = 0; offset < document.length; offset += STAGED_CHUNK_BYTES, n += 1) {
      await trx.run(STAGE_CHUNK, [n, decodeBase64(document.subarray(offset, offset + STAGED_CHUNK_BYTES))]);
      // The chunk's text, its bytes and node-postgres's message of them are garbage now.
      streamedBytes(2 * STAGED_CHUNK_BYTES);
    }
    return trx.row<Inserted>(INSERT_STAGED_REQUEST, requestValues(request, null, notification));
  });
}

const existingRequest = (sql: Sql, request: NewRequest) =>
  sql.row<Stored>(EXISTING_REQUEST, [request.clientId, request.operation, request.idempotencyKey, request.bodyHash]);

/**
 * Stores a request, or finds the identical one stored before: its queueMessageId and metadata. A
 * large document's identical retry is looked for first: staged, its megabytes would cross to
 * PostgreSQL, fill the staging table and be joined only for the insert to find the conflict (an
 * 18 MiB document: ~100 ms of PostgreSQL's CPU and a connection held for its chunks, per retry; M4
 * of docs/hostile.md sends one body again and again). A small one is inserted at once: its
 * conflict costs less than a query before every insert.
 */
async function storeRequest(
  sql: Sql,
  request: NewRequest,
  notification: Notification | undefined,
): Promise<{ queueMessageId: string; metadata: Record<string, unknown>; stored: boolean; notified: boolean }> {
  const document = request.document;
  const staged = document !== null && document.length > STAGED_DOCUMENT_BYTES ? document : undefined;
  const earlier = staged && request.idempotencyKey !== null ? await existingRequest(sql, request) : undefined;
  if (earlier) return { queueMessageId: earlier.queue_message_id, metadata: earlier.metadata, stored: false, notified: false };
  const inserted = staged
    ? await insertStaged(sql, request, staged, notification)
    : await sql.row<Inserted>(
        INSERT_REQUEST,
        requestValues(request, request.decodedDocument ?? (document && Buffer.from(document.toString('latin1'), 'base64')), notification),
      );
  if (inserted)
    return {
      queueMessageId: inserted.queue_message_id,
      metadata: request.metadata as unknown as Record<string, unknown>,
      stored: true,
      notified: inserted.notified > 0,
    };
  const existing = await existingRequest(sql, request);
  return { queueMessageId: existing!.queue_message_id, metadata: existing!.metadata, stored: false, notified: false };
}

/** The request's callbackUrl when the clinic registered it (no calls to arbitrary hosts), else the first registered one. */
function callbackBase(clinic: ClinicAccount, requested: string | undefined): string {
  if (requested === undefined) return clinic.callbackUrls[0]!;
  const normalize = (url: string) => url.replace(/\/+$/, '');
  if (!clinic.callbackUrls.some((registered) => normalize(registered) === normalize(requested))) {
    throw ApiError.single(403, 'FORBIDDEN', 'callbackUrl is not one of the callback URLs registered for this clinic account', '/requestBody/callbackUrl');
  }
  return requested;
}

/** What the acceptance callback will report at once: files that are not base64 (the request is rejected unread). */
function intakeErrorsOf(body: RegisterDocumentRequest, documentValid: boolean, signatureValid: boolean): CallbackErrorItem[] {
  const errors: CallbackErrorItem[] = [];
  if (!documentValid) errors.push({ code: 'VALIDATION_ERROR', message: 'document is not valid base64' });
  if (!signatureValid) errors.push({ code: 'SIGNATURE_DECODING_ERROR', message: 'signature is not valid base64' });
  (body.personalSignatures ?? []).forEach((item, index) => {
    if (!isStrictBase64(item.signature))
      errors.push({ code: 'SIGNATURE_DECODING_ERROR', message: `personalSignatures/${index}/signature is not valid base64` });
  });
  return errors;
}

function registerMetadata(body: RegisterDocumentRequest): RegisterMetadata {
  return {
    localUid: body.localUid,
    kind: body.kind,
    organization: body.organization,
    patientSnils: snilsDigits(body.patientSnils),
    creationDateTime: body.creationDateTime,
    ...(body.documentNumber === undefined ? {} : { documentNumber: body.documentNumber }),
    ...(body.replaces === undefined ? {} : { replaces: body.replaces }),
    ...(body.signatureChecksum === undefined ? {} : { signatureChecksum: body.signatureChecksum }),
  };
}

class EmdrHandlers {
  constructor(
    private readonly dependencies: EmdrHandlerDependencies,
    private readonly audit: AuditTrail,
  ) {}

  /** The clinic of the request: its headers, request rate and byte quota were checked before the body was parsed. */
  private clinicOf(request: OperationRequest): ClinicAccount {
    return request.security.Token as ClinicAccount;
  }

  /** Stores the request with its audit row; the identical retry stored before is recorded on its own. */
  private async store(
    request: Omit<NewRequest, 'requestId' | 'clientRequestId' | 'businessId'>,
    clinic: ClinicAccount,
  ): Promise<{ queueMessageId: string; metadata: Record<string, unknown> }> {
    const context = currentRequest();
    const stored = await storeRequest(
      this.dependencies.sql,
      {
        ...request,
        requestId: context?.requestId ?? randomUUID(),
        clientRequestId: context?.clientRequestId ?? null,
        businessId: clinic.businessId,
      },
      this.dependencies.notificationWithStore?.(),
    );
    if (stored.stored) {
      if (!stored.notified) this.dependencies.requestStored(String(clinic.id));
    } else
      await this.audit.record({
        action: request.operation,
        businessId: clinic.businessId,
        queueMessageId: stored.queueMessageId,
        emdrId: (stored.metadata as { emdrId?: string }).emdrId,
        outcome: 'ok',
      });
    return stored;
  }

  readonly registerDocument = async (request: OperationRequest) => {
    const clinic = this.clinicOf(request);
    const body = request.body as RegisterDocumentRequest;
    // A large document arrives as bytes of strict base64, with a placeholder in body.document (see base64-member.ts).
    const documentBytes = request.base64Member?.value;
    if (clinic.organizations !== null && !clinic.organizations.includes(body.organization)) {
      throw ApiError.single(403, 'FORBIDDEN', 'this clinic account does not act for the organization', '/requestBody/organization');
    }
    const callbackUrl = callbackBase(clinic, body.callbackUrl);
    // A large body's pieces of work (its base64 checks, its hash, its storing) each wait for a turn of the event loop.
    if (request.turn) await request.turn();
    const documentValid = documentBytes !== undefined || isStrictBase64(body.document);
    // Checked by decoding it: its bytes go to the insert (checked once, decoded once).
    const signature = decodeBase64Strict(body.signature) ?? null;
    const signatureValid = signature !== null;
    const intakeErrors = intakeErrorsOf(body, documentValid, signatureValid);
    if (request.turn) await request.turn();
    const hashed = bodyHash(body as unknown as Record<string, unknown>, documentBytes && { member: 'document', value: documentBytes });
    // A small body's hash comes at once: no await for it (each costs a microtask turn).
    const hash = typeof hashed === 'string' ? hashed : await hashed;
    if (request.turn) await request.turn();
    const { queueMessageId } = await this.store(
      {
        clientId: clinic.id,
        operation: 'RegisterDocument',
        idempotencyKey: body.localUid,
        bodyHash: hash,
        callbackUrl,
        localUid: body.localUid,
        clientMessageId: null,
        metadata: registerMetadata(body),
        // base64 is ASCII: as latin1 bytes a string member is the same text.
        document: documentBytes ?? (documentValid ? Buffer.from(body.document, 'latin1') : null),
        decodedDocument: request.base64Member?.decoded,
        signature,
        // A request with intake errors is rejected unread; its undecodable strings (a NUL, say) would not fit in jsonb.
        personalSignatures: body.personalSignatures === undefined || intakeErrors.length > 0 ? null : JSON.stringify(body.personalSignatures),
        intakeErrors: intakeErrors.length > 0 ? intakeErrors : null,
      },
      clinic,
    );
    const answer: RegisterDocumentAcknowledgement = { localUid: body.localUid, queueMessageId };
    return { status: 200, body: answer };
  };

  readonly demandContent = async (request: OperationRequest) => {
    const clinic = this.clinicOf(request);
    const body = request.body as DemandContentRequest;
    const callbackUrl = callbackBase(clinic, body.callbackUrl);
    const clientMessageId = body.clientMessageId ?? randomUUID();
    const metadata: DemandMetadata = {
      emdrId: body.emdrId,
      clientMessageId,
      ...(body.patientSnils === undefined ? {} : { patientSnils: snilsDigits(body.patientSnils) }),
    };
    const stored = await this.store(
      {
        clientId: clinic.id,
        operation: 'DemandContent',
        // Without the clinic's own id there is nothing to recognize a retry by.
        idempotencyKey: body.clientMessageId ?? null,
        bodyHash: await bodyHash(body as unknown as Record<string, unknown>),
        callbackUrl,
        localUid: null,
        clientMessageId,
        metadata,
        document: null,
        signature: null,
        personalSignatures: null,
        intakeErrors: null,
      },
      clinic,
    );
    const answer: DemandContentAcknowledgement = {
      queueMessageId: stored.queueMessageId,
      clientMessageId: (stored.metadata as unknown as DemandMetadata).clientMessageId,
    };
    return { status: 200, body: answer };
  };

  readonly searchRegistryItem = async (request: OperationRequest) => {
    const clinic = this.clinicOf(request);
    const body = request.body as SearchRegistryItemRequest;
    // By the patient's SNILS: every organization's items (how another МИС's emdrId is found); else the clinic's own organizations'.
    const items = await registryCall(
      this.dependencies.registry.search({
        ...body,
        ...(body.patientSnils === undefined ? {} : { patientSnils: snilsDigits(body.patientSnils) }),
        ...(body.patientSnils !== undefined || clinic.organizations === null ? {} : { organizations: clinic.organizations }),
        limit: SEARCH_LIMIT,
      }),
    );
    await this.audit.record({ action: 'SearchRegistryItem', businessId: clinic.businessId, outcome: 'ok' });
    const answer: SearchRegistryItemResponse = { items };
    return { status: 200, body: answer };
  };

  /** A record of the clinic's own organizations; another organization's answers as an unknown emdrId, so emdrIds cannot be probed. */
  readonly getRegistryItem = async (request: OperationRequest) => {
    const clinic = this.clinicOf(request);
    const body = request.body as GetRegistryItemRequest;
    const record = await registryCall(this.dependencies.registry.record(body.emdrId));
    if (!record || (clinic.organizations !== null && !clinic.organizations.includes(record.organization))) {
      throw ApiError.single(404, 'REGISTRY_ITEM_NOT_FOUND', 'no registry item with this emdrId', '/requestBody/emdrId');
    }
    await this.audit.record({ action: 'GetRegistryItem', businessId: clinic.businessId, emdrId: record.emdrId, outcome: 'ok' });
    const answer: GetRegistryItemResponse = { item: record };
    return { status: 200, body: answer };
  };

  readonly getMessage = async (request: OperationRequest) => {
    const clinic = this.clinicOf(request);
    const state = await messageState(this.dependencies.sql, request.params.queueMessageId!, clinic.id);
    if (!state) throw ApiError.single(404, 'NOT_FOUND', 'no such request');
    return { status: 200, body: state };
  };
}

export function emdrHandlers(dependencies: EmdrHandlerDependencies): Record<string, OperationHandler> {
  const audit = dependencies.audit ?? new AuditTrail(dependencies.sql);
  const handlers = new EmdrHandlers(dependencies, audit);
  const audited = (handler: OperationHandler) => auditRefusals(handler, audit);
  return {
    RegisterDocument: audited(handlers.registerDocument),
    DemandContent: audited(handlers.demandContent),
    SearchRegistryItem: audited(handlers.searchRegistryItem),
    GetRegistryItem: audited(handlers.getRegistryItem),
    GetMessage: handlers.getMessage,
  };
}

/** A call to the registry (РЭМД) that may find it out of reach: the clinic retries, as when the database is. */
function registryCall<T>(call: Promise<T>): Promise<T> {
  return call.catch((error: unknown) => {
    if (!(error instanceof RegistryUnavailableError)) throw error;
    throw new ApiError(503, [{ code: 'SERVICE_UNAVAILABLE', message: 'the registry cannot be reached right now; retry after the seconds in Retry-After' }], {
      'Retry-After': String(REGISTRY_RETRY_AFTER_SECONDS),
    });
  });
}

/**
 * A registry request the handler refuses (an organization or callback URL the clinic may not use)
 * leaves an audit row with its code. Refusals before the handler (headers, rate, validation) are
 * counted in the metrics.
 */
function auditRefusals(handler: OperationHandler, audit: AuditTrail): OperationHandler {
  return async (request) => {
    try {
      return await handler(request);
    } catch (error) {
      const businessId = (request.security.Token as ClinicAccount | undefined)?.businessId ?? null;
      const outcome = error instanceof ApiError ? (error.items[0]?.code ?? 'error') : 'error';
      await audit.record({ action: request.operationId, businessId, outcome }).catch(() => undefined);
      throw error;
    }
  };
}
