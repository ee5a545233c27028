import { createHash, randomUUID, type Hash } from 'node:crypto';
import type PgBoss from 'pg-boss';
import type { Knex } from 'knex';
import type { Context } from 'openapi-backend';
import type { Request } from 'express';
import type { components } from '../../generated/emdr-api.js';
import { isStrictBase64, snilsDigits } from './acceptance.js';
import { base64MemberOf } from './base64-member.js';
import { authenticateClinic, type ClinicAccount } from './clients.js';
import type { CallbackErrorItem } from './codes.js';
import { ApiError } from './errors.js';
import type { BeforeBody, OperationHandler, SecurityHandler } from './http.js';
import { messageState } from './messages.js';
import type { DemandMetadata, RegisterMetadata } from './pipeline.js';
import { QUEUES, jobExecutor, type RequestJob } from './queue.js';
import type { RegistryPort } from './registry/port.js';

type RegisterDocumentRequest = components['schemas']['RegisterDocumentRequest'];
type RegisterDocumentAcknowledgement = components['schemas']['RegisterDocumentAcknowledgement'];
type DemandContentRequest = components['schemas']['DemandContentRequest'];
type DemandContentAcknowledgement = components['schemas']['DemandContentAcknowledgement'];
type SearchRegistryItemRequest = components['schemas']['SearchRegistryItemRequest'];
type SearchRegistryItemResponse = components['schemas']['SearchRegistryItemResponse'];

export interface EmdrHandlerDependencies {
  knex: Knex;
  boss: PgBoss;
  registry: RegistryPort;
  byteQuotaPerMinute: number;
}

const SEARCH_LIMIT = 100;

