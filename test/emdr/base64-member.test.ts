import { describe, expect, it } from 'vitest';
import { decodeStrictBase64, parseJsonBody, PLACEHOLDER, parseWithBase64Member } from '../../src/emdr/intake/body/base64-member.js';
import { decodeBase64Strict, isStrictBase64 } from '../../src/emdr/values/values.js';

/** The scanner that keeps RegisterDocument's document out of the parsed body: it takes a body only when that changes nothing but memory. */
const base64 = Buffer.concat([Buffer.from('<a>любой текст</a>'), Buffer.from([0xfb, 0xef, 0xff])]).toString('base64');

function split(text: string) {
  return parseWithBase64Member(Buffer.from(text), 'document');
}

describe('parseWithBase64Member', () => {
  it('is tested with base64 that has every kind of character', () => {
    expect(base64).toMatch(/^(?=.*\+)(?=.*\/)(?=.*[0-9])(?=.*=).*$/);
  });

  it.each([
    ['a plain body', JSON.stringify({ localUid: 'u', document: base64, signature: 'AAAA' })],
    ['the member first, with whitespace around', ` \r\n{ "document" :\t"${base64}" , "kind": "6" }\n`],
    ['padding', JSON.stringify({ document: 'QQ==', kind: '6' })],
    [
      'nested members named document, escapes and brackets in other strings',
      JSON.stringify({ a: { document: 'x' }, b: [{ document: 'y' }, '"}]\\{['], document: base64, c: [1, -2.5e3, true, null, {}], d: '\u0000' }),
    ],
  ])('keeps the value of %s as bytes, and the rest parses as JSON.parse of the whole', (_name, text) => {
    const result = split(text)!;
    expect(result).toBeDefined();
    expect(result.body.document).toBe(PLACEHOLDER);
    const whole = JSON.parse(text) as Record<string, unknown>;
    expect(Object.keys(result.body)).toEqual(Object.keys(whole));
    expect({ ...result.body, document: result.value.toString('latin1') }).toEqual(whole);
  });

  it('gives a view into the body, not a copy', () => {
    const raw = Buffer.from(JSON.stringify({ document: base64 }));
    expect(parseWithBase64Member(raw, 'document')!.value.buffer).toBe(raw.buffer);
  });

  it.each([
    ['an escaped slash', `{"document":"${base64.replaceAll('/', '\\/')}"}`],
    ['a unicode escape', '{"document":"AA\\u0041A"}'],
    ['not base64', JSON.stringify({ document: 'not base64!' })],
    ['a length not a multiple of 4', JSON.stringify({ document: 'AAAAA' })],
    ['three padding characters', JSON.stringify({ document: 'A===' })],
    ['padding in the middle', JSON.stringify({ document: 'AA==AAAA' })],
    ['an empty value', JSON.stringify({ document: '' })],
    ['a control character', '{"document":"AA\nA"}'],
    ['a value that is not a string', JSON.stringify({ document: ['AAAA'] })],
    ['the member twice', `{"document":"AAAA","document":"${base64}"}`],
    ['an escaped key', `{"docum\\u0065nt":"${base64}"}`],
    ['the member only nested', JSON.stringify({ a: { document: base64 } })],
    ['no member', JSON.stringify({ kind: '6' })],
    ['an array at the top', JSON.stringify([{ document: base64 }])],
    ['a byte order mark', `\ufeff${JSON.stringify({ document: base64 })}`],
    ['a trailing comma', `{"document":"${base64}",}`],
    ['text after the object', `{"document":"${base64}"} x`],
    ['an unclosed object', `{"document":"${base64}"`],
    ['an invalid value elsewhere', `{"kind": tru, "document":"${base64}"}`],
    ['an empty body', ''],
  ])('leaves a body with %s to the ordinary parse', (_name, text) => {
    expect(split(text)).toBeUndefined();
  });
});

