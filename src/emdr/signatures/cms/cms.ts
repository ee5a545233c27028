/**
 * The parts of a CMS SignedData (RFC 5652) and of X.509 certificates (RFC 5280) that signature
 * verification reads, parsed with der.ts. Counts are bounded; anything malformed is a DerError.
 */
import { bitStringBytes, childrenOf, context, contentOf, DerError, encodingOf, oidOf, readElement, Reader, TAG, timeOf, type Element } from './der.ts';

const MAX_CERTIFICATES = 32;
const MAX_SIGNERS = 16;
const MAX_ATTRIBUTES = 64;
const MAX_EXTENSIONS = 64;

export interface AlgorithmIdentifier {
  oid: string;
  /** The encoding of the parameters, when present. */
  parameters?: Uint8Array;
}

export interface SubjectPublicKey {
  algorithm: AlgorithmIdentifier;
  /** The whole SubjectPublicKeyInfo, for Node's crypto. */
  info: Uint8Array;
  /** The BIT STRING's bytes. */
  key: Uint8Array;
}

export interface Certificate {
  der: Uint8Array;
  tbs: Uint8Array;
  serial: Uint8Array;
  issuer: Uint8Array;
  subject: Uint8Array;
  notBefore: number;
  notAfter: number;
  publicKey: SubjectPublicKey;
  signatureAlgorithm: AlgorithmIdentifier;
  signature: Uint8Array;
  subjectKeyIdentifier?: Uint8Array;
  /** basicConstraints cA; undefined when the extension is absent. */
  isCa?: boolean;
  /** keyUsage keyCertSign; undefined when the extension is absent. */
  mayCertify?: boolean;
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

const SIGNED_DATA = '1.2.840.113549.1.7.2';
const MESSAGE_DIGEST = '1.2.840.113549.1.9.4';
const SIGNING_TIME = '1.2.840.113549.1.9.5';
const SUBJECT_KEY_IDENTIFIER = '2.5.29.14';
const KEY_USAGE = '2.5.29.15';
const BASIC_CONSTRAINTS = '2.5.29.19';

function algorithmOf(bytes: Uint8Array, element: Element): AlgorithmIdentifier {
  if (element.tag !== TAG.SEQUENCE) throw new DerError('AlgorithmIdentifier is not a SEQUENCE');
  const reader = new Reader(bytes, element);
  const oid = oidOf(bytes, reader.next(TAG.OID, 'algorithm'));
  const parameters = reader.done ? undefined : encodingOf(bytes, reader.next());
  return parameters === undefined || (parameters.length === 2 && parameters[0] === TAG.NULL) ? { oid } : { oid, parameters };
}

/** A ContentInfo holding a SignedData. */
export function parseSignedData(bytes: Uint8Array): SignedData {
  const contentInfo = readElement(bytes, 0, bytes.length);
  if (contentInfo.tag !== TAG.SEQUENCE || contentInfo.end !== bytes.length) throw new DerError('not a ContentInfo SEQUENCE');
  const outer = new Reader(bytes, contentInfo);
  if (oidOf(bytes, outer.next(TAG.OID, 'content type')) !== SIGNED_DATA) throw new DerError('content type is not signedData (1.2.840.113549.1.7.2)');
  const explicit = outer.next(context(0), 'signedData content');
  const signedData = new Reader(bytes, new Reader(bytes, explicit).next(TAG.SEQUENCE, 'SignedData'));
  signedData.next(TAG.INTEGER, 'SignedData version');
  signedData.next(TAG.SET, 'digestAlgorithms');
  const encapsulated = new Reader(bytes, signedData.next(TAG.SEQUENCE, 'encapContentInfo'));
  encapsulated.next(TAG.OID, 'eContentType');
  const attached = !encapsulated.done;
  const certificateSet = signedData.optional(context(0));
  signedData.optional(context(1));
  const signerSet = signedData.next(TAG.SET, 'signerInfos');
  const certificates = certificateSet
    ? childrenOf(bytes, certificateSet, MAX_CERTIFICATES, 'certificates')
        // Other CertificateChoices (attribute certificates…) are tagged and play no part here.
        .filter((element) => element.tag === TAG.SEQUENCE)
        .map((element) => parseCertificate(encodingOf(bytes, element)))
    : [];
  const signers = childrenOf(bytes, signerSet, MAX_SIGNERS, 'signerInfos').map((element) => parseSignerInfo(bytes, element));
  return { attached, certificates, signers };
}

function parseSignerInfo(bytes: Uint8Array, element: Element): SignerInfo {
  if (element.tag !== TAG.SEQUENCE) throw new DerError('SignerInfo is not a SEQUENCE');
  const reader = new Reader(bytes, element);
  reader.next(TAG.INTEGER, 'SignerInfo version');
  const sidElement = reader.next();
  let sid: SignerIdentifier;
  if (sidElement.tag === TAG.SEQUENCE) {
    const issuerAndSerial = new Reader(bytes, sidElement);
    const issuer = encodingOf(bytes, issuerAndSerial.next(TAG.SEQUENCE, 'issuer'));
    sid = { issuer, serial: contentOf(bytes, issuerAndSerial.next(TAG.INTEGER, 'serialNumber')) };
  } else if (sidElement.tag === 0x80) {
    sid = { subjectKeyIdentifier: contentOf(bytes, sidElement) };
  } else {
    throw new DerError('bad SignerIdentifier');
  }
  const digestAlgorithm = algorithmOf(bytes, reader.next(TAG.SEQUENCE, 'digestAlgorithm'));
  const attributes = reader.optional(context(0));
  const signatureAlgorithm = algorithmOf(bytes, reader.next(TAG.SEQUENCE, 'signatureAlgorithm'));
  const signature = contentOf(bytes, reader.next(TAG.OCTET_STRING, 'signature'));
  return { sid, digestAlgorithm, signatureAlgorithm, signature, ...(attributes ? { signedAttributes: parseSignedAttributes(bytes, attributes) } : {}) };
}

function parseSignedAttributes(bytes: Uint8Array, element: Element): SignedAttributes {
  const der = Buffer.from(encodingOf(bytes, element));
  der[0] = TAG.SET;
  const attributes: SignedAttributes = { der };
  for (const attribute of childrenOf(bytes, element, MAX_ATTRIBUTES, 'signedAttrs')) {
    if (attribute.tag !== TAG.SEQUENCE) throw new DerError('Attribute is not a SEQUENCE');
    const reader = new Reader(bytes, attribute);
    const type = oidOf(bytes, reader.next(TAG.OID, 'attribute type'));
    const values = childrenOf(bytes, reader.next(TAG.SET, 'attribute values'), MAX_ATTRIBUTES, 'attribute values');
    if (type !== MESSAGE_DIGEST && type !== SIGNING_TIME) continue;
    if (values.length !== 1) throw new DerError(`${type === MESSAGE_DIGEST ? 'messageDigest' : 'signingTime'} must have one value`);
    if (type === MESSAGE_DIGEST) {
      if (attributes.messageDigest) throw new DerError('messageDigest given twice');
      if (values[0]!.tag !== TAG.OCTET_STRING) throw new DerError('messageDigest is not an OCTET STRING');
      attributes.messageDigest = contentOf(bytes, values[0]!);
    } else {
      if (attributes.signingTime !== undefined) throw new DerError('signingTime given twice');
      attributes.signingTime = timeOf(bytes, values[0]!);
    }
  }
  return attributes;
}

export function parseCertificate(der: Uint8Array): Certificate {
  const outer = readElement(der, 0, der.length);
  if (outer.tag !== TAG.SEQUENCE || outer.end !== der.length) throw new DerError('certificate is not a SEQUENCE');
  const certificate = new Reader(der, outer);
  const tbsElement = certificate.next(TAG.SEQUENCE, 'tbsCertificate');
  const signatureAlgorithm = algorithmOf(der, certificate.next(TAG.SEQUENCE, 'signatureAlgorithm'));
  const signature = bitStringBytes(der, certificate.next(TAG.BIT_STRING, 'signatureValue'));
  const tbs = new Reader(der, tbsElement);
  tbs.optional(context(0));
  const serial = contentOf(der, tbs.next(TAG.INTEGER, 'serialNumber'));
  tbs.next(TAG.SEQUENCE, 'signature');
  const issuer = encodingOf(der, tbs.next(TAG.SEQUENCE, 'issuer'));
  const validity = new Reader(der, tbs.next(TAG.SEQUENCE, 'validity'));
  const notBefore = timeOf(der, validity.next());
  const notAfter = timeOf(der, validity.next());
  const subject = encodingOf(der, tbs.next(TAG.SEQUENCE, 'subject'));
  const keyInfoElement = tbs.next(TAG.SEQUENCE, 'subjectPublicKeyInfo');
  const keyInfo = new Reader(der, keyInfoElement);
  const publicKey: SubjectPublicKey = {
    algorithm: algorithmOf(der, keyInfo.next(TAG.SEQUENCE, 'public key algorithm')),
    key: bitStringBytes(der, keyInfo.next(TAG.BIT_STRING, 'subjectPublicKey')),
    info: encodingOf(der, keyInfoElement),
  };
  const result: Certificate = { der, tbs: encodingOf(der, tbsElement), serial, issuer, subject, notBefore, notAfter, publicKey, signatureAlgorithm, signature };
  tbs.optional(0x81);
  tbs.optional(0x82);
  const extensions = tbs.optional(context(3));
  if (extensions) readExtensions(der, new Reader(der, extensions).next(TAG.SEQUENCE, 'extensions'), result);
  return result;
}

function readExtensions(der: Uint8Array, sequence: Element, into: Certificate): void {
  for (const extension of childrenOf(der, sequence, MAX_EXTENSIONS, 'extensions')) {
    const reader = new Reader(der, extension);
    const id = oidOf(der, reader.next(TAG.OID, 'extnID'));
    reader.optional(TAG.BOOLEAN);
    const value = reader.next(TAG.OCTET_STRING, 'extnValue');
    const inner = readElement(der, value.contentStart, value.end);
    if (id === SUBJECT_KEY_IDENTIFIER && inner.tag === TAG.OCTET_STRING) into.subjectKeyIdentifier = contentOf(der, inner);
    if (id === BASIC_CONSTRAINTS && inner.tag === TAG.SEQUENCE) {
      const flag = new Reader(der, inner).optional(TAG.BOOLEAN);
      into.isCa = flag !== undefined && contentOf(der, flag)[0] !== 0;
    }
    if (id === KEY_USAGE && inner.tag === TAG.BIT_STRING) {
      const content = contentOf(der, inner);
      // keyCertSign is bit 5: the first byte after the unused-bits count, 0x04.
      into.mayCertify = content.length > 1 && (content[1]! & 0x04) !== 0;
    }
  }
}
