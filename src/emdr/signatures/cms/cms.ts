/**
 * The parts of a CMS SignedData (RFC 5652) and of X.509 certificates (RFC 5280) that signature
 * verification and the registry's signer rules read, parsed with a maintained ASN.1 library:
 * asn1js reads the encoding (DER, and BER with indefinite lengths, as CryptoPro and `openssl cms
 * -stream` write), and the fields are read from its parse by their structure, each typed and
 * bounded (@peculiar/asn1-schema's mapping cost more than the parse itself: a test compares the two
 * field by field). Before the library sees a byte, the encoding's size, element count and depth are
 * bounded (ber-bounds.ts), and the SignedData's structure is walked (layoutOf): its counts of
 * certificates and signers are bounded then, and asn1js parses each certificate not seen before
 * alone, and each signer's fields (its signed attributes one by one, those the checks do not read
 * once per encoding). Counts of attributes and extensions are bounded after. Anything malformed is
 * a SignatureFormatError.
 */
import { createHash } from 'node:crypto';
import * as asn1js from 'asn1js';
import { id_messageDigest, id_signedData, id_signingTime } from '@peculiar/asn1-cms';
import { id_ce_basicConstraints, id_ce_keyUsage, id_ce_subjectKeyIdentifier, KeyUsageFlags } from '@peculiar/asn1-x509';
import { berChildren, checkBerBounds, elementAt, SignatureFormatError, withDefiniteLengths, type BerElement, type BerLimits } from './ber-bounds.ts';
import { BoundedCache } from './bounded-cache.ts';

export { SignatureFormatError } from './ber-bounds.ts';

/** A signature is a few kilobytes (a chain of certificates at most tens): 1 MiB is far beyond any real one. */
export const MAX_SIGNATURE_BYTES = 1024 * 1024;
const SIGNATURE_LIMITS: BerLimits = { maxBytes: MAX_SIGNATURE_BYTES, maxElements: 20_000, maxDepth: 32 };
/** A certificate alone (a trust store's): the same bounds. */
const CERTIFICATE_LIMITS: BerLimits = { maxBytes: 256 * 1024, maxElements: 10_000, maxDepth: 32 };
const MAX_CERTIFICATES = 32;
const MAX_SIGNERS = 16;
/** One per digest algorithm the signers use: a few. */
const MAX_DIGEST_ALGORITHMS = 64;
const MAX_ATTRIBUTES = 64;
const MAX_EXTENSIONS = 64;
/** Parts of a constructed (BER) OCTET or BIT STRING. */
const MAX_STRING_PARTS = 1024;

/** Subject attributes of qualified certificates of Russian physical persons (Приказ ФСБ № 795). */
const SUBJECT = {
  commonName: '2.5.4.3',
  surname: '2.5.4.4',
  givenName: '2.5.4.42',
  snils: '1.2.643.100.3',
  ogrn: '1.2.643.100.1',
} as const;

export interface AlgorithmIdentifier {
  oid: string;
  /** The encoding of the parameters, when present (not NULL). */
  parameters?: Uint8Array;
}

export interface SubjectPublicKey {
  algorithm: AlgorithmIdentifier;
  /** The whole SubjectPublicKeyInfo (DER), for Node's crypto. */
  info: Uint8Array;
  /** The BIT STRING's bytes. */
  key: Uint8Array;
}

/** What a certificate says of its subject, as text (absent attributes absent). */
export interface SubjectText {
  commonName?: string;
  surname?: string;
  /** Given name, and patronymic after a space, in Russian qualified certificates. */
  givenName?: string;
  /** SNILS as the certificate writes it (11 digits). */
  snils?: string;
  /** The OGRN of the organization (13 digits): an organization's certificate, or a worker's issued for it. */
  ogrn?: string;
}

export interface Certificate {
  /** The certificate in DER (its lengths made DER's when it came in BER, so a BER copy and a DER copy compare equal). */
  der: Uint8Array;
  /** The tbsCertificate as encoded: what the issuer signed, and the certificate's identity. */
  tbs: Uint8Array;
  serial: Uint8Array;
  /** DER of the issuer and subject names (encoded alike wherever they come from, so they compare). */
  issuer: Uint8Array;
  subject: Uint8Array;
  subjectText: SubjectText;
  notBefore: number;
  notAfter: number;
  publicKey: SubjectPublicKey;
  signatureAlgorithm: AlgorithmIdentifier;
  signature: Uint8Array;
  subjectKeyIdentifier?: Uint8Array;
  /** basicConstraints cA; undefined when the extension is absent. */
  isCa?: boolean;
  /** keyUsage's bits (KeyUsageFlags); undefined when the extension is absent. */
  keyUsage?: number;
}

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

