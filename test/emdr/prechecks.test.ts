import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SaxesParser } from 'saxes';
import { DocumentPartiesParser, partyFindings } from '../../src/emdr/prechecks/document-parties.js';
import { kindFindings } from '../../src/emdr/prechecks/kinds.js';
import { AsnConvert, AsnParser } from '@peculiar/asn1-schema';
import { ContentInfo, SignedData } from '@peculiar/asn1-cms';
import { parseSignedData, readSignature, SignatureFormatError } from '../../src/emdr/signatures/cms/cms.js';
import { DocumentSignatureCheck, type NamedSignature, type SignatureFinding, type VerificationPolicy } from '../../src/emdr/signatures/verify.js';
import { TestPki, type Issued } from '../support/signing.js';
import { derElements } from '../support/der.js';

/**
 * The registry's rules the gateway checks first (classifier 1.2.643.5.1.13.13.99.2.305): for each,
 * a document and signatures the registry would refuse for that reason, made here with openssl
 * (RSA keys, so no engine is needed), and the finding the acceptance stage reports. The same check
 * runs in the document-check worker and in `ehr-gateway document verify`.
 */

const DAY = 86_400_000;
const DOCUMENT = Buffer.from('<ClinicalDocument xmlns="urn:hl7-org:v3"><title>Протокол консультации</title></ClinicalDocument>\n');
const OTHER_DOCUMENT = Buffer.from('<ClinicalDocument xmlns="urn:hl7-org:v3"><title>Другой документ</title></ClinicalDocument>\n');
const DOCTOR = { surname: 'Петров', givenName: 'Сергей Иванович', snils: '08765432102' };

let pki: TestPki;
let organization: Issued;
let doctor: Issued;
let nurse: Issued;

beforeAll(() => {
  pki = new TestPki({ gost: false });
  organization = pki.issue({ algorithm: 'rsa', commonName: 'Тестовая организация' });
  doctor = pki.issue({ algorithm: 'rsa', commonName: 'Петров Сергей Иванович', person: DOCTOR });
  nurse = pki.issue({ algorithm: 'rsa', commonName: 'Сидорова Анна', person: { surname: 'Сидорова', givenName: 'Анна Петровна', snils: '11223344595' } });
});

afterAll(() => pki?.remove());

/** The findings of the acceptance stage's signature check over `document`. */
function check(signatures: NamedSignature[], policy: Partial<VerificationPolicy> = {}, document = DOCUMENT): SignatureFinding[] {
  const verification = new DocumentSignatureCheck(signatures, { now: Date.now(), ...policy });
  if (verification.needsDocument) verification.update(document);
  return verification.finish();
}

const organizationSignature = (bytes: Buffer): NamedSignature => ({ name: 'signature', bytes });
const personal = (index: number, bytes: Buffer, signer: NamedSignature['signer'] = { snils: DOCTOR.snils }): NamedSignature => ({
  name: `personalSignatures/${index}/signature`,
  bytes,
  personal: true,
  ...(signer ? { signer } : {}),
});
const codes = (findings: SignatureFinding[]) => findings.map((finding) => finding.code);

