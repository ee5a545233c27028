/**
 * A bounded reader of DER (definite lengths only, single-byte tags, as CMS and X.509 use), for
 * input from anyone: every length is checked against its container before use, and every failure
 * is a DerError with a short reason, never another exception.
 */

export class DerError extends Error {}

export const TAG = {
  BOOLEAN: 0x01,
  INTEGER: 0x02,
  BIT_STRING: 0x03,
  OCTET_STRING: 0x04,
  NULL: 0x05,
  OID: 0x06,
  UTC_TIME: 0x17,
  GENERALIZED_TIME: 0x18,
  SEQUENCE: 0x30,
  SET: 0x31,
} as const;

/** `[n]` constructed, context-specific. */
export const context = (n: number) => 0xa0 | n;

export interface Element {
  tag: number;
  /** Offset of the tag byte. */
  start: number;
  contentStart: number;
  end: number;
}

/** Nothing in a signature comes near this (a whole 32 MiB request body would be the outer element). */
const MAX_LENGTH_BYTES = 4;

/** The element at `offset`, which must end by `limit`. */
export function readElement(bytes: Uint8Array, offset: number, limit: number): Element {
  if (offset + 2 > limit) throw new DerError('truncated element');
  const tag = bytes[offset]!;
  if ((tag & 0x1f) === 0x1f) throw new DerError('multi-byte tags are not used in CMS');
  const first = bytes[offset + 1]!;
  let length = first;
  let contentStart = offset + 2;
  if (first === 0x80) throw new DerError('indefinite length (BER) is not supported: send DER');
  if (first > 0x80) {
    const count = first & 0x7f;
    if (count > MAX_LENGTH_BYTES || contentStart + count > limit) throw new DerError('bad length');
    length = 0;
    for (let i = 0; i < count; i += 1) length = length * 256 + bytes[contentStart + i]!;
    contentStart += count;
  }
  const end = contentStart + length;
  if (end > limit) throw new DerError('element runs past its container');
  return { tag, start: offset, contentStart, end };
}

/** A cursor over the elements inside `parent`, in order. */
export class Reader {
  private offset: number;
  private readonly bytes: Uint8Array;
  private readonly limit: number;

  constructor(bytes: Uint8Array, parent: Element) {
    this.bytes = bytes;
    this.offset = parent.contentStart;
    this.limit = parent.end;
  }

  get done(): boolean {
    return this.offset >= this.limit;
  }

  /** The tag of the next element, or undefined at the end. */
  peekTag(): number | undefined {
    return this.done ? undefined : this.bytes[this.offset];
  }

  /** The next element; with `tag`, it must have that tag (`what` names it in the error). */
  next(tag?: number, what = 'element'): Element {
    if (this.done) throw new DerError(`${what} missing`);
    const element = readElement(this.bytes, this.offset, this.limit);
    if (tag !== undefined && element.tag !== tag) throw new DerError(`${what} has an unexpected type`);
    this.offset = element.end;
    return element;
  }

  /** The next element when it has `tag`, else undefined (nothing consumed). */
  optional(tag: number): Element | undefined {
    return this.peekTag() === tag ? this.next() : undefined;
  }
}

/** The elements inside `parent`, at most `max` of them. */
export function childrenOf(bytes: Uint8Array, parent: Element, max: number, what: string): Element[] {
  const reader = new Reader(bytes, parent);
  const children: Element[] = [];
  while (!reader.done) {
    if (children.length === max) throw new DerError(`${what}: more than ${max} elements`);
    children.push(reader.next());
  }
  return children;
}

export function contentOf(bytes: Uint8Array, element: Element): Uint8Array {
  return bytes.subarray(element.contentStart, element.end);
}

/** The whole encoding of `element`, tag and length included. */
export function encodingOf(bytes: Uint8Array, element: Element): Uint8Array {
  return bytes.subarray(element.start, element.end);
}

export function oidOf(bytes: Uint8Array, element: Element): string {
  if (element.tag !== TAG.OID) throw new DerError('expected an OBJECT IDENTIFIER');
  const content = contentOf(bytes, element);
  if (content.length === 0 || content.length > 64) throw new DerError('bad OBJECT IDENTIFIER');
  const arcs: number[] = [];
  let value = 0;
  for (const byte of content) {
    if (value > 2 ** 45) throw new DerError('OBJECT IDENTIFIER arc too large');
    value = value * 128 + (byte & 0x7f);
    if ((byte & 0x80) === 0) {
      arcs.push(value);
      value = 0;
    }
  }
  if ((content[content.length - 1]! & 0x80) !== 0) throw new DerError('bad OBJECT IDENTIFIER');
  const first = arcs.shift()!;
  const top = first < 40 ? 0 : first < 80 ? 1 : 2;
  return [top, first - 40 * top, ...arcs].join('.');
}

/** The bytes of a BIT STRING without unused bits (keys and signatures are whole bytes). */
export function bitStringBytes(bytes: Uint8Array, element: Element): Uint8Array {
  const content = contentOf(bytes, element);
  if (element.tag !== TAG.BIT_STRING || content.length === 0 || content[0] !== 0) throw new DerError('bad BIT STRING');
  return content.subarray(1);
}

/** UTCTime (YYMMDDHHMMSSZ, years 1950-2049) or GeneralizedTime (YYYYMMDDHHMMSS[.f]Z) as epoch milliseconds. */
export function timeOf(bytes: Uint8Array, element: Element): number {
  const text = Buffer.from(contentOf(bytes, element)).toString('latin1');
  let match: RegExpExecArray | null;
  let year: number;
  if (element.tag === TAG.UTC_TIME && (match = /^(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)Z$/.exec(text))) {
    const yy = Number(match[1]);
    year = yy >= 50 ? 1900 + yy : 2000 + yy;
  } else if (element.tag === TAG.GENERALIZED_TIME && (match = /^(\d{4})(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(?:\.\d{1,9})?Z$/.exec(text))) {
    year = Number(match[1]);
  } else {
    throw new DerError('bad time');
  }
  const [month, day, hour, minute, second] = match.slice(2, 7).map(Number) as [number, number, number, number, number];
  const ms = Date.UTC(year, month - 1, day, hour, minute, second);
  if (Number.isNaN(ms) || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) throw new DerError('bad time');
  return ms;
}
