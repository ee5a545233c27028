/**
 * The parts of a CMS SignedData (RFC 5652) that signature verification and the registry's signer
 * rules read: the encoding's size, element count and depth are bounded first (ber-bounds.ts), and
 * the SignedData's structure is walked (layoutOf), its counts of certificates and signers bounded
 * then. Each signer's fields are then read from the walk by their structure (ber-fields.ts), each
 * certificate not seen before likewise (certificate.ts): both in DER and in BER with indefinite
 * lengths, as CryptoPro and `openssl cms -stream` write. Counts of attributes and extensions are
 * bounded as they are read. Anything malformed is a SignatureFormatError.
 */
import { id_messageDigest, id_signedData, id_signingTime } from '@peculiar/asn1-cms';
import { checkBerBounds, elementAt, SignatureFormatError, type BerElement, type BerLimits } from '../ber/ber-bounds.ts';
import * as ber from '../ber/ber-fields.ts';
import {
  algorithmOf,
  CERTIFICATE_LIMITS,
  certificateAt,
  derOfElements,
  nameOf,
  type AlgorithmIdentifier,
  type Certificate,
  type DerOf,
} from './certificate.ts';

export { SignatureFormatError } from '../ber/ber-bounds.ts';
export { gostKeyParts, KEY_USAGE, type AlgorithmIdentifier, type Certificate, type SubjectPublicKey, type SubjectText } from './certificate.ts';

/** A signature is a few kilobytes (a chain of certificates at most tens): 1 MiB is far beyond any real one. */
export const MAX_SIGNATURE_BYTES = 1024 * 1024;
const SIGNATURE_LIMITS: BerLimits = { maxBytes: MAX_SIGNATURE_BYTES, maxElements: 20_000, maxDepth: 32 };
const MAX_CERTIFICATES = 32;
const MAX_SIGNERS = 16;
/** One per digest algorithm the signers use: a few. */
const MAX_DIGEST_ALGORITHMS = 64;
const MAX_ATTRIBUTES = 64;
/** Fields of a SignerInfo: version, sid, digestAlgorithm, signedAttrs, signatureAlgorithm, signature, unsignedAttrs. */
const MAX_SIGNER_FIELDS = 7;

export type SignerIdentifier = { issuer: Uint8Array; serial: Uint8Array } | { subjectKeyIdentifier: Uint8Array };

export interface SignedAttributes {
  /** The DER the signature covers: the attributes as a SET OF (RFC 5652, 5.4). */
  der: Uint8Array;
  messageDigest?: Uint8Array;
  signingTime?: number;
}

export interface SignerInfo {
  sid: SignerIdentifier;
  digestAlgorithm: AlgorithmIdentifier;
  signedAttributes?: SignedAttributes;
  signatureAlgorithm: AlgorithmIdentifier;
  signature: Uint8Array;
}

export interface SignedData {
  /** The content is inside the signature (not a detached signature). */
  attached: boolean;
  certificates: Certificate[];
  signers: SignerInfo[];
}

/** An X.509 certificate (DER or BER), e.g. one of a trust store. */
export function parseCertificate(der: Uint8Array): Certificate {
  const { derLengths } = checkBerBounds(der, CERTIFICATE_LIMITS);
  const element = elementAt(der, 0);
  if (element.tag !== ber.TAG.sequence) throw new SignatureFormatError('bad certificate');
  return certificateAt(der, element, derLengths);
}

/** The only value of a signed attribute (Attribute ::= SEQUENCE { attrType, attrValues SET OF }); more than one is malformed. */
function soleValue(bytes: Uint8Array, values: BerElement, what: string): BerElement {
  const [value, other] = ber.childrenOf(bytes, values, 2, what);
  if (value === undefined || other !== undefined) throw new SignatureFormatError(`${what} must have one value`);
  return value;
}

/**
 * The signed attributes ([0] IMPLICIT SET OF Attribute): the DER the signature covers is their
 * encoding with the SET OF tag (RFC 5652, 5.4): a copy as received, its indefinite lengths (BER)
 * made definite, as the signer signed the DER. Each attribute's structure is checked; messageDigest
 * and signingTime are read.
 */
function signedAttributesOf(bytes: Uint8Array, element: BerElement, derOf: DerOf): SignedAttributes {
  const der = Uint8Array.from(derOf(element));
  der[0] = 0x31;
  const result: SignedAttributes = { der };
  for (const attribute of ber.childrenOf(bytes, element, MAX_ATTRIBUTES, 'signedAttrs')) readAttribute(bytes, attribute, result);
  return result;
}

