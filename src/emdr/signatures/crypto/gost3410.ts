/**
 * GOST R 34.10-2012 signature verification (256 and 512 bits; RFC 7091), with BigInt arithmetic
 * on the parameter sets of RFC 4357 and RFC 7836 in short Weierstrass form. Nothing here is
 * constant-time: verification handles no secret, and the only signer (gost-sign.ts) makes test
 * documents with throw-away keys.
 */

export interface Curve {
  name: string;
  bits: 256 | 512;
  p: bigint;
  a: bigint;
  b: bigint;
  /** The order of the base point (q in the standard). */
  q: bigint;
  x: bigint;
  y: bigint;
}

function curve(name: string, bits: 256 | 512, hex: { p: string; a: string; b: string; q: string; x: string; y: string }): Curve {
  const big = (value: string) => BigInt(`0x${value}`);
  return { name, bits, p: big(hex.p), a: big(hex.a), b: big(hex.b), q: big(hex.q), x: big(hex.x), y: big(hex.y) };
}

const CRYPTO_PRO_A = curve('CryptoPro-A', 256, {
  p: 'FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFD97',
  a: 'FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFD94',
  b: 'A6',
  q: 'FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF6C611070995AD10045841B09B761B893',
  x: '1',
  y: '8D91E471E0989CDA27DF505A453F2B7635294F2DDF23E3B122ACC99C9E9F1E14',
});
const CRYPTO_PRO_B = curve('CryptoPro-B', 256, {
  p: '8000000000000000000000000000000000000000000000000000000000000C99',
  a: '8000000000000000000000000000000000000000000000000000000000000C96',
  b: '3E1AF419A269A5F866A7D3C25C3DF80AE979259373FF2B182F49D4CE7E1BBC8B',
  q: '800000000000000000000000000000015F700CFFF1A624E5E497161BCC8A198F',
  x: '1',
  y: '3FA8124359F96680B83D1C3EB2C070E5C545C9858D03ECFB744BF8D717717EFC',
});
const CRYPTO_PRO_C = curve('CryptoPro-C', 256, {
  p: '9B9F605F5A858107AB1EC85E6B41C8AACF846E86789051D37998F7B9022D759B',
  a: '9B9F605F5A858107AB1EC85E6B41C8AACF846E86789051D37998F7B9022D7598',
  b: '805A',
  q: '9B9F605F5A858107AB1EC85E6B41C8AA582CA3511EDDFB74F02F3A6598980BB9',
  x: '0',
  y: '41ECE55743711A8C3CBF3783CD08C0EE4D4DC440D4641A8F366E550DFDB3BB67',
});
const TC26_256_A = curve('tc26-256-A', 256, {
  p: 'FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFD97',
  a: 'C2173F1513981673AF4892C23035A27CE25E2013BF95AA33B22C656F277E7335',
  b: '295F9BAE7428ED9CCC20E7C359A9D41A22FCCD9108E17BF7BA9337A6F8AE9513',
  q: '400000000000000000000000000000000FD8CDDFC87B6635C115AF556C360C67',
  x: '91E38443A5E82C0D880923425712B2BB658B9196932E02C78B2582FE742DAA28',
  y: '32879423AB1A0375895786C4BB46E9565FDE0B5344766740AF268ADB32322E5C',
});
const TC26_512_A = curve('tc26-512-A', 512, {
  p: 'FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFDC7',
  a: 'FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFDC4',
  b: 'E8C2505DEDFC86DDC1BD0B2B6667F1DA34B82574761CB0E879BD081CFD0B6265EE3CB090F30D27614CB4574010DA90DD862EF9D4EBEE4761503190785A71C760',
  q: 'FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF27E69532F48D89116FF22B8D4E0560609B4B38ABFAD2B85DCACDB1411F10B275',
  x: '3',
  y: '7503CFE87A836AE3A61B8816E25450E6CE5E1C93ACF1ABC1778064FDCBEFA921DF1626BE4FD036E93D75E6A50E3A41E98028FE5FC235F5B889A589CB5215F2A4',
});
const TC26_512_B = curve('tc26-512-B', 512, {
  p: '8000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000006F',
  a: '8000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000006C',
  b: '687D1B459DC841457E3E06CF6F5E2517B97C7D614AF138BCBF85DC806C4B289F3E965D2DB1416D217F8B276FAD1AB69C50F78BEE1FA3106EFB8CCBC7C5140116',
  q: '800000000000000000000000000000000000000000000000000000000000000149A1EC142565A545ACFDB77BD9D40CFA8B996712101BEA0EC6346C54374F25BD',
  x: '2',
  y: '1A8F7EDA389B094C2C071E3647A8940F3C123B697578C213BE6DD9E6C8EC7335DCB228FD1EDF4A39152CBCAAF8C0398828041055F94CEEEC7E21340780FE41BD',
});
const TC26_512_C = curve('tc26-512-C', 512, {
  p: 'FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFDC7',
  a: 'DC9203E514A721875485A529D2C722FB187BC8980EB866644DE41C68E143064546E861C0E2C9EDD92ADE71F46FCF50FF2AD97F951FDA9F2A2EB6546F39689BD3',
  b: 'B4C4EE28CEBC6C2C8AC12952CF37F16AC7EFB6A9F69F4B57FFDA2E4F0DE5ADE038CBC2FFF719D2C18DE0284B8BFEF3B52B8CC7A5F5BF0A3C8D2319A5312557E1',
  q: '3FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFC98CDBA46506AB004C33A9FF5147502CC8EDA9E7A769A12694623CEF47F023ED',
  x: 'E2E31EDFC23DE7BDEBE241CE593EF5DE2295B7A9CBAEF021D385F7074CEA043AA27272A7AE602BF2A7B9033DB9ED3610C6FB85487EAE97AAC5BC7928C1950148',
  y: 'F5CE40D95B5EB899ABBCCFF5911CB8577939804D6527378B8C108C3D2090FF9BE18E2D33E3021ED2EF32D85822423B6304F726AA854BAE07D0396E9A9ADDC40F',
});

