/**
 * The parts of X.509 certificates (RFC 5280) that signature verification and the registry's signer
 * rules read, from an encoding that passed checkBerBounds (ber-bounds.ts): its elements are walked
 * and each field read by its structure, typed and bounded (ber-fields.ts); the encodings inside
 * OCTET and BIT STRINGs that are read (three extensions, a GOST key's point) are walked and bounded
 * likewise. asn1js's parse of a new certificate cost about the engine's whole GOST check (~250 µs
 * of a ~990 µs check, issue 24); it now reads only an OID's text once per encoding and a name
 * attribute of an uncommon type. What the maintained mapping (@peculiar/asn1-x509) refuses is
 * refused (test/emdr/cms-parse.test.ts compares the two, also over mutated signatures). Anything
 * malformed is a SignatureFormatError.
 */
import { createHash } from 'node:crypto';
import { id_ce_basicConstraints, id_ce_keyUsage, id_ce_subjectKeyIdentifier, KeyUsageFlags } from '@peculiar/asn1-x509';
import { checkBerBounds, elementAt, SignatureFormatError, withDefiniteLengths, type BerElement, type BerLimits } from '../ber/ber-bounds.ts';
import * as ber from '../ber/ber-fields.ts';
import { BoundedCache } from './bounded-cache.ts';

/** A certificate alone (a trust store's), and an encoding inside one that is read (an extension's value, a GOST key's point). */
export const CERTIFICATE_LIMITS: BerLimits = { maxBytes: 256 * 1024, maxElements: 10_000, maxDepth: 32 };
const MAX_ATTRIBUTES = 64;
const MAX_EXTENSIONS = 64;

/** Subject attributes of qualified certificates of Russian physical persons (Приказ ФСБ № 795). */
const SUBJECT = {
  commonName: '2.5.4.3',
  surname: '2.5.4.4',
  givenName: '2.5.4.42',
  snils: '1.2.643.100.3',
  ogrn: '1.2.643.100.1',
} as const;
const SUBJECT_KEYS = Object.entries(SUBJECT) as Array<[keyof SubjectText, string]>;

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

/** keyUsage's digitalSignature and keyCertSign bits (KeyUsageFlags of @peculiar/asn1-x509). */
export const KEY_USAGE = {
  digitalSignature: KeyUsageFlags.digitalSignature,
  nonRepudiation: KeyUsageFlags.nonRepudiation,
  keyCertSign: KeyUsageFlags.keyCertSign,
} as const;

/** An element's bytes as DER writes its lengths. */
export type DerOf = (element: BerElement) => Uint8Array;

/** DerOf for `bytes`: an element as received when the whole encoding has DER lengths (checkBerBounds), else with them made so. */
export const derOfElements =
  (bytes: Uint8Array, derLengths: boolean): DerOf =>
  (element) => {
    const received = bytes.subarray(element.start, element.end);
    return derLengths ? received : withDefiniteLengths(received);
  };

/** AlgorithmIdentifier ::= SEQUENCE { algorithm OBJECT IDENTIFIER, parameters ANY OPTIONAL }; NULL parameters as none. */
export function algorithmOf(bytes: Uint8Array, element: BerElement | undefined, derOf: DerOf): AlgorithmIdentifier {
  const [algorithm, parameters] = ber.sequenceOf(bytes, element, 2, 'algorithm');
  const oid = ber.oidOf(bytes, algorithm, 'algorithm');
  return parameters === undefined || parameters.tag === ber.TAG.null ? { oid } : { oid, parameters: derOf(parameters) };
}

/**
 * Name ::= SEQUENCE OF SET OF SEQUENCE { type OBJECT IDENTIFIER, value ANY }, its structure
 * checked, with the subject attributes the checks read as text (any string type: SNILS is a
 * NumericString).
 */
export function nameOf(bytes: Uint8Array, element: BerElement | undefined, what: string): { name: BerElement; text: SubjectText } {
  const name = ber.ofTag(element, ber.TAG.sequence, what);
  const text: SubjectText = {};
  for (const rdn of ber.childrenOf(bytes, name, MAX_ATTRIBUTES, what)) {
    for (const attribute of ber.childrenOf(bytes, ber.ofTag(rdn, ber.TAG.set, what), MAX_ATTRIBUTES, what)) {
      const [type, value] = ber.sequenceOf(bytes, attribute, 2, what);
      if (value === undefined) throw new SignatureFormatError(`bad ${what}`);
      const oid = ber.oidOf(bytes, type, what);
      const key = SUBJECT_KEYS.find(([, candidate]) => candidate === oid)?.[0];
      if (key === undefined || text[key] !== undefined) continue;
      const string = ber.textOf(bytes, value);
      if (string !== undefined) text[key] = string.slice(0, 256);
    }
  }
  return { name, text };
}