/** One attribute (Attribute ::= SEQUENCE { attrType, attrValues SET OF }) into `result`. */
function readAttribute(bytes: Uint8Array, attribute: BerElement, result: SignedAttributes): void {
  const [type, values] = ber.sequenceOf(bytes, attribute, 2, 'signedAttrs');
  const oid = ber.oidOf(bytes, type, 'signedAttrs');
  const set = ber.ofTag(values, ber.TAG.set, 'signedAttrs');
  if (oid === id_messageDigest) {
    if (result.messageDigest) throw new SignatureFormatError('messageDigest given twice');
    result.messageDigest = ber.octetsOf(bytes, soleValue(bytes, set, 'messageDigest'), 'messageDigest');
  } else if (oid === id_signingTime) {
    if (result.signingTime !== undefined) throw new SignatureFormatError('signingTime given twice');
    result.signingTime = ber.timeOf(bytes, soleValue(bytes, set, 'signingTime'), 'signingTime');
  }
}

/**
 * The SignerInfo at `element`: SEQUENCE { version, sid, digestAlgorithm, [0] IMPLICIT signedAttrs
 * OPTIONAL, signatureAlgorithm, signature OCTET STRING, [1] unsignedAttrs OPTIONAL }, read by its
 * structure, with the encoding of its signedAttrs and of its issuer's name as received. sid ::=
 * IssuerAndSerialNumber (SEQUENCE { issuer, serialNumber }) | [0] IMPLICIT SubjectKeyIdentifier.
 */
function signerAt(bytes: Uint8Array, element: BerElement, derLengths: boolean): SignerInfo {
  const derOf = derOfElements(bytes, derLengths);
  const fields = ber.sequenceOf(bytes, element, MAX_SIGNER_FIELDS, 'SignerInfo');
  const [version, sidElement, digestAlgorithm] = fields;
  ber.ofTag(version, ber.TAG.integer, 'SignerInfo');
  const attributes = ber.contextNumber(bytes, fields[3]) === 0 ? fields[3] : undefined;
  const [signatureAlgorithm, signature, unsigned, ...more] = fields.slice(attributes ? 4 : 3);
  if ((unsigned !== undefined && ber.contextNumber(bytes, unsigned) !== 1) || more.length > 0) throw new SignatureFormatError('bad SignerInfo');
  let sid: SignerIdentifier;
  if (sidElement?.tag === ber.TAG.sequence) {
    const [issuer, serial] = ber.childrenOf(bytes, sidElement, 2, 'SignerIdentifier');
    sid = { issuer: derOf(nameOf(bytes, issuer, 'SignerIdentifier').name), serial: ber.integerBytes(bytes, serial, 'SignerIdentifier') };
  } else if (ber.contextNumber(bytes, sidElement) === 0 && !ber.isConstructed(sidElement!)) {
    sid = { subjectKeyIdentifier: ber.contents(bytes, sidElement!) };
  } else throw new SignatureFormatError('bad SignerIdentifier');
  return {
    sid,
    digestAlgorithm: algorithmOf(bytes, digestAlgorithm, derOf),
    signatureAlgorithm: algorithmOf(bytes, signatureAlgorithm, derOf),
    signature: ber.octetsOf(bytes, signature, 'signature'),
    ...(attributes ? { signedAttributes: signedAttributesOf(bytes, attributes, derOf) } : {}),
  };
}

/** What a SignedData holds, read from its encoding's structure alone (readSignature). */
export interface SignedDataShape {
  /** The content is inside the signature (not a detached signature). */
  attached: boolean;
  /** Entries of its certificates field (CertificateChoices). */
  certificates: number;
  /** Entries of its signerInfos. */
  signers: number;
}

/** The contents of the content type signedData's OBJECT IDENTIFIER, 1.2.840.113549.1.7.2 (one encoding, in BER too; its length may be written long). */
const SIGNED_DATA_OID = Buffer.from([0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x02]);
/** [number] in the one-byte tag form, primitive or constructed: the SignedData's fields are refused in any other form. */
const isContext = (element: BerElement | undefined, number: number) => element !== undefined && (element.tag & 0xdf) === (0x80 | number);
const isOtherCertificateChoice = (element: BerElement) => [0, 1, 2, 3].some((number) => isContext(element, number));

/** A SignedData's shape, and where its certificates and signers are in its encoding. */
interface SignedDataLayout extends SignedDataShape {
  certificateElements: BerElement[];
  signerElements: BerElement[];
}

/**
 * The structure parseSignedData reads (RFC 5652: ContentInfo ::= SEQUENCE { contentType, [0]
 * EXPLICIT content }; SignedData ::= SEQUENCE { version, digestAlgorithms, encapContentInfo, [0]
 * IMPLICIT certificates OPTIONAL, [1] IMPLICIT crls OPTIONAL, signerInfos }), walked over the bytes
 * of an encoding that passed checkBerBounds, with its checks and their messages.
 */