/** keyUsage's digitalSignature and keyCertSign bits (KeyUsageFlags of @peculiar/asn1-x509). */
export const KEY_USAGE = {
  digitalSignature: KeyUsageFlags.digitalSignature,
  nonRepudiation: KeyUsageFlags.nonRepudiation,
  keyCertSign: KeyUsageFlags.keyCertSign,
} as const;

const bytesOf = (buffer: ArrayBuffer | ArrayBufferView): Uint8Array =>
  buffer instanceof ArrayBuffer ? new Uint8Array(buffer) : new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);

/** Runs one library step; its errors (of any kind) become a SignatureFormatError naming `what`. */
function decoded<T>(what: string, step: () => T): T {
  try {
    return step();
  } catch (error) {
    if (error instanceof SignatureFormatError) throw error;
    throw new SignatureFormatError(`bad ${what}`);
  }
}

function bounded<T>(items: readonly T[] | undefined, max: number, what: string): readonly T[] {
  if ((items?.length ?? 0) > max) throw new SignatureFormatError(`${what}: more than ${max}`);
  return items ?? [];
}

/** The children of a constructed node, bounded; a SignatureFormatError for anything else. */
function childrenOf(node: asn1js.AsnType | undefined, max: number, what: string): asn1js.AsnType[] {
  const value = (node as asn1js.Constructed | undefined)?.valueBlock?.value;
  // asn1js reads a SEQUENCE or SET tagged primitive (0x10, 0x11) as one: the tag's constructed bit is checked here.
  if (!Array.isArray(value) || !node!.idBlock.isConstructed) throw new SignatureFormatError(`bad ${what}`);
  return [...bounded(value, max, what)];
}

/**
 * A node of the type `type` itself, or a SignatureFormatError naming `what`: not of a subclass
 * (asn1js's ENUMERATED is an INTEGER, its GeneralizedTime a UTCTime).
 */
function ofType<T>(node: asn1js.AsnType | undefined, type: new (...args: never[]) => T, what: string): T {
  if (node?.constructor !== type) throw new SignatureFormatError(`bad ${what}`);
  return node as T;
}

const oidOf = (node: asn1js.AsnType | undefined, what: string) => ofType(node, asn1js.ObjectIdentifier, what).valueBlock.toString();
const octetsOf = (node: asn1js.AsnType | undefined, what: string) => primitiveBytes(ofType(node, asn1js.OctetString, what), what);
const integerBytes = (node: asn1js.AsnType | undefined, what: string) => ofType(node, asn1js.Integer, what).valueBlock.valueHexView;
/** A BIT STRING's bytes (the count of unused bits aside). */
const bitsOf = (node: asn1js.AsnType | undefined, what: string) => primitiveBytes(ofType(node, asn1js.BitString, what), what);
/**
 * Time ::= CHOICE { UTCTime, GeneralizedTime } as epoch ms, in the one form RFC 5280 (4.1.2.5) and
 * RFC 5652 (11.3) allow: UTC with seconds, YYMMDDHHMMSSZ or YYYYMMDDHHMMSSZ. asn1js reads text it
 * cannot parse as 1899-12-31 without an error, so the text is checked here.
 */
const timeOf = (node: asn1js.AsnType | undefined, what: string) => {
  const generalized = node instanceof asn1js.GeneralizedTime;
  const time = generalized ? node : ofType(node, asn1js.UTCTime, what);
  const pattern = generalized ? /^\d{14}Z$/ : /^\d{12}Z$/;
  const epoch = pattern.test(Buffer.from(time.valueBlock.valueHexView).toString('latin1')) ? time.toDate().getTime() : Number.NaN;
  if (Number.isNaN(epoch)) throw new SignatureFormatError(`bad ${what}`);
  return epoch;
};

/** The bytes of an OCTET or BIT STRING; the constructed form (BER) is joined from its parts. */
function primitiveBytes(node: asn1js.OctetString | asn1js.BitString, what: string): Uint8Array {
  if (!node.valueBlock.isConstructed) return node.valueBlock.valueHexView;
  const parts = childrenOf(node, MAX_STRING_PARTS, what).map((part) => primitiveBytes(ofType(part, node.constructor as typeof asn1js.OctetString, what), what));
  return Buffer.concat(parts);
}

