/**
 * Typed reads of single elements of an encoding that passed checkBerBounds (ber-bounds.ts), over
 * its bytes, without an ASN.1 library's object per element: what the certificate and signer
 * readers (cms/) take of each field. Each read gives what asn1js gives for the same element, and
 * refuses what the readers over asn1js's parse refused before them: an element of another type, a
 * constructed element where a primitive one is due. The contents checkBerBounds checks per type (a
 * BOOLEAN of one byte, a BIT STRING's unused bits, a time's text, an OBJECT IDENTIFIER's last byte)
 * are not checked again. An OBJECT IDENTIFIER's text is asn1js's own (once per encoding, kept), as
 * is the text of a name attribute of an uncommon type; the common string types are decoded here as
 * asn1js decodes them (test/emdr/cms-parse.test.ts holds the two together).
 */
import * as asn1js from 'asn1js';
import { berChildren, latin1, SignatureFormatError, type BerElement } from './ber-bounds.ts';
import { BoundedCache } from '../cms/bounded-cache.ts';

/** The first byte of universal tags read here (the constructed form of a string is its tag | 0x20). */
export const TAG = {
  boolean: 0x01,
  integer: 0x02,
  bitString: 0x03,
  octetString: 0x04,
  null: 0x05,
  objectIdentifier: 0x06,
  utcTime: 0x17,
  generalizedTime: 0x18,
  sequence: 0x30,
  set: 0x31,
} as const;

const CONSTRUCTED = 0x20;
const CONTEXT_CLASS = 0x80;

export const isConstructed = (element: BerElement) => (element.tag & CONSTRUCTED) !== 0;

/** The tag number of a context-specific element ([n], either form, the high-tag-number form decoded); -1 for any other class. */
export function contextNumber(bytes: Uint8Array, element: BerElement | undefined): number {
  if (element === undefined || (element.tag & 0xc0) !== CONTEXT_CLASS) return -1;
  if ((element.tag & 0x1f) !== 0x1f) return element.tag & 0x1f;
  let number = 0;
  for (let cursor = element.start + 1; ; cursor += 1) {
    number = number * 128 + (bytes[cursor]! & 0x7f);
    if ((bytes[cursor]! & 0x80) === 0) return number;
  }
}

/**
 * Runs one read; an error of any other kind (a field missing where the structure was not as
 * expected) becomes a SignatureFormatError naming `what`.
 */
export function decoded<T>(what: string, step: () => T): T {
  try {
    return step();
  } catch (error) {
    if (error instanceof SignatureFormatError) throw error;
    throw new SignatureFormatError(`bad ${what}`);
  }
}

/** The element itself when its first tag byte is `tag`, else a SignatureFormatError naming `what`. */
export function ofTag(element: BerElement | undefined, tag: number, what: string): BerElement {
  if (element?.tag !== tag) throw new SignatureFormatError(`bad ${what}`);
  return element;
}

/** The children of a constructed element, at most `max` of them; a SignatureFormatError for a primitive one or more children. */
export function childrenOf(bytes: Uint8Array, element: BerElement | undefined, max: number, what: string): BerElement[] {
  if (element === undefined || !isConstructed(element)) throw new SignatureFormatError(`bad ${what}`);
  const children = berChildren(bytes, element);
  if (children.length > max) throw new SignatureFormatError(`${what}: more than ${max}`);
  return children;
}

/** The children of a SEQUENCE (tag 0x30), bounded as childrenOf. */
export const sequenceOf = (bytes: Uint8Array, element: BerElement | undefined, max: number, what: string) =>
  childrenOf(bytes, ofTag(element, TAG.sequence, what), max, what);

export const contents = (bytes: Uint8Array, element: BerElement) => bytes.subarray(element.contentStart, element.contentEnd);

/** An INTEGER's contents as encoded (two's complement, big-endian). */
export const integerBytes = (bytes: Uint8Array, element: BerElement | undefined, what: string) => contents(bytes, ofTag(element, TAG.integer, what));

/** Parts of a constructed (BER) OCTET or BIT STRING. */
const MAX_STRING_PARTS = 1024;

/**
 * The bytes of an OCTET STRING (tag 0x04, or 0x24 in parts) or BIT STRING (0x03 or 0x23, the
 * count of unused bits aside); parts are joined, nested parts too (checkBerBounds let only parts
 * of the same type in).
 */
function stringBytes(bytes: Uint8Array, element: BerElement | undefined, primitiveTag: number, what: string): Uint8Array {
  if (element?.tag === primitiveTag) return bytes.subarray(element.contentStart + (primitiveTag === TAG.bitString ? 1 : 0), element.contentEnd);
  const parts = childrenOf(bytes, ofTag(element, primitiveTag | CONSTRUCTED, what), MAX_STRING_PARTS, what);
  return Buffer.concat(parts.map((part) => stringBytes(bytes, part, primitiveTag, what)));
}

export const octetsOf = (bytes: Uint8Array, element: BerElement | undefined, what: string) => stringBytes(bytes, element, TAG.octetString, what);
export const bitsOf = (bytes: Uint8Array, element: BerElement | undefined, what: string) => stringBytes(bytes, element, TAG.bitString, what);