function layoutOf(bytes: Uint8Array): SignedDataLayout {
  const contentInfo = elementAt(bytes, 0);
  if (contentInfo.tag !== ber.TAG.sequence) throw new SignatureFormatError('bad ContentInfo');
  const [contentType, explicit] = ber.childrenOf(bytes, contentInfo, 2, 'ContentInfo');
  if (contentType?.tag !== ber.TAG.objectIdentifier) throw new SignatureFormatError('bad ContentInfo');
  if (!SIGNED_DATA_OID.equals(bytes.subarray(contentType.contentStart, contentType.contentEnd)))
    throw new SignatureFormatError(`content type is not signedData (${id_signedData})`);
  if (!isContext(explicit, 0)) throw new SignatureFormatError('bad content');
  const [signedData] = ber.childrenOf(bytes, explicit!, 1, 'content');
  if (signedData?.tag !== ber.TAG.sequence) throw new SignatureFormatError('bad content');
  const fields = ber.childrenOf(bytes, signedData, 6, 'SignedData');
  const [version, digestAlgorithms, encapContentInfo] = fields;
  const signerInfos = fields.at(-1);
  const optional = fields.slice(3, -1);
  if (
    version?.tag !== ber.TAG.integer ||
    digestAlgorithms?.tag !== ber.TAG.set ||
    encapContentInfo?.tag !== ber.TAG.sequence ||
    signerInfos?.tag !== ber.TAG.set ||
    fields.length < 4 ||
    !optional.every((field) => isContext(field, 0) || isContext(field, 1))
  )
    throw new SignatureFormatError('bad SignedData');
  // digestAlgorithms ::= SET OF AlgorithmIdentifier: not read (each signer names its own), its form checked.
  for (const algorithm of ber.childrenOf(bytes, digestAlgorithms, MAX_DIGEST_ALGORITHMS, 'digestAlgorithms')) {
    const [oid, ...parameters] = ber.childrenOf(bytes, algorithm, Number.POSITIVE_INFINITY, 'digestAlgorithms');
    if (algorithm.tag !== ber.TAG.sequence || oid?.tag !== ber.TAG.objectIdentifier || parameters.length > 1)
      throw new SignatureFormatError('bad digestAlgorithms');
  }
  const [eContentType, eContent] = ber.childrenOf(bytes, encapContentInfo, 2, 'encapContentInfo');
  if (eContentType?.tag !== ber.TAG.objectIdentifier || (eContent !== undefined && !isContext(eContent, 0)))
    throw new SignatureFormatError('bad encapContentInfo');
  const certificates = optional.find((field) => isContext(field, 0));
  const certificateElements = certificates ? ber.childrenOf(bytes, certificates, Number.POSITIVE_INFINITY, 'certificates') : [];
  const signerElements = ber.childrenOf(bytes, signerInfos, Number.POSITIVE_INFINITY, 'signerInfos');
  return { attached: eContent !== undefined, certificates: certificateElements.length, signers: signerElements.length, certificateElements, signerElements };
}

/** A signature walked once: its shape, and its parse (parseSignedData) from the same walk. */
export interface SignatureReading {
  shape: SignedDataShape;
  parse(): SignedData;
}

/**
 * A signature's shape (how many signers and certificates, whether it carries its content), read
 * from the structure of its encoding before any certificate or signer is parsed: what the rules on
 * those counts need (MULTIPLE_SIGNERS, and the bounds of parseSignedData). Parsing them first cost
 * a hostile clinic's refused requests about half a second of a worker each (issue 21, M2: 21
 * containers of 16 signers, 22 ms a container at load 9; the walk takes 0.035 ms). A signature
 * accepted for its shape is then parsed without being walked again.
 * Throws SignatureFormatError for an encoding out of bounds or not a ContentInfo of a SignedData.
 */
export function readSignature(bytes: Uint8Array): SignatureReading {
  const { derLengths } = checkBerBounds(bytes, SIGNATURE_LIMITS);
  const layout = layoutOf(bytes);
  const { attached, certificates, signers } = layout;
  return { shape: { attached, certificates, signers }, parse: () => signedDataOf(bytes, layout, derLengths) };
}

/**
 * A ContentInfo holding a SignedData, DER or BER: its structure walked over the encoding
 * (layoutOf), then each signer (signerAt) and each certificate not seen before read by its
 * structure. A certificate seen before is found by the SHA-256 of its DER and not read again (a
 * clinic signs with a few certificates). The fields nobody reads (digestAlgorithms, crls, the
 * content type of the content) are checked as BER only.
 */
export function parseSignedData(bytes: Uint8Array): SignedData {
  return readSignature(bytes).parse();
}

function signedDataOf(bytes: Uint8Array, layout: SignedDataLayout, derLengths: boolean): SignedData {
  if (layout.certificates > MAX_CERTIFICATES) throw new SignatureFormatError(`certificates: more than ${MAX_CERTIFICATES}`);
  if (layout.signers > MAX_SIGNERS) throw new SignatureFormatError(`signerInfos: more than ${MAX_SIGNERS}`);
  const certificates = layout.certificateElements.flatMap((element) => {
    if (element.tag === ber.TAG.sequence) return [certificateAt(bytes, element, derLengths)];
    // Other CertificateChoices (attribute certificates…, tagged [0] to [3]) play no part here.
    if (isOtherCertificateChoice(element)) return [];
    throw new SignatureFormatError('bad certificates');
  });
  const signers = layout.signerElements.map((element) => ber.decoded('SignerInfo', () => signerAt(bytes, element, derLengths)));
  return { attached: layout.attached, certificates, signers };
}