/** Public key parameter sets by OID. The tc26 256-bit sets B, C, D are CryptoPro A, B, C under new names (RFC 7836). */
export const CURVES: ReadonlyMap<string, Curve> = new Map([
  ['1.2.643.2.2.35.1', CRYPTO_PRO_A],
  ['1.2.643.2.2.35.2', CRYPTO_PRO_B],
  ['1.2.643.2.2.35.3', CRYPTO_PRO_C],
  ['1.2.643.2.2.36.0', CRYPTO_PRO_A],
  ['1.2.643.2.2.36.1', CRYPTO_PRO_C],
  ['1.2.643.7.1.2.1.1.1', TC26_256_A],
  ['1.2.643.7.1.2.1.1.2', CRYPTO_PRO_A],
  ['1.2.643.7.1.2.1.1.3', CRYPTO_PRO_B],
  ['1.2.643.7.1.2.1.1.4', CRYPTO_PRO_C],
  ['1.2.643.7.1.2.1.2.1', TC26_512_A],
  ['1.2.643.7.1.2.1.2.2', TC26_512_B],
  ['1.2.643.7.1.2.1.2.3', TC26_512_C],
]);

function mod(value: bigint, modulus: bigint): bigint {
  const result = value % modulus;
  return result < 0n ? result + modulus : result;
}

/** The inverse of `value` modulo the prime `modulus` (extended Euclid); `value` is not 0 mod `modulus`. */
function inverse(value: bigint, modulus: bigint): bigint {
  let [oldR, r] = [mod(value, modulus), modulus];
  let [oldS, s] = [1n, 0n];
  while (r !== 0n) {
    const quotient = oldR / r;
    [oldR, r] = [r, oldR - quotient * r];
    [oldS, s] = [s, oldS - quotient * s];
  }
  return mod(oldS, modulus);
}

/** A point in Jacobian coordinates (X/Z², Y/Z³); Z = 0 is the point at infinity. */
interface Jacobian {
  x: bigint;
  y: bigint;
  z: bigint;
}

const INFINITY: Jacobian = { x: 1n, y: 1n, z: 0n };

/**
 * Reduction modulo p. For p = 2^n − c with a small c (CryptoPro A, tc26 256-A, 512-A and 512-C)
 * a shift and a multiplication by c replace BigInt division, the bulk of a verification's time.
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

/** Point arithmetic on one curve; every input coordinate is already reduced. */
class CurveArithmetic {
  private readonly p: bigint;
  private readonly a: bigint;
  private readonly reduce: (value: bigint) => bigint;

  constructor(curve: Curve) {
    this.p = curve.p;
    this.a = curve.a;
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
    const m = this.r(3n * this.r(point.x * point.x) + this.r(this.a * this.r(zz * zz)));
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
    const h = this.r(u2 - u1);
    const r = this.r(s2 - s1);
    if (h === 0n) return r === 0n ? this.double(left) : INFINITY;
    const hh = this.r(h * h);
    const hhh = this.r(h * hh);
    const v = this.r(u1 * hh);
    const x = this.r(r * r - hhh - 2n * v);
    const y = this.r(r * (v - x) - this.r(s1 * hhh));
    const z = this.r(this.r(left.z * right.z) * h);
    return { x, y, z };
  }

  negate(point: Jacobian): Jacobian {
    return { x: point.x, y: point.y === 0n ? 0n : this.p - point.y, z: point.z };
  }

  /** P, 3P, 5P … (2^(w−1) − 1)P: the odd multiples a width-w NAF adds. */
  oddMultiples(point: Jacobian): Jacobian[] {
    const twice = this.double(point);
    const multiples = [point];
    for (let i = 1; i < 1 << (NAF_WIDTH - 2); i += 1) multiples.push(this.add(multiples[i - 1]!, twice));
    return multiples;
  }