/** The unused bits of a primitive BIT STRING; 0 for one in parts (as the readers over asn1js took it). */
export const unusedBitsOf = (bytes: Uint8Array, element: BerElement) => (element.tag === TAG.bitString ? bytes[element.contentStart]! : 0);

/** A BOOLEAN's value: any byte but 0 is TRUE (BER; checkBerBounds let only one byte in). */
export const booleanOf = (bytes: Uint8Array, element: BerElement) => bytes[element.contentStart] !== 0;

/** OIDs in the dotted form asn1js gives, by their contents: the few a signature's fields name repeat in every one. */
const OID_TEXT = new BoundedCache<string, string>(512);
const MAX_CACHED_OID_BYTES = 64;

/** An OBJECT IDENTIFIER in dotted form, as asn1js writes it (the large arcs and the first two too). */
export function oidOf(bytes: Uint8Array, element: BerElement | undefined, what: string): string {
  const oid = ofTag(element, TAG.objectIdentifier, what);
  const key = latin1(bytes, oid.contentStart, oid.contentEnd);
  const known = OID_TEXT.get(key);
  if (known !== undefined) return known;
  const parsed = asn1js.fromBER(bytes.subarray(oid.start, oid.end), { parseEmbedded: false });
  if (parsed.offset !== oid.end - oid.start || !(parsed.result instanceof asn1js.ObjectIdentifier)) throw new SignatureFormatError(`bad ${what}`);
  const text = parsed.result.valueBlock.toString();
  if (key.length <= MAX_CACHED_OID_BYTES) OID_TEXT.set(key, text);
  return text;
}

/**
 * Time ::= CHOICE { UTCTime, GeneralizedTime } as epoch ms, in the one form RFC 5280 (4.1.2.5) and
 * RFC 5652 (11.3) allow: UTC with seconds, YYMMDDHHMMSSZ (years 50-99 in the 1900s) or
 * YYYYMMDDHHMMSSZ; computed as asn1js's toDate computes it (Date.UTC, whose years 0-99 are 1900-1999).
 */
export function timeOf(bytes: Uint8Array, element: BerElement | undefined, what: string): number {
  const generalized = element?.tag === TAG.generalizedTime;
  const time = generalized ? element : ofTag(element, TAG.utcTime, what);
  const text = latin1(bytes, time.contentStart, time.contentEnd);
  if (!(generalized ? /^\d{14}Z$/ : /^\d{12}Z$/).test(text)) throw new SignatureFormatError(`bad ${what}`);
  const digits = (at: number, count: number) => Number(text.slice(at, at + count));
  let year: number;
  let at: number;
  if (generalized) {
    year = digits(0, 4);
    at = 4;
  } else {
    const short = digits(0, 2);
    year = short >= 50 ? 1900 + short : 2000 + short;
    at = 2;
  }
  const epoch = Date.UTC(year, digits(at, 2) - 1, digits(at + 2, 2), digits(at + 4, 2), digits(at + 6, 2), digits(at + 8, 2));
  if (Number.isNaN(epoch)) throw new SignatureFormatError(`bad ${what}`);
  return epoch;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Character string types whose text asn1js takes a character a byte (its LocalSimpleStringBlock). */
const BYTE_STRINGS = new Set([0x12, 0x13, 0x14, 0x15, 0x16, 0x19, 0x1a, 0x1b, 0x1d]);

/** Code units, big-endian, of `size` bytes each, as asn1js decodes BMPString (2) and UniversalString (4, each cut to 16 bits by String.fromCharCode). */
function codeUnits(value: Uint8Array, size: 2 | 4): string {
  let text = '';
  for (let at = 0; at + size <= value.length; at += size)
    text += String.fromCharCode(size === 2 ? (value[at]! << 8) | value[at + 1]! : value[at + 3]! | (value[at + 2]! << 8));
  return text;
}

/**
 * A name attribute's value as text, as asn1js decodes it (valueBlock.value): UTF8String strictly,
 * else its bytes a character each (asn1js's fallback); the byte-per-character string types;
 * BMPString and UniversalString as asn1js reads them; any other type by asn1js itself, text when it
 * gives a string. undefined when it is not text.
 */
export function textOf(bytes: Uint8Array, element: BerElement): string | undefined {
  const value = contents(bytes, element);
  if (element.tag === 0x0c) {
    try {
      return utf8.decode(value);
    } catch {
      return latin1(value, 0, value.length);
    }
  }
  if (BYTE_STRINGS.has(element.tag)) return latin1(value, 0, value.length);
  if (element.tag === 0x1e) return codeUnits(value, 2);
  if (element.tag === 0x1c) return codeUnits(value, 4);
  const parsed = asn1js.fromBER(bytes.subarray(element.start, element.end), { parseEmbedded: false });
  const text = (parsed.result as { valueBlock?: { value?: unknown } }).valueBlock?.value;
  return parsed.offset === -1 || typeof text !== 'string' ? undefined : text;
}
