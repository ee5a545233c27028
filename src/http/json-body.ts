import type { IncomingMessage } from 'node:http';
import { STREAMED_BODY_BYTES, streamedBytes } from '../memory/garbage.js';

/**
 * Request bodies of both interfaces: refused on their headers before a byte is read, then read
 * into memory up to a limit. Never inflated: a compressed body is refused, so a few KB of gzip
 * cannot turn into gigabytes of parsed JSON.
 */

/** Why a body is refused: 413 (too large) or 415 (not identity-encoded UTF-8 JSON). */
export class BodyRefusal extends Error {
  constructor(
    readonly status: 413 | 415,
    message: string,
  ) {
    super(message);
    this.name = 'BodyRefusal';
  }
}

/** The client went away (or was cut off as too slow) before its body arrived: nobody to answer. */
export class ClientGone extends Error {
  constructor() {
    super('the client closed the connection before its body arrived');
    this.name = 'ClientGone';
  }
}

/** `application/json`, with no charset or charset=utf-8 (RFC 8259: JSON exchanged between systems is UTF-8). */
export function isJsonMediaType(contentType: string): boolean {
  const [type, ...parameters] = contentType.split(';');
  if (type!.trim().toLowerCase() !== 'application/json') return false;
  return parameters.every((parameter) => {
    const [name, value = ''] = parameter.split('=').map((part) => part.trim());
    return name!.toLowerCase() !== 'charset' || /^"?utf-8"?$/i.test(value);
  });
}

/**
 * The checks a JSON body passes on its headers alone: Content-Encoding identity (or none),
 * Content-Type JSON in UTF-8 (absent passes unless `typeRequired`), Content-Length within the limit.
 */
export function refuseBodyByHeaders(request: IncomingMessage, limitBytes: number, options: { typeRequired: boolean }): BodyRefusal | undefined {
  const encoding = request.headers['content-encoding'];
  if (encoding !== undefined && !/^\s*identity\s*$/i.test(encoding)) {
    return new BodyRefusal(415, 'Content-Encoding must be identity: compressed bodies are not accepted');
  }
  const type = request.headers['content-type'];
  if (type === undefined ? options.typeRequired : !isJsonMediaType(type)) {
    return new BodyRefusal(415, 'send the body as application/json (UTF-8)');
  }
  if (Number(request.headers['content-length'] ?? 0) > limitBytes) return tooLarge(limitBytes);
  return undefined;
}

function tooLarge(limitBytes: number): BodyRefusal {
  return new BodyRefusal(413, `body larger than ${limitBytes} bytes`);
}

/**
 * Looks at each chunk of a body as it arrives, before the next is read: throws (or rejects) to stop
 * reading and refuse the body (a JSON shape past its limits, a byte quota used up). A promise
 * holds the reading until it settles.
 */
export type BodyInspector = (chunk: Buffer) => void | Promise<void>;

/**
 * Reads the body, at most `limitBytes` of it: into one buffer sized from Content-Length (no
 * list of chunks to concatenate), or the chunks of a chunked body. Rejects with BodyRefusal 413
 * past the limit (and stops reading), ClientGone, or what `inspect` threw for a chunk.
 */
export function readBody(request: IncomingMessage, limitBytes: number, inspect?: BodyInspector): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = request.headers['content-length'] === undefined ? undefined : Number(request.headers['content-length']);
    if (declared !== undefined && declared > limitBytes) {
      reject(tooLarge(limitBytes));
      return;
    }
    const whole = declared === undefined ? undefined : Buffer.allocUnsafe(declared);
    const streamed = declared !== undefined && declared >= STREAMED_BODY_BYTES;
    const chunks: Buffer[] = [];
    let received = 0;
    let settled = false;
    /** An inspection still under way: the end waits for it. */
    let inspecting: Promise<void> | undefined;
    const finish = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('close', onClose);
      outcome();
    };
    const refuse = (error: unknown) => {
      request.pause();
      finish(() => reject(error));
    };
    const onData = (chunk: Buffer) => {
      if (received + chunk.length > limitBytes) {
        refuse(tooLarge(limitBytes));
        return;
      }
      if (whole) {
        chunk.copy(whole, received);
        if (streamed) streamedBytes(chunk.length);
      } else chunks.push(chunk);
      received += chunk.length;
      if (!inspect) return;
      let inspection: void | Promise<void>;
      try {
        inspection = inspect(chunk);
      } catch (error) {
        refuse(error);
        return;
      }
      if (inspection instanceof Promise) {
        request.pause();
        inspecting = inspection.then(
          () => {
            inspecting = undefined;
            if (!settled) request.resume();
          },
          (error: unknown) => refuse(error),
        );
      }
    };
    const onEnd = () => {
      const done = () => finish(() => resolve(whole ? whole.subarray(0, received) : Buffer.concat(chunks, received)));
      if (inspecting) void inspecting.then(done);
      else done();
    };
    const onClose = () => finish(() => reject(new ClientGone()));
    request.on('data', onData);
    request.on('end', onEnd);
    request.on('close', onClose);
  });
}