/**
 * The certificates read before, by the SHA-256 of their DER: a clinic signs its documents with a few
 * certificates, so most signatures carry one seen already. Entries are never changed (a
 * Certificate is read only), and the bound keeps the memory small in each document-check worker.
 */
const CERTIFICATES = new BoundedCache<string, Certificate>(256);
/** Real certificates are a few kilobytes; a larger one is read but not kept, so the cache stays within a few MiB. */
const MAX_CACHED_CERTIFICATE_BYTES = 16 * 1024;

/** The certificate encoded at `element` of `bytes` (which passed checkBerBounds): from the cache when its DER was read before, else read. */
export function certificateAt(bytes: Uint8Array, element: BerElement, derLengths: boolean): Certificate {
  const derOf = derOfElements(bytes, derLengths);
  const der = derOf(element);
  const key = createHash('sha256').update(der).digest('base64');
  const cached = CERTIFICATES.get(key);
  if (cached) return cached;
  const certificate = ber.decoded('certificate', () => certificateOf(bytes, element, der, derOf));
  if (der.length > MAX_CACHED_CERTIFICATE_BYTES) return certificate;
  const kept = detached(certificate);
  CERTIFICATES.set(key, kept);
  return kept;
}

/** A copy whose bytes are its own: the read's are views into the whole signature, which a cached entry must not keep alive. */
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
 * What the checks read of a certificate, by its structure (RFC 5280: Certificate ::= SEQUENCE {
 * tbsCertificate, signatureAlgorithm, signatureValue BIT STRING }; tbsCertificate ::= SEQUENCE {
 * [0] version OPTIONAL, serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo,
 * [1] [2] OPTIONAL, [3] extensions OPTIONAL }): names, keys and the tbsCertificate as received, not
 * encoded anew.
 */
function certificateOf(bytes: Uint8Array, element: BerElement, der: Uint8Array, derOf: DerOf): Certificate {
  const [tbsElement, signatureAlgorithm, signatureValue] = ber.sequenceOf(bytes, element, 3, 'certificate');
  const fields = ber.sequenceOf(bytes, tbsElement, 10, 'certificate');
  const first = ber.contextNumber(bytes, fields[0]) === 0 ? 1 : 0;
  // version ::= [0] EXPLICIT INTEGER.
  if (first === 1) ber.ofTag(ber.childrenOf(bytes, fields[0], 1, 'version')[0], ber.TAG.integer, 'version');
  const [serial, tbsSignature, issuer, validity, subject, publicKeyInfo] = fields.slice(first);
  algorithmOf(bytes, tbsSignature, derOf);
  const [notBefore, notAfter] = ber.sequenceOf(bytes, validity, 2, 'validity');
  const [keyAlgorithm, keyBits] = ber.sequenceOf(bytes, publicKeyInfo, 2, 'subjectPublicKeyInfo');
  const subjectName = nameOf(bytes, subject, 'subject');
  const result: Certificate = {
    der,
    tbs: derOf(tbsElement!),
    serial: ber.integerBytes(bytes, serial, 'serialNumber'),
    issuer: derOf(nameOf(bytes, issuer, 'issuer').name),
    subject: derOf(subjectName.name),
    subjectText: subjectName.text,
    notBefore: ber.timeOf(bytes, notBefore, 'validity'),
    notAfter: ber.timeOf(bytes, notAfter, 'validity'),
    publicKey: {
      algorithm: algorithmOf(bytes, keyAlgorithm, derOf),
      key: ber.bitsOf(bytes, keyBits, 'subjectPublicKey'),
      info: derOf(publicKeyInfo!),
    },
    signatureAlgorithm: algorithmOf(bytes, signatureAlgorithm, derOf),
    signature: ber.bitsOf(bytes, signatureValue, 'signatureValue'),
  };
  // issuerUniqueID [1], subjectUniqueID [2], extensions [3]: each optional, in that order.
  const numbers = fields.slice(first + 6).map((field) => Math.max(ber.contextNumber(bytes, field), 0));
  if (numbers.some((number, index) => number < 1 || number > 3 || number <= (numbers[index - 1] ?? 0))) throw new SignatureFormatError('bad certificate');
  const extensionsElement = numbers.at(-1) === 3 ? fields.at(-1) : undefined;
  const extensions = extensionsElement ? ber.ofTag(ber.childrenOf(bytes, extensionsElement, 1, 'extensions')[0], ber.TAG.sequence, 'extensions') : undefined;
  for (const extension of extensions ? ber.childrenOf(bytes, extensions, MAX_EXTENSIONS, 'extensions') : []) readExtension(bytes, extension, result);
  return result;
}

