import type { Knex } from 'knex';

/**
 * Bytes per slice: a multiple of 3, so the base64 texts of consecutive slices joined are the
 * base64 of the whole file.
 */
export const FILE_SLICE_BYTES = 3 * 256 * 1024;

/** The files a request row of emdr_requests keeps. */
export type RequestFile = 'document' | 'signature';

/**
 * One file of a request, read in slices. node-postgres receives bytea as hex text, so reading a
 * 20 MiB file in one go holds several times its size (receive buffer, hex string, bytes) at once.
 * Yields nothing when the file is null.
 */
export async function* requestFileSlices(knex: Knex, queueMessageId: string, file: RequestFile): AsyncGenerator<Buffer> {
  for (let offset = 0; ; offset += FILE_SLICE_BYTES) {
    const row = await knex('emdr_requests')
      .where({ queue_message_id: queueMessageId })
      .first(knex.raw('substring(?? from ? for ?) as slice', [file, offset + 1, FILE_SLICE_BYTES]));
    const slice = row?.slice as Buffer | null | undefined;
    if (!slice || slice.length === 0) return;
    yield slice;
    if (slice.length < FILE_SLICE_BYTES) return;
  }
}
