/**
 * GOST R 34.10-2012 signing (RFC 7091, 6.1): the verification's arithmetic plus a random k. For
 * test documents only (`document sample`, the spec's examples): nothing here is constant-time, so
 * it must never hold a real key.
 */
import { randomBytes } from 'node:crypto';
import type { Curve } from '../curves.ts';
import { littleEndianInteger, multiplyBase } from './gost3410.ts';

export interface GostKeyPair {
  curve: Curve;
  /** The private key d, in [1, q − 1]. */
  privateKey: bigint;
  /** Q = d·G. */
  publicKey: { x: bigint; y: bigint };
}

/** A uniformly random integer in [1, q − 1] (rejection sampling over the bytes of q). */
function randomScalar(q: bigint): bigint {
  const size = Math.ceil(q.toString(16).length / 2);
  for (;;) {
    const candidate = BigInt(`0x${randomBytes(size).toString('hex')}`);
    if (candidate > 0n && candidate < q) return candidate;
  }
}

export function generateGostKeyPair(curve: Curve): GostKeyPair {
  const privateKey = randomScalar(curve.q);
  return { curve, privateKey, publicKey: multiplyBase(curve, privateKey) };
}

function bigEndianBytes(value: bigint, size: number): Buffer {
  return Buffer.from(value.toString(16).padStart(2 * size, '0'), 'hex');
}

/**
 * The signature of `digest` (Streebog output in its engine byte order, as the verifier reads it):
 * s ‖ r, big-endian, each half the size of the curve (RFC 4491, 2.2.2).
 */
export function gostSign(key: GostKeyPair, digest: Uint8Array): Buffer {
  const { q, bits } = key.curve;
  if (digest.length !== bits / 8) throw new Error(`a ${bits}-bit GOST key signs a ${bits / 8}-byte digest`);
  let e = littleEndianInteger(digest) % q;
  if (e === 0n) e = 1n;
  for (;;) {
    const k = randomScalar(q);
    const r = multiplyBase(key.curve, k).x % q;
    if (r === 0n) continue;
    const s = (r * key.privateKey + k * e) % q;
    if (s === 0n) continue;
    return Buffer.concat([bigEndianBytes(s, bits / 8), bigEndianBytes(r, bits / 8)]);
  }
}

/** Q as a GOST public key's OCTET STRING content: x ‖ y, each little-endian (RFC 4491, 2.3.2). */
export function gostPublicKeyBytes(key: GostKeyPair): Buffer {
  const size = key.curve.bits / 8;
  return Buffer.concat([bigEndianBytes(key.publicKey.x, size).reverse(), bigEndianBytes(key.publicKey.y, size).reverse()]);
}
