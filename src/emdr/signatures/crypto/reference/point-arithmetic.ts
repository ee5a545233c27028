/**
 * Point arithmetic for GOST R 34.10-2012 (gost3410.ts) in BigInt, shaped by where a verification's
 * time goes (u1·G + u2·Q, every step a BigInt allocation):
 * - G is fixed per curve: a table of j·2^(6i)·G (affine, built once per curve on first use) turns
 *   u1·G into about bits/6 mixed additions and no doubling;
 * - Q is the signer's key, and a clinic signs many documents with one key: the second time a key is
 *   seen it gets a table of its own (width 4, kept for the last KEY_TABLES keys), so u2·Q costs
 *   about bits/4 mixed additions; a key seen once goes through width-5 NAF (doublings + additions);
 * - Jacobian coordinates, one inversion at the end; the curves whose a is −3 double with 3M + 5S.
 * Nothing here is constant-time: verification handles no secret.
 */
import type { Curve } from '../curves.ts';

export function mod(value: bigint, modulus: bigint): bigint {
  const result = value % modulus;
  return result < 0n ? result + modulus : result;
}

/** The inverse of `value` modulo the prime `modulus` (extended Euclid); `value` is not 0 mod `modulus`. */
export function inverse(value: bigint, modulus: bigint): bigint {
  let oldR = mod(value, modulus);
  let r = modulus;
  let oldS = 1n;
  let s = 0n;
  while (r !== 0n) {
    const quotient = oldR / r;
    const nextR = oldR - quotient * r;
    oldR = r;
    r = nextR;
    const nextS = oldS - quotient * s;
    oldS = s;
    s = nextS;
  }
  return mod(oldS, modulus);
}

export interface Affine {
  x: bigint;
  y: bigint;
}

/** A point in Jacobian coordinates (X/Z², Y/Z³); Z = 0 is the point at infinity. */
export interface Jacobian {
  x: bigint;
  y: bigint;
  z: bigint;
}

const INFINITY: Jacobian = { x: 1n, y: 1n, z: 0n };

const BASE_TABLE_WIDTH = 6;
const KEY_TABLE_WIDTH = 4;
const NAF_WIDTH = 5;
/** How many signers' keys keep a table (LRU): at most ~0.4 MB each (512 bits). */
const KEY_TABLES = 32;

/**
 * Reduction modulo p. For p = 2^n − c with a small c (CryptoPro A, tc26 256-A, 512-A and 512-C)
 * a shift and a multiplication by c replace BigInt division.
 */
function reducerFor(p: bigint): (value: bigint) => bigint {
  const bits = BigInt(p.toString(2).length);
  const c = (1n << bits) - p;
  if (c <= 0n || c >= 1n << 32n) return (value) => value % p;
  const mask = (1n << bits) - 1n;
  return (value) => {
    let folded = (value >> bits) * c + (value & mask);
    folded = (folded >> bits) * c + (folded & mask);
    return folded >= p ? folded - p : folded;
  };
}

/** The width-w non-adjacent form of k, least significant digit first (odd digits below 2^(w−1) in absolute value, or 0). */
export function nafDigits(k: bigint, width = NAF_WIDTH): number[] {
  const digits: number[] = [];
  const window = 1n << BigInt(width);
  let rest = k;
  while (rest > 0n) {
    let digit = 0;
    if (rest & 1n) {
      let remainder = Number(rest % window);
      if (remainder >= 1 << (width - 1)) remainder -= 1 << width;
      digit = remainder;
      rest -= BigInt(digit);
    }
    digits.push(digit);
    rest >>= 1n;
  }
  return digits;
}

/**
 * k·P for one fixed P: rows[i][j − 1] = j·2^(width·i)·P in affine coordinates, so k·P is the sum of
 * one entry per width-bit digit of k.
 */
export class FixedPointTable {
  private readonly arithmetic: CurveArithmetic;
  private readonly rows: Affine[][];
  private readonly width: bigint;
  private readonly mask: bigint;

  constructor(arithmetic: CurveArithmetic, rows: Affine[][], width: number) {
    this.arithmetic = arithmetic;
    this.rows = rows;
    this.width = BigInt(width);
    this.mask = (1n << this.width) - 1n;
  }

