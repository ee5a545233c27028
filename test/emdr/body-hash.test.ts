import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { bodyHash } from '../../src/emdr/intake/body/body-hash.js';

/**
 * The body hash is stored with every request and compared on each retry (the idempotency key's
 * second half): a new way of computing it must give the same hash as before, or a retry sent across
 * an upgrade becomes a new request. The reference: one update per member, as it was first written.
 */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

function reference(body: Record<string, unknown>, bytes?: { member: string; value: Buffer }): string {
  const hash = createHash('sha256');
  for (const key of Object.keys(body).sort()) {
    const text = key === bytes?.member ? bytes.value : typeof body[key] === 'string' ? (body[key] as string) : canonical(body[key]);
    hash.update(`${JSON.stringify(key)}:${Buffer.byteLength(text)}:`);
    hash.update(text);
  }
  return hash.digest('hex');
}

describe('bodyHash', () => {
  const document = Buffer.from('PGE+0L/RgNC40LLQtdGCPC9hPg=='.repeat(400));
  it.each([
    [
      'a RegisterDocument body with its document as bytes',
      { localUid: 'ü-1', kind: '6', document: 'AAAA', meta: { z: [1, 2.5, null], a: 'é' } },
      { member: 'document', value: document },
    ],
    [
      'a document as bytes larger than one update',
      { localUid: 'u', document: 'AAAA' },
      { member: 'document', value: Buffer.from('PGE+0L/RgNC40LLQtdGCPC9hPg=='.repeat(120_000)) },
    ],
    ['members larger than one update, and surrogate pairs', { big: 'x'.repeat(3 * 1024 * 1024 + 7), small: 's', emoji: '😀'.repeat(700_000) }, undefined],
    ['no members', {}, undefined],
  ])('is the reference hash for %s', async (_name, body, bytes) => {
    expect(await bodyHash(body, bytes)).toBe(reference(body, bytes));
  });

  it('is returned at once for a body whose members are all small (a 10 KiB acknowledgement waits for no promise), as a promise with a large one', async () => {
    const small = bodyHash({ localUid: 'u', document: 'AAAA' }, { member: 'document', value: document });
    expect(typeof small).toBe('string');
    expect(small).toBe(reference({ localUid: 'u', document: 'AAAA' }, { member: 'document', value: document }));
    const large = bodyHash({ big: 'x'.repeat(1024 * 1024 + 1) });
    expect(large).toBeInstanceOf(Promise);
    expect(await large).toBe(reference({ big: 'x'.repeat(1024 * 1024 + 1) }));
  });

  it('is the same for the same members in another order', async () => {
    expect(await bodyHash({ a: 1, b: { d: 2, c: 3 } })).toBe(await bodyHash({ b: { c: 3, d: 2 }, a: 1 }));
  });
});