/** Every text of up to 4 of `characters`, and 20,000 longer ones, mostly of the alphabet (strict texts come up as well as every kind of near miss). */
function base64Candidates(characters: readonly string[]): string[] {
  const texts: string[] = [''];
  for (let length = 1; length <= 4; length += 1) {
    for (const text of texts.filter((candidate) => candidate.length === length - 1)) for (const character of characters) texts.push(text + character);
  }
  let seed = 24;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (let count = 0; count < 20_000; count += 1) {
    const length = 4 * (1 + Math.floor(random() * 6));
    let text = '';
    for (let i = 0; i < length; i += 1) text += random() < 0.9 ? 'AQz9+/'[Math.floor(random() * 6)] : characters[Math.floor(random() * characters.length)];
    if (random() < 0.3) text = text.slice(0, -2) + (random() < 0.5 ? '==' : 'A=');
    texts.push(text);
  }
  return texts.filter((candidate) => candidate.length > 0);
}

/** The decoder against the rule: undefined exactly where isStrictBase64 says no, else Buffer.from's bytes. */
function expectAgreement(decode: (text: string) => Buffer | undefined, texts: readonly string[]): void {
  let strict = 0;
  for (const text of texts) {
    const decoded = decode(text);
    expect(decoded === undefined, JSON.stringify(text)).toBe(!isStrictBase64(text));
    if (decoded) {
      strict += 1;
      expect(decoded.equals(Buffer.from(text, 'base64'))).toBe(true);
    }
  }
  expect(strict).toBeGreaterThan(1_000);
}

// Every character class Node's decoder treats its own way: the alphabet, padding, base64url's two,
// whitespace it skips, and bytes outside ASCII.
const characters = ['A', 'Q', 'z', '9', '+', '/', '=', '-', '_', ' ', '\n', '*', '\u0000', '\u0080', '\u00ff'];

describe('decodeStrictBase64', () => {
  it('agrees with isStrictBase64 and Buffer.from on every text of up to 4 characters of those, and on 20,000 longer ones', () => {
    expectAgreement((text) => decodeStrictBase64(Buffer.from(text, 'latin1')), base64Candidates(characters));
  });
});

describe('decodeBase64Strict (the signature, checked by decoding it)', () => {
  it('agrees with isStrictBase64 and Buffer.from on the same texts, and on characters beyond latin1 and lone surrogates', () => {
    expectAgreement(decodeBase64Strict, base64Candidates([...characters, '\u0100', '\u20ac', '\ud83d', '\uffff']));
  });
});

describe('parseJsonBody with a large member', () => {
  /** A member of 3 MiB of base64, over DECODED_MEMBER_BYTES: checked a slice at a time. */
  const large = Buffer.alloc(3 * 1024 * 1024 * 0.75, 0x5a).toString('base64');

  it('keeps a valid one as bytes, beside the body', async () => {
    const { body, member } = await parseJsonBody(Buffer.from(JSON.stringify({ kind: '6', document: large })), 'document');
    expect(body).toEqual({ kind: '6', document: PLACEHOLDER });
    expect(member!.value.toString('latin1')).toBe(large);
    // Over DECODED_MEMBER_BYTES: PostgreSQL decodes it from chunks, this process holds no decoded copy.
    expect(member!.decoded).toBeUndefined();
  });

  it('keeps a small one decoded too', async () => {
    const bytes = Buffer.from('a document of a few bytes');
    const { body, member } = await parseJsonBody(Buffer.from(JSON.stringify({ document: bytes.toString('base64') })), 'document');
    expect(body).toEqual({ document: PLACEHOLDER });
    expect(member!.decoded).toEqual(bytes);
  });

  it('leaves one with a stray byte past its first slice to the ordinary parse', async () => {
    const stray = `${large.slice(0, 2 * 1024 * 1024)}!${large.slice(2 * 1024 * 1024 + 1)}`;
    const { body, member } = await parseJsonBody(Buffer.from(JSON.stringify({ document: stray })), 'document');
    expect(body).toEqual({ document: stray });
    expect(member).toBeUndefined();
  });
});