  /** k·P for 0 ≤ k < 2^(width·rows). */
  multiply(k: bigint): Jacobian {
    if (k < 0n || k >> (this.width * BigInt(this.rows.length)) !== 0n) throw new RangeError('scalar out of the table range');
    let result = INFINITY;
    let rest = k;
    for (let row = 0; rest > 0n; row += 1) {
      const digit = Number(rest & this.mask);
      rest >>= this.width;
      if (digit !== 0) result = this.arithmetic.addAffine(result, this.rows[row]![digit - 1]!);
    }
    return result;
  }
}

/** Point arithmetic on one curve; every input coordinate is already reduced. */
export class CurveArithmetic {
  private readonly curve: Curve;
  private readonly p: bigint;
  private readonly a: bigint;
  private readonly aIsMinus3: boolean;
  private readonly reduce: (value: bigint) => bigint;
  private base: FixedPointTable | undefined;
  /** Signers' keys by coordinates: their table, or 'seen' after the first verification, or 'unusable'. */
  private readonly keyTables = new Map<string, FixedPointTable | 'seen' | 'unusable'>();

  constructor(curve: Curve) {
    this.curve = curve;
    this.p = curve.p;
    this.a = curve.a;
    this.aIsMinus3 = curve.a === curve.p - 3n;
    this.reduce = reducerFor(curve.p);
  }

  /** value mod p for a value in (−p², p²), non-negative. */
  private r(value: bigint): bigint {
    if (value >= 0n) return this.reduce(value);
    const negated = this.reduce(-value);
    return negated === 0n ? 0n : this.p - negated;
  }

  double(point: Jacobian): Jacobian {
    if (point.z === 0n || point.y === 0n) return INFINITY;
    const yy = this.r(point.y * point.y);
    const zz = this.r(point.z * point.z);
    const s = this.r(4n * this.r(point.x * yy));
    const m = this.aIsMinus3 ? this.r(3n * this.r((point.x - zz) * (point.x + zz))) : this.r(3n * this.r(point.x * point.x) + this.r(this.a * this.r(zz * zz)));
    const x = this.r(m * m - 2n * s);
    const y = this.r(m * (s - x) - 8n * this.r(yy * yy));
    const z = this.r(2n * this.r(point.y * point.z));
    return { x, y, z };
  }

  add(left: Jacobian, right: Jacobian): Jacobian {
    if (left.z === 0n) return right;
    if (right.z === 0n) return left;
    const z1z1 = this.r(left.z * left.z);
    const z2z2 = this.r(right.z * right.z);
    const u1 = this.r(left.x * z2z2);
    const u2 = this.r(right.x * z1z1);
    const s1 = this.r(this.r(left.y * right.z) * z2z2);
    const s2 = this.r(this.r(right.y * left.z) * z1z1);
    return this.finishAdd(left, u1, s1, u2, s2, this.r(left.z * right.z));
  }

  /** left + right where right is affine (Z = 1): four multiplications fewer than add. */
  addAffine(left: Jacobian, right: Affine): Jacobian {
    if (left.z === 0n) return { x: right.x, y: right.y, z: 1n };
    const z1z1 = this.r(left.z * left.z);
    const u2 = this.r(right.x * z1z1);
    const s2 = this.r(this.r(right.y * left.z) * z1z1);
    return this.finishAdd(left, left.x, left.y, u2, s2, left.z);
  }

  /** The common end of both additions: u, s are the two points' X and Y brought to one Z (zProduct). */
  private finishAdd(left: Jacobian, u1: bigint, s1: bigint, u2: bigint, s2: bigint, zProduct: bigint): Jacobian {
    const h = this.r(u2 - u1);
    const r = this.r(s2 - s1);
    if (h === 0n) return r === 0n ? this.double(left) : INFINITY;
    const hh = this.r(h * h);
    const hhh = this.r(h * hh);
    const v = this.r(u1 * hh);
    const x = this.r(r * r - hhh - 2n * v);
    const y = this.r(r * (v - x) - this.r(s1 * hhh));
    const z = this.r(zProduct * h);
    return { x, y, z };
  }

  negate(point: Jacobian): Jacobian {
    return { x: point.x, y: point.y === 0n ? 0n : this.p - point.y, z: point.z };
  }

  /** The affine form of a point; undefined for the point at infinity. */
  toAffine(point: Jacobian): Affine | undefined {
    if (point.z === 0n) return undefined;
    const zInverse = inverse(point.z, this.p);
    const zz = this.r(zInverse * zInverse);
    return { x: this.r(point.x * zz), y: this.r(point.y * this.r(zz * zInverse)) };
  }

