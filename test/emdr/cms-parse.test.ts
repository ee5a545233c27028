import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import * as asn1js from 'asn1js';
import { AsnConvert, AsnParser, OctetString } from '@peculiar/asn1-schema';
import { ContentInfo, id_messageDigest, id_signingTime, SignedData, type SignerInfo as CmsSignerInfo } from '@peculiar/asn1-cms';
import {
  BasicConstraints,
  type Certificate as X509Certificate,
  id_ce_basicConstraints,
  id_ce_keyUsage,
  id_ce_subjectKeyIdentifier,
  KeyUsage,
  KeyUsageFlags,
  type Name,
  SubjectKeyIdentifier,
  Time,
} from '@peculiar/asn1-x509';
import { gostKeyParts, parseCertificate, parseSignedData, SignatureFormatError, type Certificate, type SignerInfo } from '../../src/emdr/signatures/cms/cms.js';
import { checkBerBounds, elementAt } from '../../src/emdr/signatures/ber/ber-bounds.js';
import { textOf, timeOf } from '../../src/emdr/signatures/ber/ber-fields.js';
import { TestPki, type Issued } from '../support/signing.js';
import { derElements } from '../support/der.js';

/**
 * cms/ reads certificates and signers from the walked elements by their structure (ber-fields.ts).
 * Its yardstick is the maintained library's own mapping (@peculiar/asn1-cms, asn1-x509), which it replaced for its
 * cost: every field the checks read must be what the mapping gives, from DER and BER alike, and
 * what the mapping refuses must be refused (a SignatureFormatError).
 */

const DOCUMENT = Buffer.from('<ClinicalDocument xmlns="urn:hl7-org:v3"><title>Протокол консультации</title></ClinicalDocument>\n');
const DOCTOR = { surname: 'Петров', givenName: 'Сергей Иванович', snils: '08765432102' };

let pki: TestPki;
let ca: Issued;
let doctor: Issued;
let encipherment: Issued;
let gost: Issued;

beforeAll(() => {
  pki = new TestPki({ gost: true });
  ca = pki.issue({ algorithm: 'rsa', commonName: 'Тестовый УЦ', ca: true });
  doctor = pki.issue({ algorithm: 'rsa', commonName: 'Петров Сергей Иванович', person: DOCTOR, issuer: ca, ogrn: '1027700132195' });
  encipherment = pki.issue({ algorithm: 'rsa', commonName: 'Шифрование', encipherment: true });
  gost = pki.issue({ algorithm: 'gost2012_256', commonName: 'ГОСТ', person: DOCTOR });
});

afterAll(() => pki?.remove());

const hex = (bytes: ArrayBuffer | ArrayBufferView) =>
  Buffer.from(bytes instanceof ArrayBuffer ? new Uint8Array(bytes) : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)).toString('hex');

/** The text of a name attribute as the mapping gives it (main's reader before cms.ts read the parse itself). */
function mappedText(value: Name[number][number]['value']): string | undefined {
  const text = value.utf8String ?? value.printableString ?? value.teletexString ?? value.bmpString ?? value.universalString ?? value.ia5String;
  if (text !== undefined) return text;
  if (!value.anyValue) return undefined;
  const parsed = asn1js.fromBER(value.anyValue);
  const block = parsed.result as unknown as { valueBlock?: { value?: unknown } };
  return parsed.offset === -1 || typeof block.valueBlock?.value !== 'string' ? undefined : block.valueBlock.value;
}

const SUBJECT = { commonName: '2.5.4.3', surname: '2.5.4.4', givenName: '2.5.4.42', snils: '1.2.643.100.3', ogrn: '1.2.643.100.1' } as const;

function mappedSubjectText(name: Name): Record<string, string> {
  const text: Record<string, string> = {};
  for (const rdn of name)
    for (const attribute of rdn) {
      const key = Object.entries(SUBJECT).find(([, oid]) => oid === attribute.type)?.[0];
      const value = key && text[key] === undefined ? mappedText(attribute.value) : undefined;
      if (key && value !== undefined) text[key] = value.slice(0, 256);
    }
  return text;
}