/** AlgorithmIdentifier ::= SEQUENCE { algorithm OBJECT IDENTIFIER, parameters ANY OPTIONAL }; NULL parameters as none. */
function algorithmOf(node: asn1js.AsnType | undefined, derOf: DerOf): AlgorithmIdentifier {
  const [algorithm, parameters] = childrenOf(ofType(node, asn1js.Sequence, 'algorithm'), 2, 'algorithm');
  const oid = oidOf(algorithm, 'algorithm');
  return parameters === undefined || parameters instanceof asn1js.Null ? { oid } : { oid, parameters: derOf(parameters) };
}

/**
 * Name ::= SEQUENCE OF SET OF SEQUENCE { type OBJECT IDENTIFIER, value ANY }, its structure
 * checked, with the subject attributes the checks read as text (any string type: SNILS is a
 * NumericString).
 */
function nameOf(node: asn1js.AsnType | undefined, what: string): { name: asn1js.Sequence; text: SubjectText } {
  const name = ofType(node, asn1js.Sequence, what);
  const text: SubjectText = {};
  for (const rdn of childrenOf(name, MAX_ATTRIBUTES, what)) {
    for (const attribute of childrenOf(ofType(rdn, asn1js.Set, what), MAX_ATTRIBUTES, what)) {
      const [type, value, ...more] = childrenOf(ofType(attribute, asn1js.Sequence, what), 2, what);
      if (value === undefined || more.length > 0) throw new SignatureFormatError(`bad ${what}`);
      const oid = oidOf(type, what);
      const key = SUBJECT_KEYS.find(([, candidate]) => candidate === oid)?.[0];
      const string = (value as { valueBlock?: { value?: unknown } }).valueBlock?.value;
      if (key && text[key] === undefined && typeof string === 'string') text[key] = string.slice(0, 256);
    }
  }
  return { name, text };
}

const SUBJECT_KEYS = Object.entries(SUBJECT) as Array<[keyof SubjectText, string]>;

/**
 * The certificates read before, by the SHA-256 of their DER: a clinic signs its documents with a few
 * certificates, so most signatures carry one seen already, and its mapping is the larger part of a
 * signature's parse. Entries are never changed (a Certificate is read only), and the bound keeps
 * the memory small in each document-check worker.
 */
const CERTIFICATES = new BoundedCache<string, Certificate>(256);
/** Real certificates are a few kilobytes; a larger one is read but not kept, so the cache stays within a few MiB. */
const MAX_CACHED_CERTIFICATE_BYTES = 16 * 1024;

/** An element's bytes as DER writes its lengths: as received when the whole encoding has DER lengths, else with them made so. */
type DerOf = (node: asn1js.AsnType) => Uint8Array;

const derOfNode =
  (derLengths: boolean): DerOf =>
  (node) => {
    const received = bytesOf((node as asn1js.BaseBlock).valueBeforeDecodeView);
    return derLengths ? received : withDefiniteLengths(received);
  };

/** The certificate encoded at `element` of `bytes`: from the cache when its DER was read before, else parsed. */
function certificateAt(bytes: Uint8Array, element: BerElement, derLengths: boolean): Certificate {
  const received = bytes.subarray(element.start, element.end);
  const der = derLengths ? received : withDefiniteLengths(received);
  const key = createHash('sha256').update(der).digest('base64');
  const cached = CERTIFICATES.get(key);
  if (cached) return cached;
  const certificate = decoded('certificate', () =>
    certificateOf(ofType(parsedElement(bytes, element, 'certificate'), asn1js.Sequence, 'certificate'), der, derOfNode(derLengths)),
  );
  if (der.length > MAX_CACHED_CERTIFICATE_BYTES) return certificate;
  const kept = detached(certificate);
  CERTIFICATES.set(key, kept);
  return kept;
}

/** A copy whose bytes are its own: the parse's are views into the whole signature, which a cached entry must not keep alive. */
function detached(certificate: Certificate): Certificate {
  // new Uint8Array(view) copies (Buffer.prototype.slice would not).
  const copy = (bytes: Uint8Array) => new Uint8Array(bytes);
  return {
    ...certificate,
    der: copy(certificate.der),
    tbs: copy(certificate.tbs),
    serial: copy(certificate.serial),
    issuer: copy(certificate.issuer),
    subject: copy(certificate.subject),
    publicKey: {
      algorithm: algorithmCopy(certificate.publicKey.algorithm),
      info: copy(certificate.publicKey.info),
      key: copy(certificate.publicKey.key),
    },
    signatureAlgorithm: algorithmCopy(certificate.signatureAlgorithm),
    signature: copy(certificate.signature),
    ...(certificate.subjectKeyIdentifier ? { subjectKeyIdentifier: copy(certificate.subjectKeyIdentifier) } : {}),
  };
}