  /** k·P by width-5 NAF: one doubling per bit of k, an addition per non-zero digit. */
  nafMultiple(k: bigint, point: Affine): Jacobian {
    const digits = nafDigits(k);
    const start: Jacobian = { x: point.x, y: point.y, z: 1n };
    const twice = this.double(start);
    const odd = [start];
    for (let i = 1; i < 1 << (NAF_WIDTH - 2); i += 1) odd.push(this.add(odd[i - 1]!, twice));
    let result = INFINITY;
    for (let i = digits.length - 1; i >= 0; i -= 1) {
      result = this.double(result);
      const digit = digits[i]!;
      if (digit === 0) continue;
      const multiple = odd[(Math.abs(digit) - 1) >> 1]!;
      result = this.add(result, digit > 0 ? multiple : this.negate(multiple));
    }
    return result;
  }

  /**
   * The table of j·2^(width·i)·P covering scalars below 2^bits; undefined when one of its points
   * is the point at infinity (a P outside the order-q group: such a key gets no table).
   */
  buildTable(point: Affine, width: number): FixedPointTable | undefined {
    const rowCount = Math.ceil(this.curve.q.toString(2).length / width);
    const perRow = (1 << width) - 1;
    const points: Jacobian[] = [];
    let rowBase: Jacobian = { x: point.x, y: point.y, z: 1n };
    for (let row = 0; row < rowCount; row += 1) {
      let multiple = rowBase;
      points.push(multiple);
      for (let j = 2; j <= perRow; j += 1) points.push((multiple = this.add(multiple, rowBase)));
      rowBase = this.add(multiple, rowBase);
    }
    const affine = this.batchToAffine(points);
    if (!affine) return undefined;
    const rows: Affine[][] = [];
    for (let row = 0; row < rowCount; row += 1) rows.push(affine.slice(row * perRow, (row + 1) * perRow));
    return new FixedPointTable(this, rows, width);
  }

  /** Affine forms of many points with one inversion (Montgomery's trick); undefined if one is at infinity. */
  private batchToAffine(points: Jacobian[]): Affine[] | undefined {
    const prefix: bigint[] = [];
    let product = 1n;
    for (const point of points) {
      if (point.z === 0n) return undefined;
      prefix.push(product);
      product = this.r(product * point.z);
    }
    let inverted = inverse(product, this.p);
    const affine: Affine[] = new Array(points.length);
    for (let i = points.length - 1; i >= 0; i -= 1) {
      const point = points[i]!;
      const zInverse = this.r(inverted * prefix[i]!);
      inverted = this.r(inverted * point.z);
      const zz = this.r(zInverse * zInverse);
      affine[i] = { x: this.r(point.x * zz), y: this.r(point.y * this.r(zz * zInverse)) };
    }
    return affine;
  }

  /** The base point's table, built on first use. */
  baseTable(): FixedPointTable {
    this.base ??= this.buildTable({ x: this.curve.x, y: this.curve.y }, BASE_TABLE_WIDTH)!;
    return this.base;
  }

  /** k1·G + k2·Q (k1, k2 in [0, q)), Q a signer's key on the curve. */
  baseAndKeyMultiples(k1: bigint, key: Affine, k2: bigint): Jacobian {
    const keyTable = this.keyTable(key);
    const keyMultiple = keyTable ? keyTable.multiply(k2) : this.nafMultiple(k2, key);
    return this.add(this.baseTable().multiply(k1), keyMultiple);
  }

  /** The table of a key seen before (built on its second verification), most recently used kept. */
  private keyTable(key: Affine): FixedPointTable | undefined {
    const id = `${key.x.toString(32)}:${key.y.toString(32)}`;
    const known = this.keyTables.get(id);
    let entry: FixedPointTable | 'seen' | 'unusable' = 'seen';
    if (known !== undefined) entry = known === 'seen' ? (this.buildTable(key, KEY_TABLE_WIDTH) ?? 'unusable') : known;
    this.keyTables.delete(id);
    this.keyTables.set(id, entry);
    if (this.keyTables.size > KEY_TABLES) this.keyTables.delete(this.keyTables.keys().next().value!);
    return typeof entry === 'string' ? undefined : entry;
  }
}

const ARITHMETIC = new Map<Curve, CurveArithmetic>();

export function arithmeticOf(curve: Curve): CurveArithmetic {
  let arithmetic = ARITHMETIC.get(curve);
  if (!arithmetic) ARITHMETIC.set(curve, (arithmetic = new CurveArithmetic(curve)));
  return arithmetic;
}