const mappedAlgorithm = (algorithm: { algorithm: string; parameters?: ArrayBuffer | null }) =>
  algorithm.parameters && hex(algorithm.parameters) !== '0500'
    ? { oid: algorithm.algorithm, parameters: hex(algorithm.parameters) }
    : { oid: algorithm.algorithm };

/** What the checks read of a certificate, from @peculiar/asn1-x509's own mapping of it. */
function mappedCertificate(certificate: X509Certificate) {
  const tbs = certificate.tbsCertificate;
  const extension = (id: string) => tbs.extensions?.find((candidate) => candidate.extnID === id)?.extnValue.buffer;
  const ski = extension(id_ce_subjectKeyIdentifier);
  const basic = extension(id_ce_basicConstraints);
  const usage = extension(id_ce_keyUsage);
  return {
    der: hex(AsnConvert.serialize(certificate)),
    tbs: hex(AsnConvert.serialize(tbs)),
    serial: hex(tbs.serialNumber),
    issuer: hex(AsnConvert.serialize(tbs.issuer)),
    subject: hex(AsnConvert.serialize(tbs.subject)),
    subjectText: mappedSubjectText(tbs.subject),
    notBefore: tbs.validity.notBefore.getTime().getTime(),
    notAfter: tbs.validity.notAfter.getTime().getTime(),
    publicKey: { algorithm: mappedAlgorithm(tbs.subjectPublicKeyInfo.algorithm), key: hex(tbs.subjectPublicKeyInfo.subjectPublicKey) },
    signatureAlgorithm: mappedAlgorithm(certificate.signatureAlgorithm),
    signature: hex(certificate.signatureValue),
    subjectKeyIdentifier: ski && hex(AsnParser.parse(ski, SubjectKeyIdentifier).buffer),
    isCa: basic && AsnParser.parse(basic, BasicConstraints).cA,
    keyUsage: usage && AsnParser.parse(usage, KeyUsage).toNumber(),
  };
}

/** The only value of a signed attribute, as main's reader required. */
function soleValue(signer: CmsSignerInfo, id: string): ArrayBuffer | undefined {
  const attributes = signer.signedAttrs?.filter((attribute) => attribute.attrType === id) ?? [];
  if (attributes.length > 1 || attributes.some((attribute) => attribute.attrValues.length !== 1)) throw new Error(`${id}: not one value`);
  return attributes[0]?.attrValues[0];
}

/** What the checks read of a signer, from @peculiar/asn1-cms's mapping. */
function mappedSigner(signer: CmsSignerInfo) {
  const digest = soleValue(signer, id_messageDigest);
  const time = soleValue(signer, id_signingTime);
  const sid = signer.sid.issuerAndSerialNumber
    ? { issuer: hex(AsnConvert.serialize(signer.sid.issuerAndSerialNumber.issuer)), serial: hex(signer.sid.issuerAndSerialNumber.serialNumber) }
    : { subjectKeyIdentifier: hex(signer.sid.subjectKeyIdentifier!.buffer) };
  return {
    sid,
    digestAlgorithm: mappedAlgorithm(signer.digestAlgorithm),
    signatureAlgorithm: mappedAlgorithm(signer.signatureAlgorithm),
    signature: hex(signer.signature.buffer),
    messageDigest: digest && hex(AsnParser.parse(digest, OctetString).buffer),
    signingTime: time && AsnParser.parse(time, Time).getTime().getTime(),
  };
}

/** The library's reading of a signature: throws where it refuses one. */
function mapped(bytes: Buffer) {
  const signedData = AsnParser.parse(AsnParser.parse(bytes, ContentInfo).content, SignedData);
  return {
    certificates: (signedData.certificates ?? []).flatMap((choice) => (choice.certificate ? [mappedCertificate(choice.certificate)] : [])),
    signers: signedData.signerInfos.map(mappedSigner),
  };
}

const algorithm = ({ oid, parameters }: Certificate['signatureAlgorithm']) => (parameters ? { oid, parameters: hex(parameters) } : { oid });