const algorithmCopy = (algorithm: AlgorithmIdentifier): AlgorithmIdentifier =>
  algorithm.parameters ? { oid: algorithm.oid, parameters: new Uint8Array(algorithm.parameters) } : { oid: algorithm.oid };

/**
 * What the checks read of a certificate, read from the parse by its structure (RFC 5280:
 * Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signatureValue BIT STRING };
 * tbsCertificate ::= SEQUENCE { [0] version OPTIONAL, serialNumber, signature, issuer, validity,
 * subject, subjectPublicKeyInfo, [1] [2] OPTIONAL, [3] extensions OPTIONAL }): names, keys and the
 * tbsCertificate as the parse read them, not encoded anew.
 */
function certificateOf(node: asn1js.Sequence, der: Uint8Array, derOf: DerOf): Certificate {
  const [tbsNode, signatureAlgorithm, signatureValue] = childrenOf(node, 3, 'certificate');
  const fields = childrenOf(ofType(tbsNode, asn1js.Sequence, 'certificate'), 10, 'certificate');
  const first = isContextTag(fields[0], 0) ? 1 : 0;
  // version ::= [0] EXPLICIT INTEGER.
  if (first === 1) ofType(childrenOf(fields[0], 1, 'version')[0], asn1js.Integer, 'version');
  const [serial, tbsSignature, issuer, validity, subject, publicKeyInfo] = fields.slice(first);
  algorithmOf(tbsSignature, derOf);
  const [notBefore, notAfter] = childrenOf(ofType(validity, asn1js.Sequence, 'validity'), 2, 'validity');
  const [keyAlgorithm, keyBits] = childrenOf(ofType(publicKeyInfo, asn1js.Sequence, 'subjectPublicKeyInfo'), 2, 'subjectPublicKeyInfo');
  const subjectName = nameOf(subject, 'subject');
  const result: Certificate = {
    der,
    tbs: derOf(tbsNode!),
    serial: integerBytes(serial, 'serialNumber'),
    issuer: derOf(nameOf(issuer, 'issuer').name),
    subject: derOf(subjectName.name),
    subjectText: subjectName.text,
    notBefore: timeOf(notBefore, 'validity'),
    notAfter: timeOf(notAfter, 'validity'),
    publicKey: { algorithm: algorithmOf(keyAlgorithm, derOf), key: bitsOf(keyBits, 'subjectPublicKey'), info: derOf(publicKeyInfo!) },
    signatureAlgorithm: algorithmOf(signatureAlgorithm, derOf),
    signature: bitsOf(signatureValue, 'signatureValue'),
  };
  // issuerUniqueID [1], subjectUniqueID [2], extensions [3]: each optional, in that order.
  const optional = fields.slice(first + 6);
  const numbers = optional.map((field) => (field.idBlock.tagClass === 3 ? field.idBlock.tagNumber : 0));
  if (numbers.some((number, index) => number < 1 || number > 3 || number <= (numbers[index - 1] ?? 0))) throw new SignatureFormatError('bad certificate');
  const extensionsNode = optional.find((field) => isContextTag(field, 3));
  const extensions = extensionsNode ? ofType(childrenOf(extensionsNode, 1, 'extensions')[0], asn1js.Sequence, 'extensions') : undefined;
  for (const extension of extensions ? childrenOf(extensions, MAX_EXTENSIONS, 'extensions') : []) readExtension(extension, result);
  return result;
}

/** Extension ::= SEQUENCE { extnID, critical BOOLEAN DEFAULT FALSE, extnValue OCTET STRING }: the three the checks read, into `certificate`. */
function readExtension(extension: asn1js.AsnType, certificate: Certificate): void {
  const parts = childrenOf(ofType(extension, asn1js.Sequence, 'extension'), 3, 'extension');
  if (parts.length < 2 || (parts.length === 3 && !(parts[1] instanceof asn1js.Boolean))) throw new SignatureFormatError('bad extension');
  const id = oidOf(parts[0], 'extension');
  const octets = octetsOf(parts.at(-1), 'extension');
  if (id !== id_ce_subjectKeyIdentifier && id !== id_ce_basicConstraints && id !== id_ce_keyUsage) return;
  const value = asn1js.fromBER(octets, { parseEmbedded: false });
  if (value.offset === -1) throw new SignatureFormatError('bad extension');
  if (id === id_ce_subjectKeyIdentifier) certificate.subjectKeyIdentifier = octetsOf(value.result, 'subjectKeyIdentifier');
  if (id === id_ce_basicConstraints) certificate.isCa = basicConstraintsCa(value.result);
  if (id === id_ce_keyUsage) certificate.keyUsage = keyUsageOf(ofType(value.result, asn1js.BitString, 'keyUsage'));
}