/** Extension ::= SEQUENCE { extnID, critical BOOLEAN DEFAULT FALSE, extnValue OCTET STRING }: the three the checks read, into `certificate`. */
function readExtension(bytes: Uint8Array, extension: BerElement, certificate: Certificate): void {
  const parts = ber.sequenceOf(bytes, extension, 3, 'extension');
  if (parts.length < 2 || (parts.length === 3 && parts[1]!.tag !== ber.TAG.boolean)) throw new SignatureFormatError('bad extension');
  const id = ber.oidOf(bytes, parts[0], 'extension');
  const octets = ber.octetsOf(bytes, parts.at(-1), 'extension');
  if (id !== id_ce_subjectKeyIdentifier && id !== id_ce_basicConstraints && id !== id_ce_keyUsage) return;
  const value = embedded(octets, 'extension');
  if (id === id_ce_subjectKeyIdentifier) certificate.subjectKeyIdentifier = ber.octetsOf(octets, value, 'subjectKeyIdentifier');
  if (id === id_ce_basicConstraints) certificate.isCa = basicConstraintsCa(octets, value);
  if (id === id_ce_keyUsage) certificate.keyUsage = keyUsageOf(octets, value);
}

/** The one element encoded in `bytes` (inside an OCTET or BIT STRING, so not walked with its container): walked, bounded, nothing after it. */
function embedded(bytes: Uint8Array, what: string): BerElement {
  try {
    checkBerBounds(bytes, CERTIFICATE_LIMITS);
  } catch {
    throw new SignatureFormatError(`bad ${what}`);
  }
  return elementAt(bytes, 0);
}

/** BasicConstraints ::= SEQUENCE { cA BOOLEAN DEFAULT FALSE, pathLenConstraint INTEGER OPTIONAL }: cA. */
function basicConstraintsCa(bytes: Uint8Array, element: BerElement): boolean {
  const fields = ber.sequenceOf(bytes, element, 2, 'basicConstraints');
  const cA = fields[0]?.tag === ber.TAG.boolean ? fields[0] : undefined;
  const rest = fields.slice(cA ? 1 : 0);
  if (rest.length > 1 || (rest.length === 1 && rest[0]!.tag !== ber.TAG.integer)) throw new SignatureFormatError('bad basicConstraints');
  return cA ? ber.booleanOf(bytes, cA) : false;
}

/** keyUsage's named bits as KeyUsageFlags: bit n (the first bit is the first byte's highest) is 2^n; unused bits (BER may set them) left out. */
function keyUsageOf(bytes: Uint8Array, element: BerElement): number {
  const bits = ber.bitsOf(bytes, element, 'keyUsage');
  const unused = ber.unusedBitsOf(bytes, element);
  // The named bits end at decipherOnly (8): two bytes hold them all.
  const count = Math.min(bits.length * 8 - unused, 16);
  let flags = 0;
  for (let bit = 0; bit < count; bit += 1) if ((bits[bit >> 3]! & (0x80 >> (bit & 7))) !== 0) flags |= 1 << bit;
  return flags;
}

/**
 * The parameter set of a GOST R 34.10-2012 public key (RFC 9215, 4: SEQUENCE { publicKeyParamSet,
 * digestParamSet OPTIONAL, … }) and its point x ‖ y (an OCTET STRING in the BIT STRING, RFC 4491, 2.3.2).
 */
export function gostKeyParts(publicKey: SubjectPublicKey): { paramSet: string; point: Uint8Array } {
  const parameters = publicKey.algorithm.parameters;
  if (!parameters) throw new SignatureFormatError('a GOST public key without its parameter set');
  const paramSet = ber.decoded('GOST public key parameters', () => {
    const [first] = ber.sequenceOf(parameters, embedded(parameters, 'GOST public key parameters'), Number.POSITIVE_INFINITY, 'GOST public key parameters');
    return ber.oidOf(parameters, first, 'GOST public key parameters');
  });
  return { paramSet, point: ber.octetsOf(publicKey.key, embedded(publicKey.key, 'GOST public key'), 'GOST public key') };
}