/** The same fields of our parse. */
function ourCertificate(certificate: Certificate) {
  return {
    der: hex(certificate.der),
    tbs: hex(certificate.tbs),
    serial: hex(certificate.serial),
    issuer: hex(certificate.issuer),
    subject: hex(certificate.subject),
    subjectText: { ...certificate.subjectText },
    notBefore: certificate.notBefore,
    notAfter: certificate.notAfter,
    publicKey: { algorithm: algorithm(certificate.publicKey.algorithm), key: hex(certificate.publicKey.key) },
    signatureAlgorithm: algorithm(certificate.signatureAlgorithm),
    signature: hex(certificate.signature),
    subjectKeyIdentifier: certificate.subjectKeyIdentifier && hex(certificate.subjectKeyIdentifier),
    isCa: certificate.isCa,
    keyUsage: certificate.keyUsage,
  };
}

function ourSigner(signer: SignerInfo) {
  const sid =
    'issuer' in signer.sid
      ? { issuer: hex(signer.sid.issuer), serial: hex(signer.sid.serial) }
      : { subjectKeyIdentifier: hex(signer.sid.subjectKeyIdentifier) };
  return {
    sid,
    digestAlgorithm: algorithm(signer.digestAlgorithm),
    signatureAlgorithm: algorithm(signer.signatureAlgorithm),
    signature: hex(signer.signature),
    messageDigest: signer.signedAttributes?.messageDigest && hex(signer.signedAttributes.messageDigest),
    signingTime: signer.signedAttributes?.signingTime,
  };
}

function ours(bytes: Buffer) {
  const signedData = parseSignedData(bytes);
  return { certificates: signedData.certificates.map(ourCertificate), signers: signedData.signers.map(ourSigner) };
}

/** An element of a DER encoding as a tree, to re-encode it changed or as BER. */
interface Node {
  tag: number;
  content: Buffer;
  children?: Node[];
  /** The element as it was read (its tag, length and content). */
  encoding?: Buffer;
}

function tree(bytes: Buffer): Node[] {
  return derElements(bytes).map((element) => ((element.tag & 0x20) !== 0 ? { ...element, children: tree(element.content) } : element));
}

