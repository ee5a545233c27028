/**
 * The bounds of a signature's encoding, checked before anything reads its fields: a walk over its
 * tag-length-value elements (definite lengths and BER's indefinite ones) that counts them and their
 * nesting, checks every length against its container and each primitive's form as a decoding
 * library would (asn1js), without allocating per element. The readers (ber-fields.ts, cms/) then
 * meet only input of bounded size, count and depth.
 */

export class SignatureFormatError extends Error {}

export interface BerLimits {
  /** Largest encoding, in bytes. */
  maxBytes: number;
  /** Most elements, at every level together. */
  maxElements: number;
  /** Deepest nesting. */
  maxDepth: number;
}

/** Bytes of a length's long form that anything here needs (a length of 4 GiB). */
const MAX_LENGTH_BYTES = 4;
/** Bytes of a tag's high-tag-number form (CMS and X.509 use single-byte tags). */
const MAX_TAG_BYTES = 4;

/**
 * Throws SignatureFormatError unless `bytes` is one BER element within `limits`. Returns whether its
 * lengths are DER's (definite, in the fewest bytes): then any element of it, as received, is encoded
 * as DER encodes its lengths, and its bytes can stand for it without being encoded anew.
 */
export function checkBerBounds(bytes: Uint8Array, limits: BerLimits): { derLengths: boolean } {
  let derLengths = true;
  if (bytes.length === 0) throw new SignatureFormatError('empty');
  if (bytes.length > limits.maxBytes) throw new SignatureFormatError(`larger than ${limits.maxBytes} bytes`);
  // The end of each open constructed element: an offset, or undefined for an indefinite length (ends at its end-of-contents).
  const open: Array<number | undefined> = [];
  // For each open element, the tag its parts must have: a constructed OCTET or BIT STRING is made of its own type only (0 for any);
  // and whether a part of a BIT STRING left bits unused, which only its last part may.
  const partTags: number[] = [];
  const unusedBitsLeft: boolean[] = [];
  const close = () => {
    open.pop();
    partTags.pop();
    unusedBitsLeft.pop();
  };
  let offset = 0;
  let elements = 0;
  do {
    const limit = open.reduce<number>((nearest, end) => (end === undefined ? nearest : Math.min(nearest, end)), bytes.length);
    // Closes what ends here: definite elements at their end, an indefinite one at its end-of-contents.
    if (open.length > 0 && open.at(-1) === offset) {
      close();
      continue;
    }
    if (open.length > 0 && open.at(-1) === undefined && bytes[offset] === 0 && bytes[offset + 1] === 0) {
      if (offset + 2 > limit) throw new SignatureFormatError('truncated end-of-contents');
      offset += 2;
      close();
      continue;
    }
    if (offset + 2 > limit) throw new SignatureFormatError('truncated element');
    elements += 1;
    if (elements > limits.maxElements) throw new SignatureFormatError(`more than ${limits.maxElements} elements`);
    const tag = bytes[offset]!;
    let cursor = offset + 1;
    if ((tag & 0x1f) === 0x1f) {
      let tagBytes = 0;
      while (cursor < limit && (bytes[cursor]! & 0x80) !== 0) {
        cursor += 1;
        if ((tagBytes += 1) >= MAX_TAG_BYTES) throw new SignatureFormatError('tag too long');
      }
      cursor += 1;
    }
    if (cursor >= limit) throw new SignatureFormatError('truncated element');
    const first = bytes[cursor]!;
    cursor += 1;
    const constructed = (tag & 0x20) !== 0;
    checkUniversalForm(tag);
    const partTag = partTags.at(-1) ?? 0;
    if (partTag !== 0 && ((tag & 0xdf) !== partTag || unusedBitsLeft.at(-1)))
      throw new SignatureFormatError(`bad part of a string of tag 0x${partTag.toString(16)}`);
    if (first === 0x80) {
      if (!constructed) throw new SignatureFormatError('indefinite length of a primitive element');
      open.push(undefined);
      partTags.push(tag === 0x23 || tag === 0x24 ? tag & 0xdf : 0);
      unusedBitsLeft.push(false);
      derLengths = false;
    } else {
      let length = first;
      if (first > 0x80) {
        const count = first & 0x7f;
        if (count > MAX_LENGTH_BYTES || cursor + count > limit) throw new SignatureFormatError('bad length');
        length = 0;
        for (let index = 0; index < count; index += 1) length = length * 256 + bytes[cursor + index]!;
        cursor += count;
        // DER writes a length in the fewest bytes: the long form only from 128, without a leading zero byte.
        if (length < 0x80 || bytes[cursor - count] === 0) derLengths = false;
      }
      const end = cursor + length;
      if (end > limit) throw new SignatureFormatError('element runs past its container');
      if (!constructed) checkPrimitive(tag, bytes, cursor, end);
      if (partTag === 0x03 && !constructed && bytes[cursor] !== 0) unusedBitsLeft[unusedBitsLeft.length - 1] = true;
      if (constructed) {
        open.push(end);
        partTags.push(tag === 0x23 || tag === 0x24 ? tag & 0xdf : 0);
        unusedBitsLeft.push(false);
      } else cursor = end;
    }
    if (open.length > limits.maxDepth) throw new SignatureFormatError(`nested deeper than ${limits.maxDepth} levels`);
    offset = cursor;
  } while (open.length > 0);
  if (offset !== bytes.length) throw new SignatureFormatError('bytes after the signature');
  return { derLengths };
}

