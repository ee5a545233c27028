/**
 * GOST R 34.10-2012 signature verification (256 and 512 bits; RFC 7091), with BigInt arithmetic
 * on the parameter sets of RFC 4357 and RFC 7836 in short Weierstrass form. Nothing here is
 * constant-time: verification handles no secret, and the only signer (gost-sign.ts) makes test
 * documents with throw-away keys.
 */

import { keyCheckOf, type Curve } from '../curves.ts';
import { arithmeticOf, inverse, mod } from './point-arithmetic.ts';

export function isOnCurve(curve: Curve, x: bigint, y: bigint): boolean {
  const { p, a, b } = curve;
  if (x < 0n || x >= p || y < 0n || y >= p) return false;
  return mod(y * y - (x * x * x + a * x + b), p) === 0n;
}

/**
 * Whether a point of the curve lies in the order-q subgroup: q·Q = O. On a curve with a cofactor
 * (tc26-256-A and tc26-512-C: 4) a key of order 2 or 4 would make z2·Q vanish or repeat, whatever
 * the document: such a key lets anyone make a signature that verifies.
 */
export function inOrderQSubgroup(curve: Curve, point: { x: bigint; y: bigint }): boolean {
  return keyCheckOf(curve) === 'on-curve' || arithmeticOf(curve).nafMultiple(curve.q, point).z === 0n;
}

/** The integer of bytes stored least significant first (GOST public keys and digests). */
export function littleEndianInteger(bytes: Uint8Array): bigint {
  return BigInt(`0x${Buffer.from(bytes).reverse().toString('hex') || '0'}`);
}

function bigEndianInteger(bytes: Uint8Array): bigint {
  return BigInt(`0x${Buffer.from(bytes).toString('hex') || '0'}`);
}

/** k·G, the base point's multiple, in affine coordinates (k in [1, q − 1]), from the base point's table. */
export function multiplyBase(curve: Curve, k: bigint): { x: bigint; y: bigint } {
  const arithmetic = arithmeticOf(curve);
  const point = arithmetic.toAffine(arithmetic.baseTable().multiply(k));
  if (!point) throw new Error('k·G is the point at infinity: k must lie in [1, q − 1]');
  return point;
}

/**
 * Whether `signature` (s ‖ r, big-endian, 2·bits/8 bytes: RFC 4491, 2.2.2) is a GOST R 34.10-2012
 * signature of `digest` (Streebog output in its engine byte order, read as a little-endian
 * integer) under the public key (x, y). False also for a key off the curve or outside the order-q
 * subgroup.
 */
export function gostVerify(curve: Curve, publicKey: { x: bigint; y: bigint }, digest: Uint8Array, signature: Uint8Array): boolean {
  const size = curve.bits / 8;
  if (signature.length !== 2 * size || digest.length !== size) return false;
  if (!isOnCurve(curve, publicKey.x, publicKey.y) || !inOrderQSubgroup(curve, publicKey)) return false;
  const { q } = curve;
  const s = bigEndianInteger(signature.subarray(0, size));
  const r = bigEndianInteger(signature.subarray(size));
  if (r <= 0n || r >= q || s <= 0n || s >= q) return false;
  let e = littleEndianInteger(digest) % q;
  if (e === 0n) e = 1n;
  const v = inverse(e, q);
  const z1 = (s * v) % q;
  const z2 = mod(-r * v, q);
  const c = arithmeticOf(curve).baseAndKeyMultiples(z1, publicKey, z2);
  if (c.z === 0n) return false;
  const zInverse = inverse(c.z, curve.p);
  const x = (c.x * ((zInverse * zInverse) % curve.p)) % curve.p;
  return x % q === r;
}