  /** k1·P1 + k2·P2: one doubling chain, each scalar in width-w NAF form (few additions). */
  twoMultiples(k1: bigint, p1: Jacobian, k2: bigint, p2: Jacobian): Jacobian {
    const digits1 = nafDigits(k1);
    const digits2 = nafDigits(k2);
    const table1 = this.oddMultiples(p1);
    const table2 = this.oddMultiples(p2);
    let result = INFINITY;
    for (let i = Math.max(digits1.length, digits2.length) - 1; i >= 0; i -= 1) {
      result = this.double(result);
      result = this.addDigit(result, digits1[i] ?? 0, table1);
      result = this.addDigit(result, digits2[i] ?? 0, table2);
    }
    return result;
  }

  private addDigit(point: Jacobian, digit: number, table: Jacobian[]): Jacobian {
    if (digit === 0) return point;
    const multiple = table[(Math.abs(digit) - 1) >> 1]!;
    return this.add(point, digit > 0 ? multiple : this.negate(multiple));
  }
}

const NAF_WIDTH = 5;

/** The width-w non-adjacent form of k, least significant digit first (odd digits below 2^(w−1) in absolute value, or 0). */
function nafDigits(k: bigint): number[] {
  const digits: number[] = [];
  const window = 1n << BigInt(NAF_WIDTH);
  let rest = k;
  while (rest > 0n) {
    let digit = 0;
    if (rest & 1n) {
      let remainder = Number(rest % window);
      if (remainder >= 1 << (NAF_WIDTH - 1)) remainder -= 1 << NAF_WIDTH;
      digit = remainder;
      rest -= BigInt(digit);
    }
    digits.push(digit);
    rest >>= 1n;
  }
  return digits;
}

const ARITHMETIC = new Map<Curve, CurveArithmetic>();

export function isOnCurve(curve: Curve, x: bigint, y: bigint): boolean {
  const { p, a, b } = curve;
  if (x < 0n || x >= p || y < 0n || y >= p) return false;
  return mod(y * y - (x * x * x + a * x + b), p) === 0n;
}

/** The integer of bytes stored least significant first (GOST public keys and digests). */
export function littleEndianInteger(bytes: Uint8Array): bigint {
  return BigInt(`0x${Buffer.from(bytes).reverse().toString('hex') || '0'}`);
}

function bigEndianInteger(bytes: Uint8Array): bigint {
  return BigInt(`0x${Buffer.from(bytes).toString('hex') || '0'}`);
}

function arithmeticOf(curve: Curve): CurveArithmetic {
  let arithmetic = ARITHMETIC.get(curve);
  if (!arithmetic) ARITHMETIC.set(curve, (arithmetic = new CurveArithmetic(curve)));
  return arithmetic;
}

/** k·G, the base point's multiple, in affine coordinates (k in [1, q − 1]). */
export function multiplyBase(curve: Curve, k: bigint): { x: bigint; y: bigint } {
  const point = arithmeticOf(curve).twoMultiples(k, { x: curve.x, y: curve.y, z: 1n }, 0n, INFINITY);
  if (point.z === 0n) throw new Error('k·G is the point at infinity: k must lie in [1, q − 1]');
  const zInverse = inverse(point.z, curve.p);
  const zz = (zInverse * zInverse) % curve.p;
  return { x: (point.x * zz) % curve.p, y: (point.y * ((zz * zInverse) % curve.p)) % curve.p };
}

/**
 * Whether `signature` (s ‖ r, big-endian, 2·bits/8 bytes: RFC 4491, 2.2.2) is a GOST R 34.10-2012
 * signature of `digest` (Streebog output in its engine byte order, read as a little-endian
 * integer) under the public key (x, y).
 */
export function gostVerify(curve: Curve, publicKey: { x: bigint; y: bigint }, digest: Uint8Array, signature: Uint8Array): boolean {
  const size = curve.bits / 8;
  if (signature.length !== 2 * size || digest.length !== size) return false;
  if (!isOnCurve(curve, publicKey.x, publicKey.y)) return false;
  const { q } = curve;
  const s = bigEndianInteger(signature.subarray(0, size));
  const r = bigEndianInteger(signature.subarray(size));
  if (r <= 0n || r >= q || s <= 0n || s >= q) return false;
  let e = littleEndianInteger(digest) % q;
  if (e === 0n) e = 1n;
  const v = inverse(e, q);
  const z1 = (s * v) % q;
  const z2 = mod(-r * v, q);
  const c = arithmeticOf(curve).twoMultiples(z1, { x: curve.x, y: curve.y, z: 1n }, z2, { x: publicKey.x, y: publicKey.y, z: 1n });
  if (c.z === 0n) return false;
  const zInverse = inverse(c.z, curve.p);
  const x = (c.x * ((zInverse * zInverse) % curve.p)) % curve.p;
  return x % q === r;
}
