import type { Knex } from 'knex';

/**
 * Bytes per slice: a multiple of 3, so the base64 texts of consecutive slices joined are the
 * base64 of the whole file; and small enough that a slice's hex text (2×) stays under V8's
 * large-object size, so its garbage dies young instead of piling up until a full collection
 * (measured with `make bench`: 768 KiB slices peaked 10–30 MiB higher for a 20 MiB document).
 */
export const FILE_SLICE_BYTES = 3 * 16 * 1024;

/** The files a request row of emdr_requests keeps. */
export type RequestFile = 'document' | 'signature';

/**
 * Reads one file of a request slice by slice, each slice as `sliceSql` turns `substring(file …)`
 * (the `?`) into a column. node-postgres receives bytea as hex text, so reading a 20 MiB file in
 * one go would hold several times its size (receive buffer, hex string, bytes) at once.
 */
async function* slicesOf<T>(knex: Knex, queueMessageId: string, file: RequestFile, sliceSql: string): AsyncGenerator<T> {
  const row = await knex('emdr_requests').where({ queue_message_id: queueMessageId }).first(knex.raw('octet_length(??) as size', [file]));
  const size = Number(row?.size ?? 0);
  for (let offset = 0; offset < size; offset += FILE_SLICE_BYTES) {
    const slice = knex.raw('substring(?? from ? for ?)', [file, offset + 1, FILE_SLICE_BYTES]);
    const sliceRow = await knex('emdr_requests')
      .where({ queue_message_id: queueMessageId })
      .first(knex.raw(`${sliceSql} as slice`, [slice]));
    yield sliceRow.slice as T;
  }
}

/** The bytes of one file of a request, in slices; nothing when the file is null. */
export function requestFileSlices(knex: Knex, queueMessageId: string, file: RequestFile): AsyncGenerator<Buffer> {
  return slicesOf<Buffer>(knex, queueMessageId, file, '?');
}

/**
 * The base64 of one file of a request, in slices that join into the base64 of the whole file.
 * PostgreSQL encodes, so no hex text or bytes of the slice pass through this process.
 */
export function requestFileBase64Slices(knex: Knex, queueMessageId: string, file: RequestFile): AsyncGenerator<string> {
  // PostgreSQL's base64 breaks lines every 76 characters; JSON wants one line.
  return slicesOf<string>(knex, queueMessageId, file, `translate(encode(?, 'base64'), E'\\n', '')`);
}