/**
 * Universal types that may be constructed: BIT and OCTET STRING (BER may send them in parts),
 * EXTERNAL, EMBEDDED PDV, SEQUENCE and SET. Character strings and times in parts are refused
 * (asn1js decodes some of them as one string of the parts' encodings); SEQUENCE and SET only ever
 * constructed.
 */
const MAY_BE_CONSTRUCTED = new Set([3, 4, 8, 11, 16, 17]);
const CONSTRUCTED_ONLY = new Set([16, 17]);

/**
 * A universal tag in the form its type allows, as an ASN.1 library decoding every element checks it
 * (asn1js): not tag 0 or 15 (reserved), not the high-tag-number form (universal types end below 31).
 */
function checkUniversalForm(tag: number): void {
  if ((tag & 0xc0) !== 0) return;
  const number = tag & 0x1f;
  const constructed = (tag & 0x20) !== 0;
  if (number === 0 || number === 15 || number === 0x1f || (constructed && !MAY_BE_CONSTRUCTED.has(number)) || (!constructed && CONSTRUCTED_ONLY.has(number)))
    throw new SignatureFormatError(`bad universal tag 0x${tag.toString(16)}`);
}

/** The forms of X.680 (47, 46): UTC or with an offset; GeneralizedTime also local, with fractions. */
const UTC_TIME = /^\d{10}(\d{2})?(Z|[+-]\d{4})$/;
const GENERALIZED_TIME = /^\d{10}(\d{2}(\d{2}([.,]\d+)?)?)?(Z|[+-]\d{4})?$/;

/** Bytes `start` to `end` of `bytes` as text, a character a byte (no copy of the bytes). */
export const latin1 = (bytes: Uint8Array, start: number, end: number) => Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start).toString('latin1');

/** The contents of a primitive universal element, where its type fixes their form: what a decoding library refuses. */
function checkPrimitive(tag: number, bytes: Uint8Array, start: number, end: number): void {
  // Indexes, not a view: this runs for every primitive element of every signature.
  const length = end - start;
  const bad =
    (tag === 0x01 && length !== 1) ||
    ((tag === 0x02 || tag === 0x0a) && length === 0) ||
    (tag === 0x05 && length !== 0) ||
    ((tag === 0x06 || tag === 0x0d) && (length === 0 || (bytes[end - 1]! & 0x80) !== 0)) ||
    (tag === 0x03 && (length === 0 || bytes[start]! > 7 || (length === 1 && bytes[start] !== 0))) ||
    (tag === 0x17 && !UTC_TIME.test(latin1(bytes, start, end))) ||
    (tag === 0x18 && !GENERALIZED_TIME.test(latin1(bytes, start, end))) ||
    (tag === 0x1c && length % 4 !== 0) ||
    (tag === 0x1e && length % 2 !== 0);
  if (bad) throw new SignatureFormatError(`bad contents of tag 0x${tag.toString(16)}`);
}