/** BasicConstraints ::= SEQUENCE { cA BOOLEAN DEFAULT FALSE, pathLenConstraint INTEGER OPTIONAL }: cA. */
function basicConstraintsCa(node: asn1js.AsnType): boolean {
  const fields = childrenOf(ofType(node, asn1js.Sequence, 'basicConstraints'), 2, 'basicConstraints');
  const cA = fields[0] instanceof asn1js.Boolean ? fields[0] : undefined;
  const rest = fields.slice(cA ? 1 : 0);
  if (rest.length > 1 || (rest.length === 1 && rest[0]?.constructor !== asn1js.Integer)) throw new SignatureFormatError('bad basicConstraints');
  return cA?.valueBlock.value ?? false;
}

/** keyUsage's named bits as KeyUsageFlags: bit n (the first bit is the first byte's highest) is 2^n; unused bits (BER may set them) left out. */
function keyUsageOf(node: asn1js.BitString): number {
  const bits = primitiveBytes(node, 'keyUsage');
  const unused = node.valueBlock.isConstructed ? 0 : node.valueBlock.unusedBits;
  // The named bits end at decipherOnly (8): two bytes hold them all.
  const count = Math.min(bits.length * 8 - unused, 16);
  let flags = 0;
  for (let bit = 0; bit < count; bit += 1) if ((bits[bit >> 3]! & (0x80 >> (bit & 7))) !== 0) flags |= 1 << bit;
  return flags;
}

/** An X.509 certificate (DER or BER), e.g. one of a trust store. */
export function parseCertificate(der: Uint8Array): Certificate {
  const { derLengths } = checkBerBounds(der, CERTIFICATE_LIMITS);
  const element = elementAt(der, 0);
  if (element.tag !== TAG.sequence) throw new SignatureFormatError('bad certificate');
  return certificateAt(der, element, derLengths);
}

/** The only value of a signed attribute (Attribute ::= SEQUENCE { attrType, attrValues SET OF }); more than one is malformed. */
function soleValue(values: asn1js.AsnType | undefined, what: string): asn1js.AsnType {
  const [value, other] = childrenOf(ofType(values, asn1js.Set, what), 2, what);
  if (value === undefined || other !== undefined) throw new SignatureFormatError(`${what} must have one value`);
  return value;
}

/**
 * The signed attributes: the DER the signature covers is their encoding with the SET OF tag
 * (RFC 5652, 5.4): as received, its indefinite lengths (BER) made definite, the signer signed the DER.
 */
function signedAttributesOf(node: asn1js.AsnType, derOf: DerOf): SignedAttributes {
  const result = signedAttributesDer(derOf(node));
  for (const attribute of childrenOf(node, MAX_ATTRIBUTES, 'signedAttrs')) readAttribute(result, attribute);
  return result;
}

/** The signed attributes' DER as signed: a copy of their encoding (its lengths made DER's when they were not) with the SET OF tag. */
function signedAttributesDer(encoding: Uint8Array): SignedAttributes {
  const der = Uint8Array.from(encoding);
  der[0] = 0x31;
  return { der };
}

/** One attribute (Attribute ::= SEQUENCE { attrType, attrValues SET OF }) into `result`; whether it is one the checks read. */
function readAttribute(result: SignedAttributes, attribute: asn1js.AsnType): boolean {
  const [type, values] = childrenOf(ofType(attribute, asn1js.Sequence, 'signedAttrs'), 2, 'signedAttrs');
  const oid = oidOf(type, 'signedAttrs');
  ofType(values, asn1js.Set, 'signedAttrs');
  if (oid === id_messageDigest) {
    if (result.messageDigest) throw new SignatureFormatError('messageDigest given twice');
    result.messageDigest = octetsOf(soleValue(values, 'messageDigest'), 'messageDigest');
    return true;
  }
  if (oid === id_signingTime) {
    if (result.signingTime !== undefined) throw new SignatureFormatError('signingTime given twice');
    result.signingTime = timeOf(soleValue(values, 'signingTime'), 'signingTime');
    return true;
  }
  return false;
}

/**
 * The attributes that the checks do not read (contentType, SMIMECapabilities, signingCertificateV2…)
 * that asn1js parsed before and that passed readAttribute, by their encoding: a signer's software
 * writes the same ones in each signature (openssl's SMIMECapabilities was half of a signer's parse).
 * An attribute whose bytes differ in any way is parsed and checked again.
 */
