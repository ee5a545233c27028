/**
 * A JSON body with one large base64 member (RegisterDocument's `document`, up to ~27 MiB of text)
 * parsed without turning that member into a string. Parsing the whole would hold the body bytes,
 * their decoded text and JSON.parse's copy of the member at once; here the member's value stays a
 * view into the body's Buffer and only the rest of the body is parsed, with a placeholder in its
 * place. Any body the scanner does not take is parsed as a whole, so only memory differs, never
 * an answer.
 */

/** What the parsed body holds in place of the member: valid for the schema and for isStrictBase64. */
export const PLACEHOLDER = 'AAAA';

/**
 * A member of up to this many bytes of base64 is decoded here as it is checked (one native pass, no
 * scan of our own), its bytes stored as they are; a larger one is checked byte by byte and decoded
 * by PostgreSQL from chunks (handlers.ts), so this process never holds a decoded copy of it.
 */
export const DECODED_MEMBER_BYTES = 1024 * 1024;

/**
 * A member kept out of the parsed body: its base64 (a view into the body) and, up to
 * DECODED_MEMBER_BYTES, its decoded bytes. It goes with the parsed body to the handler (the router's
 * OperationRequest), never kept by the request: in a WeakMap keyed by the request (as it was), the
 * body's buffers lived through every young collection until the next full one, which V8 then started
 * for their memory every ~1,100 acknowledgements, marking the whole heap each time
 * (docs/benchmarks/register-document-profile.md, fifth pass).
 */
export interface KeptMember {
  value: Buffer;
  decoded: Buffer | undefined;
}