/**
 * The same element with every indefinite length made definite (BER to DER as far as lengths go:
 * the order of a SET's members is kept as the signer wrote it, which is what it signed). For the
 * signed attributes of a BER signature: the signature covers their DER. `bytes` has passed
 * checkBerBounds, so the nesting is bounded.
 */
export function withDefiniteLengths(bytes: Uint8Array): Uint8Array {
  const { element, end } = rewrite(bytes, 0);
  if (end !== bytes.length) throw new SignatureFormatError('bytes after the element');
  return element;
}

function rewrite(bytes: Uint8Array, offset: number): { element: Uint8Array; end: number } {
  let cursor = offset + 1;
  if ((bytes[offset]! & 0x1f) === 0x1f) while ((bytes[cursor++]! & 0x80) !== 0);
  const tag = bytes.subarray(offset, cursor);
  const constructed = (bytes[offset]! & 0x20) !== 0;
  const first = bytes[cursor++]!;
  const parts: Uint8Array[] = [];
  let end: number;
  if (first === 0x80) {
    while (!(bytes[cursor] === 0 && bytes[cursor + 1] === 0)) {
      if (cursor >= bytes.length) throw new SignatureFormatError('truncated element');
      const child = rewrite(bytes, cursor);
      parts.push(child.element);
      cursor = child.end;
    }
    end = cursor + 2;
  } else {
    let length = first;
    if (first > 0x80) {
      length = 0;
      for (let index = 0; index < (first & 0x7f); index += 1) length = length * 256 + bytes[cursor + index]!;
      cursor += first & 0x7f;
    }
    end = cursor + length;
    if (!constructed) parts.push(bytes.subarray(cursor, end));
    else {
      while (cursor < end) {
        const child = rewrite(bytes, cursor);
        parts.push(child.element);
        cursor = child.end;
      }
    }
  }
  const content = Buffer.concat(parts);
  return { element: Buffer.concat([tag, definiteLength(content.length), content]), end };
}

function definiteLength(length: number): Uint8Array {
  if (length < 0x80) return Uint8Array.of(length);
  const bytes: number[] = [];
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return Uint8Array.of(0x80 | bytes.length, ...bytes);
}

/** One element of an encoding that passed checkBerBounds: its first tag byte, where it starts, where its contents start and end, and where it ends. */
export interface BerElement {
  tag: number;
  start: number;
  contentStart: number;
  contentEnd: number;
  end: number;
}

/**
 * The element at `offset` of an encoding that passed checkBerBounds (so every length fits its
 * container and the nesting is bounded): read from its header alone when its length is definite;
 * an indefinite one is walked to its end-of-contents, child by child.
 */
export function elementAt(bytes: Uint8Array, offset: number): BerElement {
  const tag = bytes[offset]!;
  let cursor = offset + 1;
  if ((tag & 0x1f) === 0x1f) while ((bytes[cursor++]! & 0x80) !== 0);
  const first = bytes[cursor++]!;
  if (first === 0x80) {
    const contentStart = cursor;
    while (!(bytes[cursor] === 0 && bytes[cursor + 1] === 0)) cursor = elementAt(bytes, cursor).end;
    return { tag, start: offset, contentStart, contentEnd: cursor, end: cursor + 2 };
  }
  let length = first;
  if (first > 0x80) {
    length = 0;
    for (let index = 0; index < (first & 0x7f); index += 1) length = length * 256 + bytes[cursor + index]!;
    cursor += first & 0x7f;
  }
  return { tag, start: offset, contentStart: cursor, contentEnd: cursor + length, end: cursor + length };
}

/** The children of a constructed element of such an encoding, in order. */
export function berChildren(bytes: Uint8Array, parent: BerElement): BerElement[] {
  const children: BerElement[] = [];
  for (let offset = parent.contentStart; offset < parent.contentEnd; ) {
    const child = elementAt(bytes, offset);
    children.push(child);
    offset = child.end;
  }
  return children;
}
