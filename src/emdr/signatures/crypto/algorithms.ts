/**
 * The algorithms a signature may use, by OID: GOST R 34.11-2012 and GOST R 34.10-2012 by our own
 * code (Node's OpenSSL has no GOST) in WebAssembly (gost-wasm.ts; reference/ is its TypeScript
 * reference), SHA-2 with RSA or ECDSA by Node's crypto, so that test signatures made with other
 * tools verify too.
 */
import { createHash, createPublicKey, publicDecrypt, verify as cryptoVerify, constants, type KeyObject } from 'node:crypto';
import { gostKeyParts, SignatureFormatError, type AlgorithmIdentifier, type SubjectPublicKey } from '../cms/cms.ts';
import { CURVES, type Curve } from './curves.ts';
import { WasmStreebog, wasmGostVerify } from './gost-wasm.ts';

export interface Digest {
  update(bytes: Uint8Array): void;
  digest(): Buffer;
}

const STREEBOG_256 = '1.2.643.7.1.1.2.2';
const STREEBOG_512 = '1.2.643.7.1.1.2.3';
const SHA: Record<string, 'sha256' | 'sha384' | 'sha512'> = {
  '2.16.840.1.101.3.4.2.1': 'sha256',
  '2.16.840.1.101.3.4.2.2': 'sha384',
  '2.16.840.1.101.3.4.2.3': 'sha512',
};
const SHA_OID = Object.fromEntries(Object.entries(SHA).map(([oid, name]) => [name, oid]));

/** A fresh hash for the digest algorithm `oid`; undefined when we do not support it. */
export function createDigest(oid: string): Digest | undefined {
  if (oid === STREEBOG_256 || oid === STREEBOG_512) return new WasmStreebog(oid === STREEBOG_256 ? 256 : 512);
  const name = SHA[oid];
  if (!name) return undefined;
  const hash = createHash(name);
  return { update: (bytes) => void hash.update(bytes), digest: () => hash.digest() };
}

export function digestOf(oid: string, bytes: Uint8Array): Buffer | undefined {
  const digest = createDigest(oid);
  digest?.update(bytes);
  return digest?.digest();
}

const GOST_KEY_BITS: Record<string, 256 | 512> = { '1.2.643.7.1.1.1.1': 256, '1.2.643.7.1.1.1.2': 512 };
const RSA_KEY = '1.2.840.113549.1.1.1';
const EC_KEY = '1.2.840.10045.2.1';

/** Signature algorithms that name their digest (certificates use these; CMS may too). */
const SIGNATURE_DIGESTS: Record<string, string> = {
  '1.2.643.7.1.1.3.2': STREEBOG_256,
  '1.2.643.7.1.1.3.3': STREEBOG_512,
  '1.2.840.113549.1.1.11': SHA_OID.sha256!,
  '1.2.840.113549.1.1.12': SHA_OID.sha384!,
  '1.2.840.113549.1.1.13': SHA_OID.sha512!,
  '1.2.840.10045.4.3.2': SHA_OID.sha256!,
  '1.2.840.10045.4.3.3': SHA_OID.sha384!,
  '1.2.840.10045.4.3.4': SHA_OID.sha512!,
};

/** Which key family each signature algorithm belongs to; CMS also names the bare key algorithm. */
const SIGNATURE_FAMILY: Record<string, 'gost' | 'rsa' | 'ecdsa'> = {
  '1.2.643.7.1.1.1.1': 'gost',
  '1.2.643.7.1.1.1.2': 'gost',
  '1.2.643.7.1.1.3.2': 'gost',
  '1.2.643.7.1.1.3.3': 'gost',
  [RSA_KEY]: 'rsa',
  '1.2.840.113549.1.1.11': 'rsa',
  '1.2.840.113549.1.1.12': 'rsa',
  '1.2.840.113549.1.1.13': 'rsa',
  '1.2.840.10045.4.3.2': 'ecdsa',
  '1.2.840.10045.4.3.3': 'ecdsa',
  '1.2.840.10045.4.3.4': 'ecdsa',
};

/** The digest a certificate's signature algorithm implies; undefined when unsupported. */
export function certificateSignatureDigest(signatureAlgorithm: AlgorithmIdentifier): string | undefined {
  return SIGNATURE_DIGESTS[signatureAlgorithm.oid];
}

export class UnsupportedAlgorithm extends Error {}

export interface SignedBytes {
  /** The digest of the signed bytes under `digestOid`. */
  digest: Uint8Array;
  digestOid: string;
  /** The signed bytes themselves, when at hand (signed attributes, a tbsCertificate). */
  data?: Uint8Array;
}

/**
 * The GOST keys decoded before, by their certificate's key: the parse keeps the certificates it has
 * read (cms/certificate.ts), so a signer's next document brings the same object, and its key is not decoded again.
 */