const ACCEPTED_ATTRIBUTES = new BoundedCache<string, true>(256);
const MAX_CACHED_ATTRIBUTE_BYTES = 1024;

/**
 * The signed attributes at `element` ([0] IMPLICIT SET OF Attribute, located by the walk), each
 * attribute parsed by asn1js alone, as in the whole SignerInfo's parse, but for those it accepted
 * before (ACCEPTED_ATTRIBUTES).
 */
function signedAttributesAt(bytes: Uint8Array, element: BerElement, derLengths: boolean): SignedAttributes {
  const received = bytes.subarray(element.start, element.end);
  const result = signedAttributesDer(derLengths ? received : withDefiniteLengths(received));
  for (const attribute of berChildrenBounded(bytes, element, MAX_ATTRIBUTES, 'signedAttrs')) {
    const encoding = bytes.subarray(attribute.start, attribute.end);
    const key = encoding.length <= MAX_CACHED_ATTRIBUTE_BYTES ? Buffer.from(encoding).toString('latin1') : undefined;
    if (key !== undefined && ACCEPTED_ATTRIBUTES.get(key)) continue;
    const read = readAttribute(result, parsedElement(bytes, attribute, 'SignerInfo'));
    if (!read && key !== undefined) ACCEPTED_ATTRIBUTES.set(key, true);
  }
  return result;
}

/**
 * A SignerInfo ::= SEQUENCE { version, sid, digestAlgorithm, [0] IMPLICIT signedAttrs OPTIONAL,
 * signatureAlgorithm, signature OCTET STRING, [1] unsignedAttrs OPTIONAL }, read from the parse by
 * its structure, with the encoding of its signedAttrs and of its issuer's name as the parse read
 * them. sid ::= IssuerAndSerialNumber (SEQUENCE { issuer, serialNumber }) | [0] IMPLICIT SubjectKeyIdentifier.
 */
function signerOf(children: asn1js.AsnType[], derOf: DerOf, attributesOf: (node: asn1js.AsnType) => SignedAttributes): SignerInfo {
  const [version, sidNode, digestAlgorithm] = children;
  ofType(version, asn1js.Integer, 'SignerInfo');
  const attributesNode = isContextTag(children[3], 0) ? children[3] : undefined;
  const [signatureAlgorithm, signature, unsigned, ...more] = children.slice(attributesNode ? 4 : 3);
  if ((unsigned !== undefined && !isContextTag(unsigned, 1)) || more.length > 0) throw new SignatureFormatError('bad SignerInfo');
  let sid: SignerIdentifier;
  if (sidNode instanceof asn1js.Sequence) {
    const [issuer, serial] = childrenOf(sidNode, 2, 'SignerIdentifier');
    sid = { issuer: derOf(nameOf(issuer, 'SignerIdentifier').name), serial: integerBytes(serial, 'SignerIdentifier') };
  } else if (isContextTag(sidNode, 0) && !sidNode!.idBlock.isConstructed) {
    sid = { subjectKeyIdentifier: (sidNode as asn1js.Primitive).valueBlock.valueHexView };
  } else throw new SignatureFormatError('bad SignerIdentifier');
  return {
    sid,
    digestAlgorithm: algorithmOf(digestAlgorithm, derOf),
    signatureAlgorithm: algorithmOf(signatureAlgorithm, derOf),
    signature: octetsOf(signature, 'signature'),
    ...(attributesNode ? { signedAttributes: attributesOf(attributesNode) } : {}),
  };
}

/**
 * Fields of SignerInfos as asn1js parsed them, by their encoding: the version, the signer's
 * identifier and its algorithms repeat in every signature of one signer. asn1js parses the same
 * bytes alike, and nothing here changes a parse, so each is still read and checked as parsed anew.
 * The signature value (an OCTET STRING) differs in every signature and is not kept.
 */
const PARSED_SIGNER_FIELDS = new BoundedCache<string, asn1js.AsnType>(256);
const MAX_CACHED_FIELD_BYTES = 1024;

function parsedSignerField(bytes: Uint8Array, field: BerElement): asn1js.AsnType {
  const encoding = bytes.subarray(field.start, field.end);
  if (field.tag === 0x04 || encoding.length > MAX_CACHED_FIELD_BYTES) return parsedElement(bytes, field, 'SignerInfo');
  const key = Buffer.from(encoding).toString('latin1');
  const known = PARSED_SIGNER_FIELDS.get(key);
  if (known) return known;
  const node = parsedElement(bytes, field, 'SignerInfo');
  PARSED_SIGNER_FIELDS.set(key, node);
  return node;
}