describe('the signature rules of the registry, checked at acceptance', () => {
  it('accepts an organization signature and a personal one whose signer block matches the certificate (names in another case, ё as е)', () => {
    const signer = { snils: '087-654-321 02', lastName: 'ПЕТРОВ', firstName: 'сергей', middleName: 'Иванович' };
    expect(
      check([organizationSignature(pki.sign(DOCUMENT, organization)), personal(0, pki.sign(DOCUMENT, doctor), signer)], {
        documentCreatedAt: Date.now() - DAY,
      }),
    ).toEqual([]);
  });

  it('MULTIPLE_SIGNERS (52): two signers in one container', () => {
    const findings = check([organizationSignature(pki.sign(DOCUMENT, organization, [], { coSigners: [doctor] }))]);
    expect(findings).toEqual([{ code: 'MULTIPLE_SIGNERS', message: 'signature holds 2 signers: send each signature in a container of its own' }]);
  });

  it('MULTIPLE_SIGNERS (52) from the structure alone: neither a certificate nor a signer is parsed to refuse it (issue 21, M2)', () => {
    const threeSigners = pki.sign(DOCUMENT, organization, [], { coSigners: [doctor, nurse] });
    expect(readSignature(threeSigners).shape).toEqual({ attached: false, certificates: 3, signers: 3 });
    expect(readSignature(asIndefiniteBer(threeSigners)).shape).toEqual({ attached: false, certificates: 3, signers: 3 });
    // Its certificates and signer infos made well-formed ASN.1 that is neither: a parse of them fails.
    const unparsable = garbled(threeSigners);
    expect(() => parseSignedData(unparsable)).toThrow(SignatureFormatError);
    const refusal = { code: 'MULTIPLE_SIGNERS', message: 'signature holds 3 signers: send each signature in a container of its own' };
    // Before: SIGNATURE_DECODING_ERROR ("bad certificate"), after parsing every certificate and signer.
    expect(check([organizationSignature(unparsable)])).toEqual([refusal]);
    expect(check([organizationSignature(asIndefiniteBer(unparsable))])).toEqual([refusal]);
    // More signers than a parse would read (16) are still MULTIPLE_SIGNERS (before: SIGNATURE_DECODING_ERROR).
    expect(check([organizationSignature(garbled(threeSigners, 40))])).toEqual([
      { code: 'MULTIPLE_SIGNERS', message: 'signature holds 40 signers: send each signature in a container of its own' },
    ]);
  });

  it('SIGNATURE_DUPLICATION (51): the same certificate signs twice', () => {
    const findings = check([personal(0, pki.sign(DOCUMENT, doctor)), personal(1, pki.sign(DOCUMENT, doctor))]);
    expect(findings).toEqual([
      { code: 'SIGNATURE_DUPLICATION', message: 'personalSignatures/1/signature is made with the same certificate as personalSignatures/0/signature' },
    ]);
  });

  it('INCONSISTENT_DIGESTS (10): signatures of the same digest algorithm over different documents', () => {
    const findings = check([organizationSignature(pki.sign(DOCUMENT, organization)), personal(0, pki.sign(OTHER_DOCUMENT, doctor))]);
    expect(codes(findings)).toEqual(['SIGNATURE_VERIFICATION_ERROR', 'INCONSISTENT_DIGESTS']);
    expect(findings[1]!.message).toBe(
      'personalSignatures/0/signature signs another document digest than signature with the same digest algorithm: signatures of different documents',
    );
  });

  it('INVALID_CERT_KEY_USAGE (12): a certificate whose keyUsage does not allow digitalSignature', () => {
    const encipherment = pki.issue({ algorithm: 'rsa', commonName: 'Только шифрование', encipherment: true });
    expect(check([organizationSignature(pki.sign(DOCUMENT, encipherment))])).toEqual([
      { code: 'INVALID_CERT_KEY_USAGE', message: "signature: the certificate's keyUsage does not allow digitalSignature" },
    ]);
  });

  it("DOC_DATE_MISMATCH_CERT_NOT_BEFORE (9) and _NOT_AFTER (8): the organization's certificate not valid at the document's creation", () => {
    const signature = organizationSignature(pki.sign(DOCUMENT, organization));
    expect(codes(check([signature], { documentCreatedAt: new Date('2024-06-01T09:00:00Z').getTime() }))).toEqual(['DOC_DATE_MISMATCH_CERT_NOT_BEFORE']);
    const shortLived = pki.issue({ algorithm: 'rsa', commonName: 'Организация', notAfter: new Date(Date.now() + DAY) });
    const findings = check([organizationSignature(pki.sign(DOCUMENT, shortLived))], { documentCreatedAt: Date.now() + 2 * DAY });
    expect(codes(findings)).toEqual(['DOC_DATE_MISMATCH_CERT_NOT_AFTER']);
    expect(findings[0]!.message).toMatch(/^signature: the signer's certificate is not valid at the document's creation, /);
  });

  it('PERSONAL_SIG_CERT_NOT_ACTUAL_ON_DOC_CREATION_DT (105): a personal certificate not valid at the creation', () => {
    expect(codes(check([personal(0, pki.sign(DOCUMENT, doctor))], { documentCreatedAt: new Date('2024-06-01T09:00:00Z').getTime() }))).toEqual([
      'PERSONAL_SIG_CERT_NOT_ACTUAL_ON_DOC_CREATION_DT',
    ]);
  });

  it('PERSONAL_SIG_CERT_NOT_ACTUAL_ON_CHECK_DT (125): a personal certificate expired by the check, though valid at signing and creation', () => {
    const shortLived = pki.issue({ algorithm: 'rsa', commonName: 'Петров', notAfter: new Date(Date.now() + DAY) });
    const signature = pki.sign(DOCUMENT, shortLived);
    const checkedLater = { now: Date.now() + 2 * DAY, documentCreatedAt: Date.now() - DAY };
    expect(codes(check([personal(0, signature)], checkedLater))).toEqual(['PERSONAL_SIG_CERT_NOT_ACTUAL_ON_CHECK_DT']);
    // The organization's certificate is held to the creation alone.
    expect(check([organizationSignature(signature)], checkedLater)).toEqual([]);
  });

  it("VALUE_MISMATCH_METADATA_AND_CERTIFICATE (45): the signer block's SNILS or names against the certificate's subject", () => {
    const signature = pki.sign(DOCUMENT, doctor);
    expect(check([personal(0, signature, { snils: '11223344595' })])).toEqual([
      { code: 'VALUE_MISMATCH_METADATA_AND_CERTIFICATE', message: "personalSignatures/0/signature: the signer block's snils differs from the certificate's" },
    ]);
    expect(codes(check([personal(0, signature, { snils: DOCTOR.snils, lastName: 'Сидоров' })]))).toEqual(['VALUE_MISMATCH_METADATA_AND_CERTIFICATE']);
    expect(codes(check([personal(0, signature, { snils: DOCTOR.snils, firstName: 'Сергей', middleName: 'Петрович' })]))).toEqual([
      'VALUE_MISMATCH_METADATA_AND_CERTIFICATE',
    ]);
    // Another worker's certificate for this signer block.
    expect(codes(check([personal(0, pki.sign(DOCUMENT, nurse))]))).toEqual(['VALUE_MISMATCH_METADATA_AND_CERTIFICATE']);
  });
});