const DECODED_KEYS = new WeakMap<SubjectPublicKey, { curve: Curve; key: Uint8Array }>();

/** A GOST public key: x ‖ y, each little-endian, in an OCTET STRING (RFC 4491, 2.3.2), and its parameter set. */
export function gostPublicKey(publicKey: SubjectPublicKey, bits: 256 | 512): { curve: Curve; key: Uint8Array } {
  const decoded = DECODED_KEYS.get(publicKey);
  if (decoded?.curve.bits === bits) return decoded;
  if (!publicKey.algorithm.parameters) throw new UnsupportedAlgorithm('a GOST public key without its parameter set');
  const { paramSet, point } = gostKeyParts(publicKey);
  const curve = CURVES.get(paramSet);
  if (!curve || curve.bits !== bits) throw new UnsupportedAlgorithm(`GOST public key parameter set ${paramSet}`);
  if (point.length !== 2 * (bits / 8)) throw new SignatureFormatError('bad GOST public key');
  DECODED_KEYS.set(publicKey, { curve, key: point });
  return { curve, key: point };
}

function nodeKey(publicKey: SubjectPublicKey): KeyObject {
  try {
    return createPublicKey({ key: Buffer.from(publicKey.info), format: 'der', type: 'spki' });
  } catch {
    throw new UnsupportedAlgorithm(`public key ${publicKey.algorithm.oid}`);
  }
}

/** The DER DigestInfo that PKCS #1 v1.5 signs: SEQUENCE { SEQUENCE { OID, NULL }, OCTET STRING }. */
function digestInfo(digestOid: string, digest: Uint8Array): Buffer {
  const arcs = digestOid.split('.').map(Number);
  const body: number[] = [40 * arcs[0]! + arcs[1]!];
  for (const arc of arcs.slice(2)) {
    const chunk: number[] = [arc & 0x7f];
    for (let rest = Math.floor(arc / 128); rest > 0; rest = Math.floor(rest / 128)) chunk.unshift((rest & 0x7f) | 0x80);
    body.push(...chunk);
  }
  const algorithm = Buffer.from([0x30, body.length + 4, 0x06, body.length, ...body, 0x05, 0x00]);
  const octets = Buffer.concat([Buffer.from([0x04, digest.length]), digest]);
  return Buffer.concat([Buffer.from([0x30, algorithm.length + octets.length]), algorithm, octets]);
}

/**
 * Whether `signature` by `publicKey` under `signatureAlgorithm` covers the signed bytes. Throws
 * UnsupportedAlgorithm for a combination we cannot check, SignatureFormatError for a malformed key.
 */
export function signatureVerifies(publicKey: SubjectPublicKey, signatureAlgorithm: AlgorithmIdentifier, signed: SignedBytes, signature: Uint8Array): boolean {
  const family = SIGNATURE_FAMILY[signatureAlgorithm.oid];
  const impliedDigest = SIGNATURE_DIGESTS[signatureAlgorithm.oid];
  if (!family || (impliedDigest !== undefined && impliedDigest !== signed.digestOid)) {
    throw new UnsupportedAlgorithm(`signature algorithm ${signatureAlgorithm.oid} with digest ${signed.digestOid}`);
  }
  const keyOid = publicKey.algorithm.oid;
  if (family === 'gost') {
    const bits = GOST_KEY_BITS[keyOid];
    if (!bits) throw new UnsupportedAlgorithm(`a GOST signature by a ${keyOid} key`);
    // A 256-bit key signs a Streebog-256 digest, a 512-bit key a Streebog-512 one (GOST R 34.10-2012).
    if (signed.digestOid !== (bits === 256 ? STREEBOG_256 : STREEBOG_512))
      throw new UnsupportedAlgorithm(`a ${bits}-bit GOST key with digest ${signed.digestOid}`);
    const { curve, key } = gostPublicKey(publicKey, bits);
    return wasmGostVerify(curve, key, signed.digest, signature);
  }
  const hash = SHA[signed.digestOid];
  if (!hash) throw new UnsupportedAlgorithm(`digest ${signed.digestOid} with ${family.toUpperCase()}`);
  if (keyOid !== (family === 'rsa' ? RSA_KEY : EC_KEY)) throw new UnsupportedAlgorithm(`a ${family.toUpperCase()} signature by a ${keyOid} key`);
  const key = nodeKey(publicKey);
  try {
    if (signed.data) return cryptoVerify(hash, signed.data, key, signature);
    if (family !== 'rsa') throw new UnsupportedAlgorithm('ECDSA over the content without signed attributes');
    return publicDecrypt({ key, padding: constants.RSA_PKCS1_PADDING }, signature).equals(digestInfo(signed.digestOid, signed.digest));
  } catch (error) {
    if (error instanceof UnsupportedAlgorithm) throw error;
    // OpenSSL refuses a malformed signature value: that is a signature that does not verify.
    return false;
  }
}