/** Stands for signed attributes read from the walk (signedAttributesAt) among a SignerInfo's parsed fields: a [0] as asn1js reads one. */
const WALKED_ATTRIBUTES = new asn1js.Constructed({ idBlock: { tagClass: 3, tagNumber: 0 } });

/**
 * The SignerInfo at `element`. In its usual shape (at most 7 fields, the signed attributes fourth,
 * tagged [0] in one byte, each a SEQUENCE) each field is parsed by asn1js alone, and the signed
 * attributes one by one (signedAttributesAt); anything else is parsed whole, as before. Both read
 * the same fields and refuse the same encodings: asn1js parses an element alike alone or inside
 * another, and checkBerBounds has walked the whole encoding.
 */
function signerAt(bytes: Uint8Array, element: BerElement, derLengths: boolean): SignerInfo {
  const derOf = derOfNode(derLengths);
  const fields = element.tag === TAG.sequence ? berChildren(bytes, element) : [];
  const attributes = fields[3];
  if (fields.length <= 7 && attributes?.tag === 0xa0 && berChildren(bytes, attributes).every((attribute) => attribute.tag === TAG.sequence)) {
    const parsed = fields.map((field, index) => (index === 3 ? WALKED_ATTRIBUTES : parsedSignerField(bytes, field)));
    return signerOf(parsed, derOf, () => signedAttributesAt(bytes, attributes, derLengths));
  }
  const node = ofType(parsedElement(bytes, element, 'SignerInfo'), asn1js.Sequence, 'SignerInfo');
  return signerOf(childrenOf(node, 7, 'SignerInfo'), derOf, (attributesNode) => signedAttributesOf(attributesNode, derOf));
}

const isContextTag = (node: asn1js.AsnType | undefined, number: number) => node?.idBlock.tagClass === 3 && node.idBlock.tagNumber === number;

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
const TAG = { integer: 0x02, objectIdentifier: 0x06, sequence: 0x30, set: 0x31 } as const;
const isContext = (element: BerElement | undefined, number: number) => element !== undefined && (element.tag & 0xdf) === (0x80 | number);
const isConstructed = (element: BerElement) => (element.tag & 0x20) !== 0;
const isOtherCertificateChoice = (element: BerElement) => [0, 1, 2, 3].some((number) => isContext(element, number));

/** The children of a constructed element, at most `max` of them, as parseSignedData bounds them. */
function berChildrenBounded(bytes: Uint8Array, element: BerElement, max: number, what: string): BerElement[] {
  if (!isConstructed(element)) throw new SignatureFormatError(`bad ${what}`);
  return [...bounded(berChildren(bytes, element), max, what)];
}

/** The children of a constructed element. */
function berChildrenOf(bytes: Uint8Array, element: BerElement, what: string): BerElement[] {
  if (!isConstructed(element)) throw new SignatureFormatError(`bad ${what}`);
  return berChildren(bytes, element);
}

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
  if (contentInfo.tag !== TAG.sequence) throw new SignatureFormatError('bad ContentInfo');
  const [contentType, explicit] = berChildrenBounded(bytes, contentInfo, 2, 'ContentInfo');
  if (contentType?.tag !== TAG.objectIdentifier) throw new SignatureFormatError('bad ContentInfo');
  if (!SIGNED_DATA_OID.equals(bytes.subarray(contentType.contentStart, contentType.contentEnd)))
    throw new SignatureFormatError(`content type is not signedData (${id_signedData})`);
  if (!isContext(explicit, 0)) throw new SignatureFormatError('bad content');
  const [signedData] = berChildrenBounded(bytes, explicit!, 1, 'content');
  if (signedData?.tag !== TAG.sequence) throw new SignatureFormatError('bad content');
  const fields = berChildrenBounded(bytes, signedData, 6, 'SignedData');
  const [version, digestAlgorithms, encapContentInfo] = fields;
  const signerInfos = fields.at(-1);
  const optional = fields.slice(3, -1);
  if (
    version?.tag !== TAG.integer ||
    digestAlgorithms?.tag !== TAG.set ||
    encapContentInfo?.tag !== TAG.sequence ||
    signerInfos?.tag !== TAG.set ||
    fields.length < 4 ||
    !optional.every((field) => isContext(field, 0) || isContext(field, 1))
  )
    throw new SignatureFormatError('bad SignedData');
  // digestAlgorithms ::= SET OF AlgorithmIdentifier: not read (each signer names its own), its form checked.
  for (const algorithm of berChildrenBounded(bytes, digestAlgorithms, MAX_DIGEST_ALGORITHMS, 'digestAlgorithms')) {
    const [oid, ...parameters] = berChildrenOf(bytes, algorithm, 'digestAlgorithms');
    if (algorithm.tag !== TAG.sequence || oid?.tag !== TAG.objectIdentifier || parameters.length > 1) throw new SignatureFormatError('bad digestAlgorithms');
  }
  const [eContentType, eContent] = berChildrenBounded(bytes, encapContentInfo, 2, 'encapContentInfo');
  if (eContentType?.tag !== TAG.objectIdentifier || (eContent !== undefined && !isContext(eContent, 0))) throw new SignatureFormatError('bad encapContentInfo');
  const certificates = optional.find((field) => isContext(field, 0));
  const certificateElements = certificates ? berChildrenOf(bytes, certificates, 'certificates') : [];
  const signerElements = berChildrenOf(bytes, signerInfos, 'signerInfos');
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