const tlv = (tag: number, content: Buffer) => Buffer.concat([Buffer.from([tag]), lengthOf(content.length), content]);

/**
 * A DER signature whose certificates and signer infos (`signers` of them: as many as it has, unless
 * given) are each a SEQUENCE holding an OCTET STRING: the structure of a SignedData, but nothing a
 * parse of a certificate or a signer accepts.
 */
function garbled(der: Buffer, signers?: number): Buffer {
  const junk = tlv(0x30, tlv(0x04, Buffer.alloc(16)));
  const [contentInfo] = derElements(der);
  const [contentType, explicit] = derElements(contentInfo!.content);
  const [signedData] = derElements(explicit!.content);
  const fields = derElements(signedData!.content);
  const rebuilt = fields.map(({ tag, content }, index) => {
    const isSignerInfos = index === fields.length - 1;
    if (!isSignerInfos && !(index >= 3 && tag === 0xa0)) return tlv(tag, content);
    return tlv(tag, Buffer.concat(Array.from({ length: (isSignerInfos && signers) || derElements(content).length }, () => junk)));
  });
  return tlv(0x30, Buffer.concat([tlv(0x06, contentType!.content), tlv(0xa0, tlv(0x30, Buffer.concat(rebuilt)))]));
}

/**
 * A DER signature re-encoded as BER the way CryptoPro writes one: every constructed element with an
 * indefinite length, the signed attributes too; the certificates inside stay as issued (DER).
 */
function asIndefiniteBer(der: Buffer, depth = 0): Buffer {
  return Buffer.concat(
    derElements(der).map(({ tag, content }) => {
      const certificates = depth === 3 && tag === 0xa0;
      if ((tag & 0x20) === 0 || certificates) return Buffer.concat([Buffer.from([tag]), lengthOf(content.length), content]);
      return Buffer.concat([Buffer.from([tag, 0x80]), asIndefiniteBer(content, depth + 1), Buffer.from([0, 0])]);
    }),
  );
}

