import { createHash, type Hash } from 'node:crypto';
import { yieldToLoop } from './base64-member.js';

const HASHED_CHARACTERS_PER_UPDATE = 1024 * 1024;

/**
 * Hashes the UTF-8 of `text` a slice at a time: hashing a long string in one update converts all
 * of it to UTF-8 at once. A slice never ends between the two halves of a surrogate pair.
 */
async function hashText(hash: Hash, text: string): Promise<void> {
  for (let start = 0; start < text.length; ) {
    if (start > 0) await yieldToLoop();
    let end = Math.min(start + HASHED_CHARACTERS_PER_UPDATE, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end += 1;
    hash.update(text.slice(start, end));
    start = end;
  }
}

/** Hashes `bytes` a slice at a time, the event loop free between slices (a 24 MiB document in one update held it ~30 ms). */
async function hashBytes(hash: Hash, bytes: Buffer): Promise<void> {
  for (let start = 0; start < bytes.length; start += HASHED_CHARACTERS_PER_UPDATE) {
    if (start > 0) await yieldToLoop();
    hash.update(bytes.subarray(start, start + HASHED_CHARACTERS_PER_UPDATE));
  }
}

/** JSON with every object's members sorted by name (arrays keep their order): one text per value, however it was sent. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const members = Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value);
}

/** One member as it is hashed: its head (`"name":length:`) and its text, or its bytes (the member kept as bytes). */
interface HashedMember {
  head: string;
  text: string | Buffer;
}

const isSmall = (member: HashedMember) => member.text.length <= HASHED_CHARACTERS_PER_UPDATE;

/**
 * A SHA-256 over the body's members sorted by name, each value as its UTF-8 length and text (a
 * string as it is, anything else in canonical JSON), so the same JSON with its members in another
 * order is the same request; without one big serialized copy of the body. `bytes` stands for one
 * string member kept as its ASCII bytes: the same hash as the string. The small members go to the
 * hash together, one update between large ones (an update per member cost more than the hashing).
 * A body whose members are all small is hashed at once and the hash returned as it is (a 10 KiB
 * RegisterDocument's: no promise to wait for); one with a large member, a slice at a time, yielding
 * to the event loop between slices.
 */
export function bodyHash(body: Record<string, unknown>, bytes?: { member: string; value: Buffer }): string | Promise<string> {
  const members = Object.keys(body)
    .sort()
    .map((key): HashedMember => {
      const value = body[key];
      const text = key === bytes?.member ? bytes.value : typeof value === 'string' ? value : canonicalJson(value);
      return { head: `${JSON.stringify(key)}:${Buffer.byteLength(text)}:`, text };
    });
  return members.every(isSmall) ? hashAtOnce(members) : hashInSlices(members);
}

/** Every member at once: the strings in one update, each member kept as bytes in one of its own. */
function hashAtOnce(members: readonly HashedMember[]): string {
  const hash = createHash('sha256');
  let pending = '';
  for (const { head, text } of members) {
    if (typeof text === 'string') {
      pending += head + text;
      continue;
    }
    hash.update(pending + head);
    pending = '';
    hash.update(text);
  }
  return hash.update(pending).digest('hex');
}

/** The members with a large one among them: the small ones together, a large one a slice at a time with the loop free between slices. */
async function hashInSlices(members: readonly HashedMember[]): Promise<string> {
  const hash = createHash('sha256');
  let pending = '';
  for (const member of members) {
    const { head, text } = member;
    if (typeof text === 'string' && isSmall(member)) {
      pending += head + text;
      continue;
    }
    hash.update(pending + head);
    pending = '';
    if (Buffer.isBuffer(text)) await hashBytes(hash, text);
    else await hashText(hash, text);
  }
  return hash.update(pending).digest('hex');
}
