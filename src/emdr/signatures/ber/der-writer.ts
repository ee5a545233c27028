/**
 * DER encoding of the few ASN.1 types a certificate and a CMS SignedData need, for the test signer
 * (test-signer.ts).
 */

export const TAG = {
  BOOLEAN: 0x01,
  INTEGER: 0x02,
  BIT_STRING: 0x03,
  OCTET_STRING: 0x04,
  NULL: 0x05,
  OID: 0x06,
  UTF8_STRING: 0x0c,
  NUMERIC_STRING: 0x12,
  UTC_TIME: 0x17,
  GENERALIZED_TIME: 0x18,
  SEQUENCE: 0x30,
  SET: 0x31,
} as const;

function lengthOf(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

/** One element: tag, length, content. */
export function element(tag: number, ...content: Uint8Array[]): Buffer {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), lengthOf(body.length), body]);
}

export const sequence = (...items: Uint8Array[]) => element(TAG.SEQUENCE, ...items);

/** A SET OF: DER orders its elements by their encodings (X.690, 11.6). */
export const setOf = (...items: Buffer[]) => element(TAG.SET, ...[...items].sort(Buffer.compare));

/** `[n]` constructed, context-specific (EXPLICIT, or IMPLICIT of a SET/SEQUENCE). */
export const contextTagged = (n: number, ...content: Uint8Array[]) => element(0xa0 | n, ...content);

/** The same element under another (single-byte) tag: `[n] IMPLICIT`. */
export function retagged(encoding: Buffer, tag: number): Buffer {
  const copy = Buffer.from(encoding);
  copy[0] = tag;
  return copy;
}

export const octetString = (bytes: Uint8Array) => element(TAG.OCTET_STRING, bytes);

export const bitString = (bytes: Uint8Array) => element(TAG.BIT_STRING, Buffer.from([0]), bytes);

export const utf8String = (text: string) => element(0x0c, Buffer.from(text, 'utf8'));

export const nullValue = () => element(TAG.NULL);

export const boolean = (value: boolean) => element(TAG.BOOLEAN, Buffer.from([value ? 0xff : 0]));

export function oid(dotted: string): Buffer {
  const arcs = dotted.split('.').map(Number);
  const body: number[] = [40 * arcs[0]! + arcs[1]!];
  for (const arc of arcs.slice(2)) {
    const chunk = [arc & 0x7f];
    for (let rest = Math.floor(arc / 128); rest > 0; rest = Math.floor(rest / 128)) chunk.unshift((rest & 0x7f) | 0x80);
    body.push(...chunk);
  }
  return element(TAG.OID, Buffer.from(body));
}

/** A non-negative INTEGER. */
export function integer(value: bigint): Buffer {
  let hex = value.toString(16);
  if (hex.length % 2 === 1) hex = `0${hex}`;
  let bytes = Buffer.from(hex, 'hex');
  if (bytes[0]! & 0x80) bytes = Buffer.concat([Buffer.from([0]), bytes]);
  return element(TAG.INTEGER, bytes);
}

/** UTCTime for years 1950–2049, GeneralizedTime after (RFC 5280, 4.1.2.5), whole seconds. */
export function time(at: Date): Buffer {
  const text = at
    .toISOString()
    .replace(/\.\d+Z$/, 'Z')
    .replace(/[-:T]/g, '');
  const year = at.getUTCFullYear();
  return year >= 1950 && year < 2050 ? element(TAG.UTC_TIME, Buffer.from(text.slice(2), 'latin1')) : element(TAG.GENERALIZED_TIME, Buffer.from(text, 'latin1'));
}

/** An AlgorithmIdentifier, its parameters NULL unless given. */
export const algorithm = (dotted: string, parameters: Buffer = nullValue()) => sequence(oid(dotted), parameters);