function lengthOf(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

/**
 * A document's header as СЭМД write it: the author (SNILS, the worker's id of root `….70`, family,
 * given, identity:Patronymic), optionally a legalAuthenticator, and the custodian's OGRN in
 * identity:Props.
 */
function documentWithParties(options: { ogrn?: string; legalAuthenticatorSnils?: string } = {}): Buffer {
  const legal = options.legalAuthenticatorSnils
    ? `<legalAuthenticator><assignedEntity><id root="1.2.643.100.3" extension="${options.legalAuthenticatorSnils}"/></assignedEntity></legalAuthenticator>`
    : '';
  return Buffer.from(`<?xml version="1.0" encoding="UTF-8"?>
<ClinicalDocument xmlns="urn:hl7-org:v3" xmlns:identity="urn:hl7-ru:identity">
  <title>Протокол консультации</title>
  <author><assignedAuthor>
    <id root="1.2.643.100.3" extension="087-654-321 02"/>
    <id root="1.2.643.5.1.13.13.12.2.77.7973.100.1.1.70" extension="4"/>
    <assignedPerson><name><family>Петров</family><given>Сергей</given><identity:Patronymic>Иванович</identity:Patronymic></name></assignedPerson>
  </assignedAuthor></author>
  <custodian><assignedCustodian><representedCustodianOrganization>
    <id root="1.2.643.5.1.13.13.12.2.77.7973"/>
    <identity:Props><identity:Ogrn>${options.ogrn ?? '1027700000001'}</identity:Ogrn></identity:Props>
  </representedCustodianOrganization></assignedCustodian></custodian>
  ${legal}
</ClinicalDocument>
`);
}

/** The acceptance stage's findings over a document with a header: the signature check's and the rules between the document, the signer blocks and the certificates. */
function checkWithParties(signatures: NamedSignature[], document: Buffer): SignatureFinding[] {
  const verification = new DocumentSignatureCheck(signatures, { now: Date.now() });
  verification.update(document);
  const parser = new DocumentPartiesParser(new SaxesParser({ xmlns: true }));
  parser.write(document.toString('utf8'));
  return [...verification.finish(), ...partyFindings(parser.finish()!, verification.signedBy())];
}

describe("the signer blocks against the document's medical workers, and the signers' organization against its custodian", () => {
  const ogrnOrganization = () => pki.issue({ algorithm: 'rsa', commonName: 'ГБУЗ Тестовая больница', ogrn: '1027700000001' });
  const block = { snils: '08765432102', localId: '4', lastName: 'Петров', firstName: 'Сергей', middleName: 'Иванович' };

  it('accepts signer blocks that match the document and certificates of its custodian organization', () => {
    const document = documentWithParties({ legalAuthenticatorSnils: '087-654-321 02' });
    expect(checkWithParties([organizationSignature(pki.sign(document, ogrnOrganization())), personal(0, pki.sign(document, doctor), block)], document)).toEqual(
      [],
    );
  });

  it("SIGNER_ORG_MISMATCH (43): the organization's certificate names another OGRN than the document's custodian", () => {
    const document = documentWithParties({ ogrn: '1027700000099' });
    expect(checkWithParties([organizationSignature(pki.sign(document, ogrnOrganization()))], document)).toEqual([
      { code: 'SIGNER_ORG_MISMATCH', message: "signature: the certificate's organization (OGRN) is not the document's custodian organization" },
    ]);
  });

  it('INVALID_DOCTOR_FAMILY (106), INVALID_DOCTOR_NAME (107), INVALID_DOCTOR_PATRONYMIC (108): the signer block names the worker otherwise than the document', () => {
    const document = documentWithParties();
    const findings = (signer: NonNullable<NamedSignature['signer']>) => checkWithParties([personal(0, pki.sign(document, doctor), signer)], document);
    // The certificate says Петров Сергей Иванович too: a block that differs from both answers 45 beside the document's code.
    expect(codes(findings({ ...block, lastName: 'Петрова' }))).toEqual(['VALUE_MISMATCH_METADATA_AND_CERTIFICATE', 'INVALID_DOCTOR_FAMILY']);
    expect(findings({ ...block, lastName: 'Петрова' })[1]!.message).toBe(
      "personalSignatures/0/signer: lastName differs from the document's family name of the worker",
    );
    expect(codes(findings({ ...block, firstName: 'Семён' }))).toEqual(['VALUE_MISMATCH_METADATA_AND_CERTIFICATE', 'INVALID_DOCTOR_NAME']);
    expect(codes(findings({ ...block, middleName: 'Ильич' }))).toEqual(['VALUE_MISMATCH_METADATA_AND_CERTIFICATE', 'INVALID_DOCTOR_PATRONYMIC']);
    // Case and ё are not differences.
    expect(findings({ ...block, lastName: 'ПЕТРОВ', firstName: 'сергей' })).toEqual([]);
  });

  it("INVALID_DOCTOR_ID (111): the signer block's localId is not the worker's id in the document", () => {
    const document = documentWithParties();
    expect(checkWithParties([personal(0, pki.sign(document, doctor), { ...block, localId: '5' })], document)).toEqual([
      { code: 'INVALID_DOCTOR_ID', message: "personalSignatures/0/signer: localId differs from the worker's id in the document" },
    ]);
  });

  it('INVALID_DOCTOR_INFO (110): a signer the document does not name', () => {
    const document = documentWithParties();
    const nurseBlock = { snils: '11223344595', lastName: 'Сидорова' };
    expect(checkWithParties([personal(0, pki.sign(document, nurse), nurseBlock)], document)).toEqual([
      { code: 'INVALID_DOCTOR_INFO', message: "personalSignatures/0/signer: the signer's SNILS is not among the medical workers the document names" },
    ]);
  });

  it('LEGAL_AUTHENTICATOR_NOT_FOUND (109): the worker who gives the document legal force signs nothing in the request', () => {
    const document = documentWithParties({ legalAuthenticatorSnils: '112-233-445 95' });
    expect(codes(checkWithParties([personal(0, pki.sign(document, doctor), block)], document))).toEqual(['LEGAL_AUTHENTICATOR_NOT_FOUND']);
  });
});

describe('BER and DER signatures', () => {
  it('reads a BER signature (indefinite lengths) as it reads a DER one, and verifies both alike', () => {
    const der = pki.sign(DOCUMENT, doctor);
    const ber = asIndefiniteBer(der);
    expect(der[1]).not.toBe(0x80);
    expect(ber[1]).toBe(0x80);
    expect(ber.length).toBeGreaterThan(der.length);
    const [fromDer, fromBer] = [parseSignedData(der), parseSignedData(ber)];
    expect(fromBer.signers).toHaveLength(1);
    expect(Buffer.from(fromBer.certificates[0]!.der).equals(Buffer.from(fromDer.certificates[0]!.der))).toBe(true);
    expect(fromBer.certificates[0]!.subjectText).toEqual({
      commonName: 'Петров Сергей Иванович',
      surname: 'Петров',
      givenName: 'Сергей Иванович',
      snils: DOCTOR.snils,
    });
    expect(check([personal(0, ber)])).toEqual([]);
    expect(check([personal(0, der)])).toEqual([]);
    // Over other bytes, both fail the same way.
    expect(codes(check([personal(0, ber)], {}, OTHER_DOCUMENT))).toEqual(['SIGNATURE_VERIFICATION_ERROR']);
    expect(codes(check([personal(0, der)], {}, OTHER_DOCUMENT))).toEqual(['SIGNATURE_VERIFICATION_ERROR']);
  });
  it('takes the certificate, its names and its key as the parse read them: the same bytes as the library encodes anew, and a certificate seen before from the cache', () => {
    const der = pki.sign(DOCUMENT, doctor);
    const mapped = AsnParser.parse(der, ContentInfo);
    const certificate = AsnParser.parse(mapped.content, SignedData).certificates![0]!.certificate!;
    const read = parseSignedData(der);
    const [first] = read.certificates;
    const encoded = (value: unknown) => Buffer.from(AsnConvert.serialize(value));
    expect(Buffer.from(first!.der).equals(encoded(certificate))).toBe(true);
    expect(Buffer.from(first!.issuer).equals(encoded(certificate.tbsCertificate.issuer))).toBe(true);
    expect(Buffer.from(first!.subject).equals(encoded(certificate.tbsCertificate.subject))).toBe(true);
    expect(Buffer.from(first!.publicKey.info).equals(encoded(certificate.tbsCertificate.subjectPublicKeyInfo))).toBe(true);
    const sid = read.signers[0]!.sid as { issuer: Uint8Array };
    expect(Buffer.from(sid.issuer).equals(encoded(certificate.tbsCertificate.issuer))).toBe(true);
    // The same certificate again (in a BER signature too) is the object read before; another certificate is not.
    expect(parseSignedData(asIndefiniteBer(der)).certificates[0]).toBe(first);
    // A kept certificate holds bytes of its own, not a view that would keep the whole signature alive.
    expect(first!.der.buffer.byteLength).toBe(first!.der.length);
    expect(parseSignedData(pki.sign(DOCUMENT, nurse)).certificates[0]).not.toBe(first);
  });
});

describe('the kinds table (NSI 1.2.643.5.1.13.13.11.1520)', () => {
  it('OBJECT_NOT_FOUND (26) for a kind the table lacks', () => {
    expect(kindFindings('999999', '2026-11-20T09:30:00+03:00')).toEqual([
      { code: 'OBJECT_NOT_FOUND', message: 'kind: 999999 is not a document kind of NSI 1.2.643.5.1.13.13.11.1520 known to this gateway' },
    ]);
  });

  it('NO_DOCUMENT_KIND_ON_DATE (17) for a kind out of force on the creation date, none within its period', () => {
    // 6, «Протокол консультации (PDF/A-1)», was registered until 2024-01-01; 119, «Протокол консультации (CDA) Редакция 4», from 2022-01-01.
    expect(kindFindings('6', '2026-11-20T09:30:00+03:00').map((finding) => finding.code)).toEqual(['NO_DOCUMENT_KIND_ON_DATE']);
    expect(kindFindings('6', '2023-12-31T23:00:00+03:00')).toEqual([]);
    expect(kindFindings('119', '2021-12-31T10:00:00+03:00').map((finding) => finding.code)).toEqual(['NO_DOCUMENT_KIND_ON_DATE']);
    expect(kindFindings('119', '2026-11-20T09:30:00+03:00')).toEqual([]);
  });
});