/** A parsed body, and its large base64 member when one was kept out of it. */
export interface ParsedBody {
  body: unknown;
  member?: KeptMember;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const EQUALS = 0x3d;
const DASH = 0x2d;
const UNDERSCORE = 0x5f;
const WHITESPACE = new Set([0x20, 0x09, 0x0a, 0x0d]);
const BASE64_ALPHABET = new Uint8Array(256);
for (const char of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/') BASE64_ALPHABET[char.charCodeAt(0)] = 1;

function skipWhitespace(bytes: Buffer, at: number): number {
  while (WHITESPACE.has(bytes[at]!)) at += 1;
  return at;
}

/** The index after the string that opens at `at` (escapes skipped), or -1 when it does not close. */
function skipString(bytes: Buffer, at: number): number {
  // Most strings hold no escape: the next quote ends them (both found natively).
  const quote = bytes.indexOf(QUOTE, at + 1);
  if (quote < 0) return -1;
  if (!bytes.subarray(at + 1, quote).includes(BACKSLASH)) return quote + 1;
  for (let i = at + 1; i < bytes.length; i += 1) {
    if (bytes[i] === BACKSLASH) i += 1;
    else if (bytes[i] === QUOTE) return i + 1;
  }
  return -1;
}

/**
 * The index after the JSON value at `at`, or -1. Only right for valid JSON: whatever it makes of
 * invalid JSON, the caller's JSON.parse of the rest fails, and the body goes the ordinary way.
 */
function skipValue(bytes: Buffer, at: number): number {
  let depth = 0;
  for (let i = at; i < bytes.length; i += 1) {
    const byte = bytes[i]!;
    if (byte === QUOTE) {
      i = skipString(bytes, i);
      if (i < 0) return -1;
      if (depth === 0) return i;
      i -= 1;
    } else if (byte === LBRACE || byte === LBRACKET) depth += 1;
    else if (byte === RBRACE || byte === RBRACKET) {
      if (depth === 0) return i;
      depth -= 1;
      if (depth === 0) return i + 1;
    } else if (depth === 0 && (byte === COMMA || WHITESPACE.has(byte))) return i;
  }
  return depth === 0 ? bytes.length : -1;
}

/** Where the data of base64 from `start` to `end` ends: before at most two `=`. */
function dataEndOf(bytes: Buffer, start: number, end: number): number {
  let dataEnd = end;
  while (dataEnd > start && end - dataEnd < 2 && bytes[dataEnd - 1] === EQUALS) dataEnd -= 1;
  return dataEnd;
}

function inAlphabet(bytes: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i += 1) if (BASE64_ALPHABET[bytes[i]!] === 0) return false;
  return true;
}

/** The same rule as isStrictBase64 (acceptance.ts), on bytes: alphabet, at most two `=` at the end, length a multiple of 4. */
function isStrictBase64Bytes(bytes: Buffer, start: number, end: number): boolean {
  return (end - start) % 4 === 0 && inAlphabet(bytes, start, dataEndOf(bytes, start, end));
}

/**
 * A large member is checked this much at a time, the event loop free between slices: a 24 MiB
 * document checked at once held it some 35 ms (150 on a loaded machine), in one piece with the
 * rest of the request's intake.
 */
const CHECKED_SLICE_BYTES = 1024 * 1024;

/** Lets the event loop serve what waits (other requests, /healthz) before going on. */
export const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** isStrictBase64Bytes a slice at a time, yielding to the event loop between slices. */
async function isStrictBase64InSlices(bytes: Buffer, start: number, end: number): Promise<boolean> {
  if ((end - start) % 4 !== 0) return false;
  const dataEnd = dataEndOf(bytes, start, end);
  for (let at = start; at < dataEnd; at += CHECKED_SLICE_BYTES) {
    if (at > start) await yieldToLoop();
    if (!inAlphabet(bytes, at, Math.min(dataEnd, at + CHECKED_SLICE_BYTES))) return false;
  }
  return true;
}

/**
 * The bytes of `base64` when it is strict base64 (isStrictBase64's rule), else undefined, in native
 * passes: Node's decoder also takes base64url's `-` and `_` (looked for first), and skips or stops
 * at any other byte outside the alphabet, so such text decodes to fewer bytes than its length says:
 * with a of its n characters in the alphabet and p trailing `=` (at most two), a non-strict text
 * has a ≤ n - p - 1, hence at most ⌊6(n - p - 1)/8⌋ < 3n/4 - p bytes.
 */
export function decodeStrictBase64(base64: Buffer): Buffer | undefined {
  const length = base64.length;
  if (length % 4 !== 0 || base64.includes(DASH) || base64.includes(UNDERSCORE)) return undefined;
  const padding = base64[length - 1] === EQUALS ? (base64[length - 2] === EQUALS ? 2 : 1) : 0;
  const decoded = Buffer.from(base64.toString('latin1'), 'base64');
  return decoded.length === (length / 4) * 3 - padding ? decoded : undefined;
}

/**
 * A JSON object whose top-level member `name` occurs once, with a non-empty string value of strict
 * base64 (so no escapes): the object parsed with PLACEHOLDER as that value, and the value's bytes
 * (a view into `raw`, no copy). Undefined for any other body (escaped or non-base64 value, the
 * member twice or not at all, a key with escapes, invalid JSON).
 *
 * Why the answers match JSON.parse of the whole body: the value is one string token either way
 * (base64 has no quote, backslash or control character), so the rest parses if and only if the
 * whole body does, to the same members in the same order.
 */
export function parseWithBase64Member(raw: Buffer, name: string): ({ body: Record<string, unknown> } & KeptMember) | undefined {
  const split = splitMember(raw, name);
  if (split === undefined || (split.decoded === undefined && !isStrictBase64Bytes(raw, split.start, split.end))) return undefined;
  return { body: split.body, value: raw.subarray(split.start, split.end), decoded: split.decoded };
}

/** A member split off the parsed body (parseWithBase64Member): where its value lies in the body, and its decoded bytes when it is small. */
interface Split {
  body: Record<string, unknown>;
  start: number;
  end: number;
  decoded: Buffer | undefined;
}

/**
 * parseWithBase64Member but for the check of a large value (over DECODED_MEMBER_BYTES), which is
 * left to the caller: a small value is checked and decoded here.
 */
function splitMember(raw: Buffer, name: string): Split | undefined {
  const key = Buffer.from(JSON.stringify(name));
  let at = skipWhitespace(raw, 0);
  if (raw[at] !== LBRACE) return undefined;
  at = skipWhitespace(raw, at + 1);
  let value: { start: number; end: number; decoded: Buffer | undefined } | undefined;
  while (raw[at] === QUOTE) {
    const keyEnd = skipString(raw, at);
    if (keyEnd < 0 || raw.subarray(at, keyEnd).includes(BACKSLASH)) return undefined;
    const isMember = raw.subarray(at, keyEnd).equals(key);
    at = skipWhitespace(raw, keyEnd);
    if (raw[at] !== COLON) return undefined;
    at = skipWhitespace(raw, at + 1);
    if (isMember) {
      if (value !== undefined || raw[at] !== QUOTE) return undefined;
      const end = raw.indexOf(QUOTE, at + 1);
      if (end <= at + 1) return undefined;
      const small = end - (at + 1) <= DECODED_MEMBER_BYTES;
      const decoded = small ? decodeStrictBase64(raw.subarray(at + 1, end)) : undefined;
      if (small && decoded === undefined) return undefined;
      value = { start: at + 1, end, decoded };
      at = end + 1;
    } else {
      at = skipValue(raw, at);
      if (at < 0) return undefined;
    }
    at = skipWhitespace(raw, at);
    if (raw[at] !== COMMA) break;
    at = skipWhitespace(raw, at + 1);
  }
  if (value === undefined || raw[at] !== RBRACE) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8', 0, value.start) + PLACEHOLDER + raw.toString('utf8', value.end));
  } catch {
    return undefined;
  }
  return { body: body as Record<string, unknown>, ...value };
}

/**
 * Parses a request body of UTF-8 JSON (a BOM dropped). No bytes, or JSON `null`, is no body
 * (undefined: a required body is reported missing); any other JSON value is the body, for the
 * schema to judge. With `memberName`, a body parseWithBase64Member takes keeps that member as
 * bytes (`member`), a large one checked a slice at a time between other work. Throws SyntaxError
 * for text that is not JSON.
 */
export async function parseJsonBody(raw: Buffer, memberName: string | undefined): Promise<ParsedBody> {
  if (memberName !== undefined) {
    const split = splitMember(raw, memberName);
    if (split !== undefined && (split.decoded !== undefined || (await isStrictBase64InSlices(raw, split.start, split.end)))) {
      return { body: split.body, member: { value: raw.subarray(split.start, split.end), decoded: split.decoded } };
    }
  }
  let text = raw.toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (text.trim() === '') return { body: undefined };
  return { body: JSON.parse(text) ?? undefined };
}
