import { statement, type Queryable } from '../../../db/sql.js';
import { streamedBytes } from '../../../memory/garbage.js';
import type { PersonalSignatureOfRequest } from '../../registry/port.js';

/**
 * Bytes per slice: a multiple of 3, so the base64 texts of consecutive slices joined are the
 * base64 of the whole file; and small enough that a slice's hex text (2×) stays under V8's
 * large-object size, so its garbage dies young instead of piling up until a full collection
 * (measured with `make bench`: 768 KiB slices peaked 10–30 MiB higher for a 20 MiB document).
 * The file columns are stored uncompressed (STORAGE EXTERNAL), so a slice reads only its own part.
 */
export const FILE_SLICE_BYTES = 3 * 16 * 1024;

/** The files a request row of emdr_requests keeps. */
export type RequestFile = 'document' | 'signature';

const SIZES = statement(
  'emdr_request_file_sizes',
  'select octet_length(document) as document, octet_length(signature) as signature from emdr_requests where queue_message_id = $1',
);
const SLICES = {
  document: {
    bytes: statement('emdr_document_slice', 'select substring(document from $2 for $3) as slice from emdr_requests where queue_message_id = $1'),
    // PostgreSQL's base64 breaks lines every 76 characters; JSON wants one line.
    base64: statement(
      'emdr_document_slice_base64',
      `select translate(encode(substring(document from $2 for $3), 'base64'), E'\\n', '') as slice from emdr_requests where queue_message_id = $1`,
    ),
  },
  signature: {
    bytes: statement('emdr_signature_slice', 'select substring(signature from $2 for $3) as slice from emdr_requests where queue_message_id = $1'),
    base64: statement(
      'emdr_signature_slice_base64',
      `select translate(encode(substring(signature from $2 for $3), 'base64'), E'\\n', '') as slice from emdr_requests where queue_message_id = $1`,
    ),
  },
} as const;

/** A request's signatures as stored: the organization's (bytes) and the personal ones (base64, with their signer blocks). */
export interface RequestSignatures {
  signature: Buffer | null;
  personalSignatures: PersonalSignatureOfRequest[] | null;
}

const SIGNATURES = statement(
  'emdr_request_signatures',
  'select signature, personal_signatures as "personalSignatures" from emdr_requests where queue_message_id = $1',
);

/** A request's signatures (none when the request is gone). */
export async function requestSignatures(sql: Queryable, queueMessageId: string): Promise<RequestSignatures> {
  return (await sql.row<RequestSignatures>(SIGNATURES, [queueMessageId])) ?? { signature: null, personalSignatures: null };
}

/** The sizes in bytes of a request's files (null: no such file). */
export async function requestFileSizes(sql: Queryable, queueMessageId: string): Promise<Record<RequestFile, number | null>> {
  const row = await sql.row<Record<RequestFile, number | null>>(SIZES, [queueMessageId]);
  return { document: row?.document ?? null, signature: row?.signature ?? null };
}

/**
 * One file of a request in slices, each as `form` (bytes, or base64 that PostgreSQL encodes, so
 * no hex text or bytes of it pass through this process). node-postgres receives bytea as hex text,
 * so reading a 20 MiB file in one go would hold several times its size at once.
 */
async function* slicesOf<T>(sql: Queryable, queueMessageId: string, file: RequestFile, size: number, form: 'bytes' | 'base64'): AsyncGenerator<T> {
  for (let offset = 0; offset < size; offset += FILE_SLICE_BYTES) {
    const row = await sql.row<{ slice: T }>(SLICES[file][form], [queueMessageId, offset + 1, FILE_SLICE_BYTES]);
    if (!row) return;
    // What arrived from the database for it (hex or base64 text, the socket's buffers) is garbage now.
    streamedBytes(2 * FILE_SLICE_BYTES);
    yield row.slice;
  }
}

/** The bytes of one file of a request (of `size` bytes), in slices. */
export function requestFileSlices(sql: Queryable, queueMessageId: string, file: RequestFile, size: number): AsyncGenerator<Buffer> {
  return slicesOf<Buffer>(sql, queueMessageId, file, size, 'bytes');
}

/** The base64 of one file of a request (of `size` bytes), in slices whose texts joined are the base64 of the whole file. */
export async function* requestFileBase64Slices(sql: Queryable, queueMessageId: string, file: RequestFile, size: number): AsyncGenerator<Buffer> {
  for await (const slice of slicesOf<string>(sql, queueMessageId, file, size, 'base64')) yield Buffer.from(slice, 'latin1');
}