/** One element of an encoding parsed by asn1js alone; it must be the whole of what asn1js reads. */
function parsedElement(bytes: Uint8Array, element: BerElement, what: string): asn1js.AsnType {
  const encoding = bytes.subarray(element.start, element.end);
  // Embedded encodings in OCTET and BIT STRINGs are not parsed on speculation: the few read (extensions) are parsed where they are read.
  const parsed = asn1js.fromBER(encoding, { parseEmbedded: false });
  if (parsed.offset !== encoding.length) throw new SignatureFormatError(`bad ${what}`);
  return parsed.result;
}

/**
 * A ContentInfo holding a SignedData, DER or BER: its structure walked over the encoding
 * (layoutOf), then each signer (signerAt) and each certificate not seen before parsed by asn1js,
 * alone, and read by its structure. A certificate seen before is found by the SHA-256 of its DER and not
 * parsed again: a clinic signs with a few certificates, and asn1js's parse of one was about half
 * of a signature's check. The fields nobody reads (digestAlgorithms, crls, the content type of the
 * content) are checked as BER only.
 */
export function parseSignedData(bytes: Uint8Array): SignedData {
  return readSignature(bytes).parse();
}

function signedDataOf(bytes: Uint8Array, layout: SignedDataLayout, derLengths: boolean): SignedData {
  if (layout.certificates > MAX_CERTIFICATES) throw new SignatureFormatError(`certificates: more than ${MAX_CERTIFICATES}`);
  if (layout.signers > MAX_SIGNERS) throw new SignatureFormatError(`signerInfos: more than ${MAX_SIGNERS}`);
  const certificates = layout.certificateElements.flatMap((element) => {
    if (element.tag === TAG.sequence) return [certificateAt(bytes, element, derLengths)];
    // Other CertificateChoices (attribute certificates…, tagged [0] to [3]) play no part here.
    if (isOtherCertificateChoice(element)) return [];
    throw new SignatureFormatError('bad certificates');
  });
  const signers = layout.signerElements.map((element) => decoded('SignerInfo', () => signerAt(bytes, element, derLengths)));
  return { attached: layout.attached, certificates, signers };
}

/**
 * The parameter set of a GOST R 34.10-2012 public key (RFC 9215, 4: SEQUENCE { publicKeyParamSet,
 * digestParamSet OPTIONAL, … }) and its point x ‖ y (an OCTET STRING in the BIT STRING, RFC 4491, 2.3.2).
 */
export function gostKeyParts(publicKey: SubjectPublicKey): { paramSet: string; point: Uint8Array } {
  const parameters = publicKey.algorithm.parameters;
  if (!parameters) throw new SignatureFormatError('a GOST public key without its parameter set');
  const sequence = asn1js.fromBER(parameters);
  const first = sequence.offset === -1 ? undefined : (sequence.result as asn1js.Sequence).valueBlock?.value?.[0];
  if (!(sequence.result instanceof asn1js.Sequence) || !(first instanceof asn1js.ObjectIdentifier))
    throw new SignatureFormatError('bad GOST public key parameters');
  // asn1js alone, as everywhere here (the schema mapping of @peculiar cost a new key ~20 µs warm, more cold), and not
  // looking for an encoding inside the point's bytes.
  const point = asn1js.fromBER(publicKey.key, { parseEmbedded: false });
  if (point.offset === -1) throw new SignatureFormatError('bad GOST public key');
  return { paramSet: first.valueBlock.toString(), point: octetsOf(point.result, 'GOST public key') };
}
