/**
 * A throw-away GOST R 34.10-2012 signer (256 bits, Streebog-256, CryptoPro-A parameters, as the
 * OpenSSL gost engine makes by default): a fresh key, a self-signed test certificate and detached
 * CMS SignedData (RFC 5652) with the signed attributes content-type, signing-time and
 * message-digest. For sample documents a clinic can send to a test gateway; never a real key.
 */
import { randomBytes } from 'node:crypto';
import { algorithm, bitString, boolean, contextTagged, integer, octetString, oid, retagged, sequence, setOf, time, utf8String } from './ber/der-writer.ts';
import { generateGostKeyPair, gostPublicKeyBytes, gostSign, type GostKeyPair } from './crypto/reference/gost-sign.ts';
import { CURVES } from './crypto/curves.ts';
import { streebog } from './crypto/reference/streebog.ts';

const OID = {
  gost2012_256: '1.2.643.7.1.1.1.1',
  gost2012_256WithStreebog256: '1.2.643.7.1.1.3.2',
  streebog256: '1.2.643.7.1.1.2.2',
  cryptoProA: '1.2.643.2.2.35.1',
  data: '1.2.840.113549.1.7.1',
  signedData: '1.2.840.113549.1.7.2',
  contentType: '1.2.840.113549.1.9.3',
  messageDigest: '1.2.840.113549.1.9.4',
  signingTime: '1.2.840.113549.1.9.5',
  commonName: '2.5.4.3',
  organizationName: '2.5.4.10',
  subjectKeyIdentifier: '2.5.29.14',
  keyUsage: '2.5.29.15',
  basicConstraints: '2.5.29.19',
} as const;

export interface TestCertificateOptions {
  commonName: string;
  organization?: string;
  notBefore?: Date;
  notAfter?: Date;
}

export interface TestSigner {
  /** The self-signed certificate, DER. */
  certificate: Buffer;
  /** A detached signature of `document`, made at `signingTime` (default: now). */
  sign(document: Uint8Array, signingTime?: Date): Buffer;
}

function name(commonName: string, organization: string | undefined): Buffer {
  const attribute = (type: string, value: string) => setOf(sequence(oid(type), utf8String(value)));
  return sequence(attribute(OID.commonName, commonName), ...(organization ? [attribute(OID.organizationName, organization)] : []));
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return sequence(oid(id), ...(critical ? [boolean(true)] : []), octetString(value));
}

/** `GostR3410-2012-256` SubjectPublicKeyInfo: the parameter set and the digest in the parameters (RFC 9215, 4). */
function subjectPublicKeyInfo(key: GostKeyPair): Buffer {
  return sequence(sequence(oid(OID.gost2012_256), sequence(oid(OID.cryptoProA), oid(OID.streebog256))), bitString(octetString(gostPublicKeyBytes(key))));
}

function selfSignedCertificate(key: GostKeyPair, options: TestCertificateOptions, serial: bigint): Buffer {
  const notBefore = options.notBefore ?? new Date(Date.now() - 86_400_000);
  const notAfter = options.notAfter ?? new Date(Date.now() + 365 * 86_400_000);
  const subject = name(options.commonName, options.organization);
  const publicKeyInfo = subjectPublicKeyInfo(key);
  const keyIdentifier = streebog(256, gostPublicKeyBytes(key)).subarray(0, 20);
  const tbs = sequence(
    contextTagged(0, integer(2n)),
    integer(serial),
    algorithm(OID.gost2012_256WithStreebog256),
    subject,
    sequence(time(notBefore), time(notAfter)),
    subject,
    publicKeyInfo,
    contextTagged(
      3,
      sequence(
        extension(OID.basicConstraints, true, sequence()),
        // digitalSignature and nonRepudiation: bits 0 and 1, six unused bits.
        extension(OID.keyUsage, true, Buffer.from([0x03, 0x02, 0x06, 0xc0])),
        extension(OID.subjectKeyIdentifier, false, octetString(keyIdentifier)),
      ),
    ),
  );
  return sequence(tbs, algorithm(OID.gost2012_256WithStreebog256), bitString(gostSign(key, streebog(256, tbs))));
}

/** The issuer (= subject) and serial number of a certificate this module made. */
function issuerAndSerial(subject: Buffer, serial: bigint): Buffer {
  return sequence(subject, integer(serial));
}

export function createTestSigner(options: TestCertificateOptions): TestSigner {
  const key = generateGostKeyPair(CURVES.get(OID.cryptoProA)!);
  // A positive serial of 64 random bits (RFC 5280 allows up to 20 octets).
  const serial = BigInt(`0x${randomBytes(8).toString('hex')}`) | 1n;
  const certificate = selfSignedCertificate(key, options, serial);
  const subject = name(options.commonName, options.organization);
  return {
    certificate,
    sign(document, signingTime = new Date()) {
      const attributes = [
        sequence(oid(OID.contentType), setOf(oid(OID.data))),
        sequence(oid(OID.signingTime), setOf(time(signingTime))),
        sequence(oid(OID.messageDigest), setOf(octetString(streebog(256, document)))),
      ];
      // The signature covers the attributes as a SET OF (tag 0x31); in the SignerInfo they are [0] IMPLICIT.
      const signedAttributes = setOf(...attributes);
      const signerInfo = sequence(
        integer(1n),
        issuerAndSerial(subject, serial),
        algorithm(OID.streebog256),
        retagged(signedAttributes, 0xa0),
        algorithm(OID.gost2012_256),
        octetString(gostSign(key, streebog(256, signedAttributes))),
      );
      const signedData = sequence(
        integer(1n),
        setOf(algorithm(OID.streebog256)),
        // Detached: the content type only, no eContent.
        sequence(oid(OID.data)),
        contextTagged(0, certificate),
        setOf(signerInfo),
      );
      return sequence(oid(OID.signedData), contextTagged(0, signedData));
    },
  };
}

/** PEM of a DER certificate. */
export function certificatePem(der: Uint8Array): string {
  const lines = Buffer.from(der)
    .toString('base64')
    .match(/.{1,64}/g)!;
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`;
}