function header(request: Request, name: string): string | undefined {
  const value = request.headers[name.toLowerCase()];
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

/**
 * The three headers as the OpenAPI security schemes BusinessId, User and Token, required together.
 * Token does the lookup (all three headers); the other two only check presence.
 */
export function clinicSecurityHandlers(knex: Knex): Record<string, SecurityHandler> {
  return {
    BusinessId: async (_context, request) => header(request, 'businessId') !== undefined,
    User: async (_context, request) => header(request, 'user') !== undefined,
    Token: async (_context, request) => {
      const businessId = header(request, 'businessId');
      const user = header(request, 'user');
      const token = header(request, 'token');
      if (businessId === undefined || user === undefined || token === undefined) return false;
      return (await authenticateClinic(knex, businessId, user, token)) ?? false;
    },
  };
}

/** A per-clinic allowance per minute (requests, or body bytes): a fixed window kept in this process. */
class MinuteAllowance {
  private windowStart = 0;
  private used = new Map<number, number>();

  /** `limit` 0: no limit. */
  constructor(private readonly limit: number) {}

  /** Takes `amount` of the clinic's allowance; when that would pass the limit, takes nothing and returns the seconds to wait. */
  take(clientId: number, amount: number): number | undefined {
    if (this.limit === 0) return undefined;
    const now = Date.now();
    const window = Math.floor(now / 60_000) * 60_000;
    if (window !== this.windowStart) {
      this.windowStart = window;
      this.used.clear();
    }
    const used = (this.used.get(clientId) ?? 0) + amount;
    if (used > this.limit) return Math.ceil((window + 60_000 - now) / 1000);
    this.used.set(clientId, used);
    return undefined;
  }
}

/**
 * The per-clinic request rate (RATE_LIMIT), checked once the clinic is known and before its body is
 * read (the router's beforeBody): 429 RATE_LIMIT with Retry-After.
 */
export function clinicRateLimit(perMinute: number): BeforeBody {
  const requests = new MinuteAllowance(perMinute);
  return (_operationId, security) => {
    const clinic = security.Token as ClinicAccount | undefined;
    const wait = clinic === undefined ? undefined : requests.take(clinic.id, 1);
    if (wait !== undefined) throw tooMuch(wait, 'requests');
  };
}

function tooMuch(wait: number, what: string): ApiError {
  return new ApiError(429, [{ code: 'RATE_LIMIT', message: `too many ${what} this minute; retry after the seconds in Retry-After` }], { 'Retry-After': String(wait) });
}

/**
 * The size of a request body as the byte quota counts it: its members' JSON, strings by their UTF-8
 * length (no serialized copy of a large document), and the large member kept as bytes by its length.
 */
function bodyBytes(body: unknown, large: { member: string; value: Buffer } | undefined): number {
  if (body === null || typeof body !== 'object') return 0;
  let bytes = 2;
  for (const [key, value] of Object.entries(body)) {
    bytes += Buffer.byteLength(key) + 4;
    if (key === large?.member) bytes += large.value.length;
    else bytes += typeof value === 'string' ? Buffer.byteLength(value) : Buffer.byteLength(JSON.stringify(value));
  }
  return bytes;
}

const HASHED_CHARACTERS_PER_UPDATE = 1024 * 1024;

/**
 * Hashes the UTF-8 of `text` a slice at a time: hashing a long string in one update converts all
 * of it to UTF-8 at once. A slice never ends between the two halves of a surrogate pair.
 */
function hashText(hash: Hash, text: string): void {
  for (let start = 0; start < text.length; ) {
    let end = Math.min(start + HASHED_CHARACTERS_PER_UPDATE, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end += 1;
    hash.update(text.slice(start, end));
    start = end;
  }
}

/** JSON with every object's members sorted by name (arrays keep their order): one text per value, however it was sent. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const members = Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * A SHA-256 over the body's members sorted by name, each value as its UTF-8 length and text (a
 * string as it is, anything else in canonical JSON), so the same JSON with its members in another
 * order is the same request; without one big serialized copy of the body. `bytes` stands for one
 * string member kept as its ASCII bytes: the same hash as the string.
 */
function bodyHash(body: Record<string, unknown>, bytes?: { member: string; value: Buffer }): string {
  const hash = createHash('sha256');
  for (const key of Object.keys(body).sort()) {
    const value = body[key];
    const text = key === bytes?.member ? bytes.value : typeof value === 'string' ? value : canonicalJson(value);
    hash.update(`${JSON.stringify(key)}:${Buffer.byteLength(text)}:`);
    if (Buffer.isBuffer(text)) hash.update(text);
    else hashText(hash, text);
  }
  return hash.digest('hex');
}

export function emdrHandlers(dependencies: EmdrHandlerDependencies): Record<string, OperationHandler> {
  const { knex, boss, registry } = dependencies;
  const bytes = new MinuteAllowance(dependencies.byteQuotaPerMinute);

  /** The clinic of the request, within its byte quota (else 429 RATE_LIMIT with Retry-After); its request rate was checked before the body. */
  const clinicOf = (context: Context, request: Request): ClinicAccount => {
    const clinic = context.security?.Token as ClinicAccount;
    const large = base64MemberOf(request);
    const bytesWait = bytes.take(clinic.id, bodyBytes(context.request.requestBody, large && { member: 'document', value: large }));
    if (bytesWait !== undefined) throw tooMuch(bytesWait, 'bytes');
    return clinic;
  };

  /** The request's callbackUrl when the clinic registered it (no calls to arbitrary hosts), else the first registered one. */
  const callbackBase = (clinic: ClinicAccount, requested: string | undefined): string => {
    if (requested === undefined) return clinic.callbackUrls[0]!;
    const normalize = (url: string) => url.replace(/\/+$/, '');
    if (!clinic.callbackUrls.some((registered) => normalize(registered) === normalize(requested))) {
      throw ApiError.single(403, 'ACCESS_DENIED', 'callbackUrl is not one of the callback URLs registered for this clinic account', '/requestBody/callbackUrl');
    }
    return requested;
  };

  /**
   * Stores the request and its acceptance job in one transaction. The identical retry hits the
   * unique key (clinic, operation, idempotency key, body hash) and gets the first request's id.
   */
  const store = async (row: Record<string, unknown>): Promise<{ queueMessageId: string; metadata: Record<string, unknown> }> =>
    knex.transaction(async (trx) => {
      const inserted = await trx('emdr_requests')
        .insert({ ...row, queue_message_id: randomUUID(), state: 'received' })
        .onConflict(['client_id', 'operation', 'idempotency_key', 'body_hash'])
        .ignore()
        .returning(['queue_message_id', 'metadata']);
      if (inserted.length > 0) {
        const job: RequestJob = { queueMessageId: inserted[0].queue_message_id };
        await boss.send(QUEUES.accept, job as unknown as object, { db: await jobExecutor(trx) });
        return { queueMessageId: inserted[0].queue_message_id, metadata: inserted[0].metadata };
      }
      const existing = await trx('emdr_requests')
        .where({ client_id: row.client_id, operation: row.operation, idempotency_key: row.idempotency_key, body_hash: row.body_hash })
        .first('queue_message_id', 'metadata');
      return { queueMessageId: existing.queue_message_id, metadata: existing.metadata };
    });

  return {
    RegisterDocument: async (context: Context, request: Request) => {
      const clinic = clinicOf(context, request);
      const body = context.request.requestBody as RegisterDocumentRequest;
      // A large document arrives as bytes of strict base64, with a placeholder in body.document (see base64-member.ts).
      const documentBytes = base64MemberOf(request);
      if (clinic.organizations !== null && !clinic.organizations.includes(body.organization)) {
        throw ApiError.single(403, 'ACCESS_DENIED', 'this clinic account does not act for the organization', '/requestBody/organization');
      }
      const callbackUrl = callbackBase(clinic, body.callbackUrl);
      const intakeErrors: CallbackErrorItem[] = [];
      const documentValid = documentBytes !== undefined || isStrictBase64(body.document);
      if (!documentValid) intakeErrors.push({ code: 'VALIDATION_ERROR', message: 'document is not valid base64' });
      const signatureValid = isStrictBase64(body.signature);
      if (!signatureValid) intakeErrors.push({ code: 'SIGNATURE_DECODING_ERROR', message: 'signature is not valid base64' });
      (body.personalSignatures ?? []).forEach((item, index) => {
        if (!isStrictBase64(item.signature)) intakeErrors.push({ code: 'SIGNATURE_DECODING_ERROR', message: `personalSignatures/${index}/signature is not valid base64` });
      });
      const metadata: RegisterMetadata = {
        localUid: body.localUid,
        kind: body.kind,
        organization: body.organization,
        patientSnils: snilsDigits(body.patientSnils),
        creationDateTime: body.creationDateTime,
        ...(body.documentNumber === undefined ? {} : { documentNumber: body.documentNumber }),
        ...(body.replaces === undefined ? {} : { replaces: body.replaces }),
      };
      const { queueMessageId } = await store({
        client_id: clinic.id,
        operation: 'RegisterDocument',
        idempotency_key: body.localUid,
        body_hash: bodyHash(body as unknown as Record<string, unknown>, documentBytes && { member: 'document', value: documentBytes }),
        callback_url: callbackUrl,
        local_uid: body.localUid,
        metadata: JSON.stringify(metadata),
        // PostgreSQL decodes the base64: no decoded copy of the document in this process. The bytes go as a
        // binary (bytea) parameter, never a JS string; they are ASCII, so as text they are the base64 itself.
        document: documentBytes !== undefined
          ? knex.raw(`decode(convert_from(?::bytea, 'UTF8'), 'base64')`, [documentBytes])
          : documentValid ? knex.raw(`decode(?, 'base64')`, [body.document]) : null,
        signature: signatureValid ? knex.raw(`decode(?, 'base64')`, [body.signature]) : null,
        // A request with intake errors is rejected unread; its undecodable strings (a NUL, say) would not fit in jsonb.
        personal_signatures: body.personalSignatures === undefined || intakeErrors.length > 0 ? null : JSON.stringify(body.personalSignatures),
        intake_errors: intakeErrors.length > 0 ? JSON.stringify(intakeErrors) : null,
      });
      const answer: RegisterDocumentAcknowledgement = { localUid: body.localUid, queueMessageId };
      return { status: 200, body: answer };
    },

    DemandContent: async (context: Context, request: Request) => {
      const clinic = clinicOf(context, request);
      const body = context.request.requestBody as DemandContentRequest;
      const callbackUrl = callbackBase(clinic, body.callbackUrl);
      const clientMessageId = body.clientMessageId ?? randomUUID();
      const metadata: DemandMetadata = { emdrId: body.emdrId, clientMessageId, ...(body.patientSnils === undefined ? {} : { patientSnils: snilsDigits(body.patientSnils) }) };
      const stored = await store({
        client_id: clinic.id,
        operation: 'DemandContent',
        // Without the clinic's own id there is nothing to recognize a retry by.
        idempotency_key: body.clientMessageId ?? null,
        body_hash: bodyHash(body as unknown as Record<string, unknown>),
        callback_url: callbackUrl,
        client_message_id: clientMessageId,
        metadata: JSON.stringify(metadata),
      });
      const answer: DemandContentAcknowledgement = { queueMessageId: stored.queueMessageId, clientMessageId: (stored.metadata as unknown as DemandMetadata).clientMessageId };
      return { status: 200, body: answer };
    },

    SearchRegistryItem: async (context: Context, request: Request) => {
      const clinic = clinicOf(context, request);
      const body = context.request.requestBody as SearchRegistryItemRequest;
      // By the patient's SNILS: every organization's items (how another МИС's emdrId is found); else the clinic's own organizations'.
      const items = await registry.search({
        ...body,
        ...(body.patientSnils === undefined ? {} : { patientSnils: snilsDigits(body.patientSnils) }),
        ...(body.patientSnils !== undefined || clinic.organizations === null ? {} : { organizations: clinic.organizations }),
        limit: SEARCH_LIMIT,
      });
      const answer: SearchRegistryItemResponse = { items };
      return { status: 200, body: answer };
    },

    GetMessage: async (context: Context, request: Request) => {
      const clinic = clinicOf(context, request);
      const state = await messageState(knex, (context.request.params as { queueMessageId: string }).queueMessageId, clinic.id);
      if (!state) throw ApiError.single(404, 'NOT_FOUND', 'no such request');
      return { status: 200, body: state };
    },
  };
}