function lengthOf(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

const tlv = (tag: number, content: Buffer) => Buffer.concat([Buffer.from([tag]), lengthOf(content.length), content]);

/** DER, or BER with every constructed element's length indefinite. */
function encode(node: Node, indefinite = false): Buffer {
  if (!node.children) return tlv(node.tag, node.content);
  const content = Buffer.concat(node.children.map((child) => encode(child, indefinite)));
  return indefinite ? Buffer.concat([Buffer.from([node.tag, 0x80]), content, Buffer.from([0, 0])]) : tlv(node.tag, content);
}

/** The parts of a signature's tree the changes below reach. */
function partsOf(signature: Buffer) {
  const [contentInfo] = tree(signature);
  const signedData = contentInfo!.children![1]!.children![0]!;
  const fields = signedData.children!;
  const certificates = fields.find((field) => field.tag === 0xa0)?.children ?? [];
  const signer = fields.at(-1)!.children![0]!;
  return { contentInfo: contentInfo!, certificates, signer, tbs: (index: number) => certificates[index]!.children![0]! };
}

/** An OCTET STRING in the constructed form (BER), its bytes in parts of `size`. */
function inParts(node: Node, size: number): Node {
  const parts: Node[] = [];
  for (let offset = 0; offset < node.content.length; offset += size) parts.push({ tag: 0x04, content: node.content.subarray(offset, offset + size) });
  return { tag: 0x24, content: Buffer.alloc(0), children: parts };
}

const signedBy = (signer: Issued, chain: Issued[] = []) => pki.sign(DOCUMENT, signer, chain);

describe('certificates and signers read by their structure', () => {
  it('gives what the library maps of each certificate (a CA, an end entity, one for encipherment, a GOST key) and signer, from DER and BER alike', () => {
    for (const signature of [signedBy(doctor, [ca]), signedBy(encipherment), signedBy(gost)]) {
      const expected = mapped(signature);
      expect(expected.certificates.length).toBeGreaterThan(0);
      const { contentInfo } = partsOf(signature);
      // BER as CryptoPro writes it: indefinite lengths everywhere, inside the certificates too.
      for (const bytes of [signature, encode(contentInfo, true)]) expect(ours(bytes)).toEqual(expected);
    }
    const subjects = parseSignedData(signedBy(doctor, [ca])).certificates.map((certificate) => certificate.subjectText);
    expect(subjects).toContainEqual({
      commonName: 'Петров Сергей Иванович',
      surname: 'Петров',
      givenName: 'Сергей Иванович',
      snils: '08765432102',
      ogrn: '1027700132195',
    });
    const flags = parseSignedData(signedBy(doctor, [ca])).certificates.map((certificate) => [certificate.isCa, certificate.keyUsage]);
    expect(flags).toEqual(
      expect.arrayContaining([
        [false, KeyUsageFlags.digitalSignature | KeyUsageFlags.nonRepudiation],
        [true, KeyUsageFlags.keyCertSign | KeyUsageFlags.cRLSign],
      ]),
    );
  });

  it('joins OCTET STRINGs sent in parts (BER): the signature value and the messageDigest', () => {
    const signature = signedBy(doctor, [ca]);
    const expected = mapped(signature).signers;
    const { contentInfo, signer } = partsOf(signature);
    const value = signer.children!.findIndex((child) => child.tag === 0x04);
    signer.children![value] = inParts(signer.children![value]!, 7);
    const attributes = signer.children!.find((child) => child.tag === 0xa0)!.children!;
    const digest = attributes.find((attribute) => hex(attribute.children![0]!.content) === '2a864886f70d010904')!;
    digest.children![1]!.children![0] = inParts(digest.children![1]!.children![0]!, 5);
    for (const indefinite of [false, true]) expect(ours(encode(contentInfo, indefinite)).signers).toEqual(expected);
  });

  it('keeps a certificate it read, and gives it for the same certificate in BER as in DER', () => {
    const signature = signedBy(gost);
    const first = parseSignedData(signature).certificates[0]!;
    expect(parseSignedData(signature).certificates[0]).toBe(first);
    expect(parseSignedData(encode(partsOf(signature).contentInfo, true)).certificates[0]).toBe(first);
    expect(ourCertificate(parseCertificate(Buffer.from(first.der)))).toEqual(ourCertificate(first));
  });

  /** Changes of a real signature that the library's mapping refuses. */
  const refused: Array<[string, (parts: ReturnType<typeof partsOf>) => void]> = [
    ['a SignerInfo without its signature value', ({ signer }) => signer.children!.pop()],
    [
      'a signed attribute whose values are a SEQUENCE',
      ({ signer }) => (signer.children!.find((child) => child.tag === 0xa0)!.children![0]!.children![1]!.tag = 0x30),
    ],
    ['a certificate whose tbs signature algorithm is an INTEGER', ({ tbs }) => (tbs(0).children![2] = { tag: 0x02, content: Buffer.from([1]) })],
    ['a certificate whose version holds an OCTET STRING', ({ tbs }) => (tbs(0).children![0]!.children![0]!.tag = 0x04)],
    ['a certificate without its validity', ({ tbs }) => tbs(0).children!.splice(4, 1)],
    // asn1js reads a time it cannot parse as 1899-12-31, without an error; the library's mapping refuses it.
    ['a name whose attribute is a UTCTime that is not a time', ({ tbs }) => (tbs(0).children![3]!.children![0]!.children![0]!.children![1]!.tag = 0x17)],
    [
      'a certificate whose extension is marked critical by an INTEGER',
      ({ tbs }) => (extensionsOf(tbs(0))[0]!.children![1] = { tag: 0x02, content: Buffer.from([1]) }),
    ],
    ['a certificate whose extension value is an INTEGER', ({ tbs }) => (extensionsOf(tbs(0))[0]!.children!.at(-1)!.tag = 0x02)],
  ];

  function extensionsOf(tbs: Node): Node[] {
    return tbs.children!.find((field) => field.tag === 0xa3)!.children![0]!.children!;
  }

  it.each(refused)('refuses %s, as the library does', (_, change) => {
    const signature = signedBy(doctor);
    const parts = partsOf(signature);
    change(parts);
    const bytes = encode(parts.contentInfo);
    expect(() => mapped(bytes)).toThrow();
    expect(() => parseSignedData(bytes)).toThrow(SignatureFormatError);
  });

  it('checks the structure of a signed attribute the checks do not read: refused with its values a SEQUENCE, after the unchanged one was read', () => {
    const signature = signedBy(doctor);
    // Read once unchanged (a cache of accepted attributes, as cms.ts once kept, must not let the changed one through).
    expect(ours(signature).signers).toHaveLength(1);
    const parts = partsOf(signature);
    const attributes = parts.signer.children!.find((child) => child.tag === 0xa0)!.children!;
    const capabilities = attributes.find((attribute) => hex(attribute.children![0]!.content) === '2a864886f70d01090f')!;
    // Its values a SEQUENCE, not a SET: the same bytes but one.
    expect(capabilities.children![1]!.tag).toBe(0x31);
    capabilities.children![1]!.tag = 0x30;
    const bytes = encode(parts.contentInfo);
    expect(() => mapped(bytes)).toThrow();
    expect(() => parseSignedData(bytes)).toThrow(SignatureFormatError);
    // The unchanged attribute in another signature is still read as the library reads the signer.
    const again = signedBy(doctor);
    expect(ours(again).signers.map(({ sid, ...rest }) => rest)).toEqual(mapped(again).signers.map(({ sid, ...rest }) => rest));
  });

  it("reads each signer's fields from its own bytes: another signer of the same CA, an algorithm the library refuses", () => {
    const nurse = pki.issue({ algorithm: 'rsa', commonName: 'Сидорова Анна', issuer: ca });
    const byDoctor = signedBy(doctor, [ca]);
    const byNurse = signedBy(nurse, [ca]);
    const sidOf = (signature: Buffer) => ours(signature).signers[0]!.sid;
    // The same issuer, serial numbers of one length: identifiers that differ in one byte.
    expect(sidOf(byDoctor)).toEqual(mapped(byDoctor).signers[0]!.sid);
    expect(sidOf(byNurse)).toEqual(mapped(byNurse).signers[0]!.sid);
    expect(sidOf(byNurse)).not.toEqual(sidOf(byDoctor));
    // The digest algorithm, read unchanged just now, with its OBJECT IDENTIFIER made an INTEGER of the same bytes.
    const parts = partsOf(byDoctor);
    parts.signer.children![2]!.children![0]!.tag = 0x02;
    const bytes = encode(parts.contentInfo);
    expect(() => mapped(bytes)).toThrow();
    expect(() => parseSignedData(bytes)).toThrow(SignatureFormatError);
  });

  it('reads a GOST key as the library maps it, its point also from an OCTET STRING sent in parts, and refuses a key that is no OCTET STRING', () => {
    const { publicKey } = parseSignedData(signedBy(gost)).certificates[0]!;
    const expected = Buffer.from(AsnParser.parse(publicKey.key, OctetString).buffer);
    expect(expected).toHaveLength(64);
    const parts = gostKeyParts(publicKey);
    expect(parts.paramSet).toBe('1.2.643.2.2.35.1');
    expect(Buffer.from(parts.point)).toEqual(expected);
    const inPieces = encode(inParts({ tag: 0x04, content: expected }, 10));
    expect(Buffer.from(gostKeyParts({ ...publicKey, key: inPieces }).point)).toEqual(expected);
    for (const key of [tlv(0x02, expected), tlv(0x04, expected).subarray(0, 40), Buffer.alloc(0)]) {
      expect(() => gostKeyParts({ ...publicKey, key })).toThrow(SignatureFormatError);
    }
  });

  it('refuses a SignerInfo with a field after its unsignedAttrs (the library reads it, leaving the field out)', () => {
    const parts = partsOf(signedBy(doctor));
    parts.signer.children!.push({ tag: 0xa1, content: Buffer.alloc(0), children: [] }, { tag: 0x05, content: Buffer.alloc(0) });
    const bytes = encode(parts.contentInfo);
    expect(mapped(bytes).signers).toHaveLength(1);
    expect(() => parseSignedData(bytes)).toThrow(SignatureFormatError);
  });

  it('refuses what the library refuses in an extension it reads: basicConstraints of another type, keyUsage not a BIT STRING', () => {
    for (const [id, value] of [
      ['551d13', tlv(0x30, tlv(0x04, Buffer.from([1])))],
      ['551d0f', tlv(0x04, Buffer.from([0x80]))],
    ] as const) {
      const signature = signedBy(doctor);
      const parts = partsOf(signature);
      const extension = extensionsOf(parts.tbs(0)).find((candidate) => hex(candidate.children![0]!.content) === id)!;
      extension.children!.at(-1)!.content = value;
      const bytes = encode(parts.contentInfo);
      expect(() => mapped(bytes)).toThrow();
      expect(() => parseSignedData(bytes)).toThrow(SignatureFormatError);
    }
  });

  it('reads a signature changed in its certificates or signer only where the library reads it, and then the same fields; refuses the rest with a SignatureFormatError', () => {
    const signature = signedBy(doctor, [ca]);
    // What cms.ts reads: the certificates and the signer infos (the rest of the SignedData is checked as BER and by its tags).
    const [contentInfo] = tree(signature);
    const fields = contentInfo!.children![1]!.children![0]!.children!;
    const offsets = [fields.find((field) => field.tag === 0xa0)!, fields.at(-1)!].map(({ content }) => {
      const start = content.byteOffset - signature.byteOffset;
      return fc.integer({ min: start, max: start + content.length - 1 });
    });
    const at = fc.oneof(...offsets);
    // A certificate's tag made [0] to [3] is another CertificateChoice (RFC 5652, 10.2.2), which cms.ts leaves out; the library
    // reads one tagged [0] as a certificate all the same.
    const certificateTags = fields.find((field) => field.tag === 0xa0)!.children!.map(({ encoding }) => encoding!.byteOffset - signature.byteOffset);
    const change = fc.record({ at, mask: fc.integer({ min: 1, max: 255 }) });
    const counts = { both: 0, libraryOnly: 0, neither: 0 };
    fc.assert(
      fc.property(fc.array(change, { minLength: 1, maxLength: 2 }), (changes) => {
        fc.pre(changes.every((change) => !certificateTags.includes(change.at)));
        const bytes = Buffer.from(signature);
        for (const { at, mask } of changes) bytes[at]! ^= mask;
        let read: ReturnType<typeof ours> | undefined;
        try {
          read = ours(bytes);
        } catch (error) {
          expect(error).toBeInstanceOf(SignatureFormatError);
        }
        let expected: ReturnType<typeof mapped> | undefined;
        let refusal = '';
        try {
          expected = mapped(bytes);
        } catch (error) {
          refusal = String(error);
        }
        if (read) {
          // The library's names and certificates are its own encoding anew, ours are what was received (what was signed): they
          // differ where a change left bytes that encode anew otherwise (a time's digit made ':', a name's UTF-8 made invalid).
          // Ours must be in the signature as sent.
          const sent = (hexBytes: string) => expect(bytes.includes(Buffer.from(hexBytes, 'hex'))).toBe(true);
          const withoutBytes = ({ certificates, signers }: ReturnType<typeof ours>, check: boolean) => ({
            certificates: certificates.map(({ der, tbs, issuer, subject, ...rest }) => {
              if (check) for (const field of [der, tbs, issuer, subject]) sent(field);
              return rest;
            }),
            signers: signers.map(({ sid, ...rest }) => {
              if (check && 'issuer' in sid) sent(sid.issuer!);
              return { ...rest, sid: 'serial' in sid ? { serial: sid.serial } : sid };
            }),
          });
          expect(expected, `the library refuses what cms.ts reads: ${refusal}`).toBeDefined();
          expect(withoutBytes(read, true)).toEqual(withoutBytes(expected!, false));
        }
        counts[read ? 'both' : expected ? 'libraryOnly' : 'neither'] += 1;
      }),
      { numRuns: 1000, seed: 20261128 },
    );
    expect(counts.both).toBeGreaterThan(100);
    console.log('changed signatures read by both, by the library only, by neither:', counts);
  });
});

describe('the element reads that stand for asn1js (ber-fields.ts)', () => {
  const element = (encoding: Buffer) => {
    checkBerBounds(encoding, { maxBytes: 1 << 20, maxElements: 16, maxDepth: 4 });
    return elementAt(encoding, 0);
  };
  const asn1jsValue = (encoding: Buffer) => (asn1js.fromBER(encoding).result as unknown as { valueBlock: { value: unknown } }).valueBlock.value;

  it('decodes each string type as asn1js does: UTF-8 valid or not, a byte a character, BMP and Universal code units', () => {
    const utf8Tags = fc.constant(0x0c);
    const byteTags = fc.constantFrom(0x12, 0x13, 0x14, 0x15, 0x16, 0x19, 0x1a, 0x1b, 0x1d);
    const text = fc.oneof(
      fc.string({ unit: 'binary' }).map((string) => Buffer.from(string, 'utf8')),
      fc.uint8Array({ maxLength: 40 }).map(Buffer.from),
    );
    const cases = fc.oneof(
      fc.tuple(fc.oneof(utf8Tags, byteTags), text),
      fc.tuple(
        fc.constant(0x1e),
        fc.uint8Array({ maxLength: 40 }).map((bytes) => Buffer.from(bytes.subarray(0, bytes.length & ~1))),
      ),
      fc.tuple(
        fc.constant(0x1c),
        fc.uint8Array({ maxLength: 40 }).map((bytes) => Buffer.from(bytes.subarray(0, bytes.length & ~3))),
      ),
    );
    fc.assert(
      fc.property(cases, ([tag, content]) => {
        const encoding = tlv(tag, content);
        expect(textOf(encoding, element(encoding))).toBe(asn1jsValue(encoding));
      }),
      { numRuns: 3000, seed: 20261128 },
    );
    // A byte order mark (kept), an overlong '/', a surrogate's encoding: where UTF-8 decoders differ.
    for (const hexText of ['efbbbf616263', 'c0af', 'eda080', 'f4908080']) {
      const encoding = tlv(0x0c, Buffer.from(hexText, 'hex'));
      expect(textOf(encoding, element(encoding))).toBe(asn1jsValue(encoding));
    }
  });

  it('reads UTCTime and GeneralizedTime as asn1js computes them (Date.UTC, two-digit years from 1950), and refuses other forms', () => {
    const digits = (count: number) => fc.array(fc.integer({ min: 0, max: 9 }), { minLength: count, maxLength: count }).map((each) => each.join(''));
    const cases = fc.oneof(fc.tuple(fc.constant(0x17), digits(12)), fc.tuple(fc.constant(0x18), digits(14)));
    fc.assert(
      fc.property(cases, ([tag, text]) => {
        const encoding = tlv(tag, Buffer.from(`${text}Z`, 'latin1'));
        const parsed = asn1js.fromBER(encoding).result as asn1js.UTCTime;
        const expected = parsed.toDate().getTime();
        if (Number.isNaN(expected)) expect(() => timeOf(encoding, element(encoding), 'time')).toThrow(SignatureFormatError);
        else expect(timeOf(encoding, element(encoding), 'time')).toBe(expected);
      }),
      { numRuns: 3000, seed: 20261128 },
    );
    for (const text of ['2501010000Z', '250101000000+0300', '20250101000000.5Z']) {
      const encoding = tlv(text.length === 11 || text.length === 17 ? 0x17 : 0x18, Buffer.from(text, 'latin1'));
      expect(() => timeOf(encoding, element(encoding), 'time')).toThrow(SignatureFormatError);
    }
  });
});
