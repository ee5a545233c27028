import { add18, add9, multiply18, multiply9, multiplySpecial18, multiplySpecial9, square18, square9, squareSpecial18, squareSpecial9, subtract18, subtract9 } from './field.generated';

/**
 * GOST R 34.10-2012 verification arithmetic in WebAssembly, compiled by AssemblyScript (`make
 * build`); ../reference/point-arithmetic.ts and gost3410.ts are the reference the tests compare it with.
 *
 * Numbers are little-endian arrays of 29-bit limbs in 32-bit words (9 limbs for 256-bit curves, 18
 * for 512-bit ones): a product of two limbs and the sum of 2·18 of them fit in 64 bits, so the
 * multiplication (field.generated.ts, written out by scripts/build-wasm.ts) adds products without
 * carry checks and normalizes once at the end (WebAssembly has no 64×64→128-bit multiply). Field
 * elements are in Montgomery form (plain where p = 2^k − c, multiplied without Montgomery: R = 1
 * there), fully reduced. Points are Jacobian (X/Z², Y/Z³; Z = 0 is the point at infinity), coordinates side by
 * side; table points are affine. The caller (../gost-wasm.ts) lays out each curve's constants, the base
 * point's table and the signers' key tables in memory above __heap_base and passes their addresses.
 * Nothing here is constant-time: verification handles no secret.
 */

// @ts-ignore: decorator
@inline const BITS: u32 = 29;
// @ts-ignore: decorator
@inline const MASK: u64 = (1 << 29) - 1;
/** Room for one number: 18 limbs. */
// @ts-ignore: decorator
@inline const SLOT: usize = 72;

/**
 * Byte offsets in a modulus block: m, −m⁻¹ mod 2^29, R² mod m, R mod m (1 in Montgomery form), and
 * c when m = 2^k − c is multiplied without Montgomery (then R is 1: R² and "R mod m" are 1), else 0.
 */
// @ts-ignore: decorator
@inline function minvAt(block: usize): usize { return block + L; }
// @ts-ignore: decorator
@inline function r2At(block: usize): usize { return block + L + 4; }
// @ts-ignore: decorator
@inline function oneAt(block: usize): usize { return block + 2 * L + 4; }
// @ts-ignore: decorator
@inline function specialAt(block: usize): usize { return block + 3 * L + 4; }

/** Limbs per number and bytes per number of the selected curve. */
let N: i32 = 9;
let L: usize = 36;
/** The modulus blocks of p and q, the modulus of the field operations now, a and b (in the field's form). */
let P: usize = 0;
let Q: usize = 0;
let MOD: usize = 0;
let CURVE_A: usize = 0;
let CURVE_B: usize = 0;
let A_IS_MINUS_3: bool = false;

/**
 * Scratch numbers (slot i at SCRATCH + i·SLOT) and points (three slots each): 0–15 for doubling and
 * addition, 16–57 points (jointMultiply's at 25–33), 62 the NAF digits' scalar, 64–79 the verification's numbers, 80–84
 * inversion.
 */
const SCRATCH: usize = memory.data(<i32>SLOT * 96, 16);
// @ts-ignore: decorator
@inline function slot(i: usize): usize { return SCRATCH + i * SLOT; }
/** NAF digits of a scalar, least significant first; a second scalar's beside them (jointMultiply). */
const NAF: usize = memory.data(600, 16);
const NAF_ORDER: usize = memory.data(600, 16);

/**
 * What the caller writes before a call: the key's x and y (little-endian, bits/8 bytes each), the
 * digest (little-endian) and the signature s ‖ r (big-endian), at the offsets below.
 */
const INPUT: usize = memory.data(384, 16);
export const INPUT_KEY_X: i32 = 0;
export const INPUT_KEY_Y: i32 = 64;
export const INPUT_DIGEST: i32 = 128;
export const INPUT_SIGNATURE: i32 = 192;

export function curveInput(): usize {
  return INPUT;
}

/** The first byte the caller may use for curve blocks and tables. */
export function heapBase(): usize {
  return __heap_base;
}

/** The size of a curve block for `limbs` limbs: the blocks of p and q, then a, b. */
export function curveBlockBytes(limbs: i32): i32 {
  return 2 * (12 * limbs + 8) + 8 * limbs;
}

function selectCurve(curve: usize, limbs: i32): void {
  N = limbs;
  L = <usize>limbs << 2;
  P = curve;
  Q = curve + 3 * L + 8;
  CURVE_A = Q + 3 * L + 8;
  CURVE_B = CURVE_A + L;
  MOD = P;
  A_IS_MINUS_3 = false;
}

// ---------------------------------------------------------------------------------------------
// Numbers

function copy(destination: usize, source: usize): void {
  memory.copy(destination, source, L);
}

function setSmall(destination: usize, value: u32): void {
  memory.fill(destination, 0, L);
  store<u32>(destination, value);
}

function isZero(a: usize): bool {
  let bits: u32 = 0;
  for (let i: usize = 0; i < L; i += 4) bits |= load<u32>(a + i);
  return bits == 0;
}

function equal(a: usize, b: usize): bool {
  for (let i: usize = 0; i < L; i += 4) if (load<u32>(a + i) != load<u32>(b + i)) return false;
  return true;
}

function lessThan(a: usize, b: usize): bool {
  for (let i = <isize>L - 4; i >= 0; i -= 4) {
    const left = load<u32>(a + i);
    const right = load<u32>(b + i);
    if (left != right) return left < right;
  }
  return false;
}

/** out = a − b on plain numbers (a ≥ b); out may be a or b. */
function subtractPlain(out: usize, a: usize, b: usize): void {
  let borrow: i32 = 0;
  for (let i: usize = 0; i < L; i += 4) {
    const value = <i32>load<u32>(a + i) - <i32>load<u32>(b + i) - borrow;
    borrow = (value >>> 31) as i32;
    store<u32>(out + i, <u32>value & <u32>MASK);
  }
}

/** out = a + b on plain numbers (the sum fits the limbs); out may be a or b. */
function addPlain(out: usize, a: usize, b: usize): void {
  let carry: u32 = 0;
  for (let i: usize = 0; i < L; i += 4) {
    const value = load<u32>(a + i) + load<u32>(b + i) + carry;
    store<u32>(out + i, value & <u32>MASK);
    carry = value >> BITS;
  }
}

/** Little-endian (or big-endian) bytes into limbs. */
function loadBytes(out: usize, bytes: usize, size: i32, bigEndian: bool): void {
  memory.fill(out, 0, L);
  let accumulator: u64 = 0;
  let held: u32 = 0;
  let limb: usize = out;
  for (let i = 0; i < size; i++) {
    const byte = <u64>load<u8>(bytes + <usize>(bigEndian ? size - 1 - i : i));
    accumulator |= byte << held;
    held += 8;
    if (held >= BITS) {
      store<u32>(limb, <u32>(accumulator & MASK));
      limb += 4;
      accumulator >>= BITS;
      held -= BITS;
    }
  }
  if (held > 0) store<u32>(limb, <u32>accumulator);
}

/** Limbs into little-endian bytes. */
function storeBytes(bytes: usize, a: usize, size: i32): void {
  let accumulator: u64 = 0;
  let held: u32 = 0;
  let limb: usize = a;
  for (let i = 0; i < size; i++) {
    if (held < 8) {
      accumulator |= <u64>load<u32>(limb) << held;
      limb += 4;
      held += BITS;
    }
    store<u8>(bytes + i, <u8>accumulator);
    accumulator >>= 8;
    held -= 8;
  }
}

// ---------------------------------------------------------------------------------------------
// Field elements (Montgomery form modulo MOD)

/** out = a·b·R⁻¹ mod m; out may be a or b. */
function multiply(out: usize, a: usize, b: usize): void {
  const c = <u64>load<u32>(specialAt(MOD));
  if (N == 9) {
    if (c != 0) multiplySpecial9(out, a, b, MOD, c);
    else multiply9(out, a, b, MOD);
  } else if (c != 0) multiplySpecial18(out, a, b, MOD, c);
  else multiply18(out, a, b, MOD);
}

/** out = a²·R⁻¹ mod m; out may be a. */
function square(out: usize, a: usize): void {
  const c = <u64>load<u32>(specialAt(MOD));
  if (N == 9) {
    if (c != 0) squareSpecial9(out, a, MOD, c);
    else square9(out, a, MOD);
  } else if (c != 0) squareSpecial18(out, a, MOD, c);
  else square18(out, a, MOD);
}

/** out = a + b mod m; out may be a or b. */
function add(out: usize, a: usize, b: usize): void {
  if (N == 9) add9(out, a, b, MOD);
  else add18(out, a, b, MOD);
}

/** out = a − b mod m; out may be a or b. */
function subtract(out: usize, a: usize, b: usize): void {
  if (N == 9) subtract9(out, a, b, MOD);
  else subtract18(out, a, b, MOD);
}

function isOne(a: usize): bool {
  let bits: u32 = load<u32>(a) ^ 1;
  for (let i: usize = 4; i < L; i += 4) bits |= load<u32>(a + i);
  return bits == 0;
}

/** x >>= 1 on a plain number. */
function halve(x: usize): void {
  for (let i: usize = 0; i < L; i += 4) {
    const next = i + 4 < L ? load<u32>(x + i + 4) : 0;
    store<u32>(x + i, (load<u32>(x + i) >> 1) | ((next & 1) << (BITS - 1)));
  }
}

/** x = x/2 mod m (x < m). */
function halveModular(x: usize): void {
  if ((load<u32>(x) & 1) != 0) addPlain(x, x, MOD);
  halve(x);
}

/**
 * out = a⁻¹ mod m for a plain a in [0, m) (0 for 0), by the binary extended Euclidean algorithm:
 * x1·a ≡ u and x2·a ≡ v (mod m) throughout, until u or v is 1. About 2·bits short steps, each a
 * pass over the limbs: several times fewer operations than Fermat's a^(m−2).
 */
function invertPlain(out: usize, a: usize): void {
  if (isZero(a)) {
    memory.fill(out, 0, L);
    return;
  }
  const u = slot(80);
  const v = slot(81);
  const x1 = slot(82);
  const x2 = slot(83);
  copy(u, a);
  copy(v, MOD);
  setSmall(x1, 1);
  setSmall(x2, 0);
  while (!isOne(u) && !isOne(v)) {
    while ((load<u32>(u) & 1) == 0) {
      halve(u);
      halveModular(x1);
    }
    while ((load<u32>(v) & 1) == 0) {
      halve(v);
      halveModular(x2);
    }
    if (lessThan(u, v)) {
      subtractPlain(v, v, u);
      subtract(x2, x2, x1);
    } else {
      subtractPlain(u, u, v);
      subtract(x1, x1, x2);
    }
  }
  copy(out, isOne(u) ? x1 : x2);
}

/** out = a⁻¹ in Montgomery form (a ≠ 0); out may be a. */
function invert(out: usize, a: usize): void {
  const plain = slot(84);
  setSmall(plain, 1);
  multiply(plain, a, plain);
  invertPlain(plain, plain);
  toMontgomery(out, plain);
}

/** Plain limbs into Montgomery form. */
function toMontgomery(out: usize, a: usize): void {
  multiply(out, a, r2At(MOD));
}

// ---------------------------------------------------------------------------------------------
// Points (modulo p)

// @ts-ignore: decorator
@inline function coordinateY(point: usize): usize { return point + L; }
// @ts-ignore: decorator
@inline function coordinateZ(point: usize): usize { return point + 2 * L; }

function copyPoint(destination: usize, source: usize): void {
  memory.copy(destination, source, 3 * L);
}

function setInfinity(point: usize): void {
  memory.fill(point, 0, 3 * L);
}

/** out = 2·point; out may be point. */
function double(out: usize, point: usize): void {
  const x = point;
  const y = coordinateY(point);
  const z = coordinateZ(point);
  if (isZero(z) || isZero(y)) {
    setInfinity(out);
    return;
  }
  const yy = slot(0);
  const zz = slot(1);
  const s = slot(2);
  const m = slot(3);
  const t = slot(4);
  const x3 = slot(5);
  const y3 = slot(6);
  const z3 = slot(7);
  square(yy, y);
  square(zz, z);
  multiply(s, x, yy);
  add(s, s, s);
  add(s, s, s);
  if (A_IS_MINUS_3) {
    // m = 3(X − Z²)(X + Z²)
    subtract(m, x, zz);
    add(t, x, zz);
    multiply(m, m, t);
  } else {
    // m = 3X² + a·Z⁴
    square(m, x);
    square(t, zz);
    multiply(t, t, CURVE_A);
  }
  add(x3, m, m);
  add(m, x3, m);
  if (!A_IS_MINUS_3) add(m, m, t);
  square(x3, m);
  subtract(x3, x3, s);
  subtract(x3, x3, s);
  subtract(t, s, x3);
  multiply(y3, m, t);
  square(t, yy);
  add(t, t, t);
  add(t, t, t);
  add(t, t, t);
  subtract(y3, y3, t);
  multiply(z3, y, z);
  add(z3, z3, z3);
  copy(out, x3);
  copy(coordinateY(out), y3);
  copy(coordinateZ(out), z3);
}

/** The common end of both additions: u, s are the two points' X and Y brought to one Z (zProduct). */
function finishAdd(out: usize, left: usize, u1: usize, s1: usize, u2: usize, s2: usize, zProduct: usize): void {
  const h = slot(8);
  const r = slot(9);
  subtract(h, u2, u1);
  subtract(r, s2, s1);
  if (isZero(h)) {
    if (isZero(r)) double(out, left);
    else setInfinity(out);
    return;
  }
  const hh = slot(10);
  const hhh = slot(11);
  const v = slot(12);
  const x3 = slot(13);
  const y3 = slot(14);
  const t = slot(15);
  square(hh, h);
  multiply(hhh, h, hh);
  multiply(v, u1, hh);
  square(x3, r);
  subtract(x3, x3, hhh);
  subtract(x3, x3, v);
  subtract(x3, x3, v);
  subtract(t, v, x3);
  multiply(y3, r, t);
  multiply(t, s1, hhh);
  subtract(y3, y3, t);
  multiply(coordinateZ(out), zProduct, h);
  copy(out, x3);
  copy(coordinateY(out), y3);
}

/** out = left + right (both Jacobian); out may be left or right. */
function addPoints(out: usize, left: usize, right: usize): void {
  const leftZ = coordinateZ(left);
  const rightZ = coordinateZ(right);
  if (isZero(leftZ)) {
    copyPoint(out, right);
    return;
  }
  if (isZero(rightZ)) {
    copyPoint(out, left);
    return;
  }
  const z1z1 = slot(0);
  const z2z2 = slot(1);
  const u1 = slot(2);
  const u2 = slot(3);
  const s1 = slot(4);
  const s2 = slot(5);
  const zProduct = slot(6);
  square(z1z1, leftZ);
  square(z2z2, rightZ);
  multiply(u1, left, z2z2);
  multiply(u2, right, z1z1);
  multiply(s1, coordinateY(left), rightZ);
  multiply(s1, s1, z2z2);
  multiply(s2, coordinateY(right), leftZ);
  multiply(s2, s2, z1z1);
  multiply(zProduct, leftZ, rightZ);
  finishAdd(out, left, u1, s1, u2, s2, zProduct);
}

/** out = left + (x, y), an affine point; out may be left. */
function addAffine(out: usize, left: usize, affine: usize): void {
  const leftZ = coordinateZ(left);
  if (isZero(leftZ)) {
    memory.copy(out, affine, 2 * L);
    copy(coordinateZ(out), oneAt(P));
    return;
  }
  const z1z1 = slot(0);
  const u2 = slot(3);
  const s2 = slot(5);
  const zProduct = slot(6);
  square(z1z1, leftZ);
  multiply(u2, affine, z1z1);
  multiply(s2, affine + L, leftZ);
  multiply(s2, s2, z1z1);
  // finishAdd reads left's X, Y and Z before it writes out.
  copy(zProduct, leftZ);
  finishAdd(out, left, left, coordinateY(left), u2, s2, zProduct);
}

/** The `width` bits of the scalar k from bit `position` on. */
function bitsAt(k: usize, position: i32, width: i32): u32 {
  const limb = position / <i32>BITS;
  const offset = <u32>(position % <i32>BITS);
  let value = load<u32>(k + (<usize>limb << 2)) >> offset;
  if (offset + <u32>width > BITS && limb + 1 < N) value |= load<u32>(k + (<usize>(limb + 1) << 2)) << (BITS - offset);
  return value & ((<u32>1 << width) - 1);
}

/** out = k·P from P's table: rows[i][j − 1] = j·2^(width·i)·P, affine, 2^width − 1 points a row. */
function tableMultiply(out: usize, table: usize, width: i32, rows: i32, k: usize): void {
  setInfinity(out);
  const perRow = (1 << width) - 1;
  const pointBytes: usize = 2 * L;
  for (let row = 0; row < rows; row++) {
    const digit = bitsAt(k, row * width, width);
    if (digit != 0) addAffine(out, out, table + <usize>(row * perRow + <i32>digit - 1) * pointBytes);
  }
}

// @ts-ignore: decorator
@inline const NAF_WIDTH: u32 = 5;

/** The width-`width` NAF digits of the plain scalar k into `out`, least significant first; their count. */
function nafDigits(k: usize, width: u32, out: usize): i32 {
  const rest = slot(62);
  copy(rest, k);
  let count = 0;
  const window = <i32>1 << width;
  while (!isZero(rest)) {
    let digit: i32 = 0;
    const low = load<u32>(rest);
    if ((low & 1) != 0) {
      digit = <i32>low & (window - 1);
      if (digit >= window >> 1) digit -= window;
      if (digit > 0) {
        store<u32>(rest, low - <u32>digit);
      } else {
        // rest += −digit, carrying.
        let carry = <u32>(-digit);
        for (let i: usize = 0; i < L && carry != 0; i += 4) {
          const value = load<u32>(rest + i) + carry;
          store<u32>(rest + i, value & <u32>MASK);
          carry = value >> BITS;
        }
      }
    }
    store<i8>(out + count, <i8>digit);
    count++;
    // rest >>= 1
    for (let i: usize = 0; i < L; i += 4) {
      const next = i + 4 < L ? load<u32>(rest + i + 4) : 0;
      store<u32>(rest + i, (load<u32>(rest + i) >> 1) | ((next & 1) << (BITS - 1)));
    }
  }
  return count;
}

const ODD_MULTIPLES: usize = 28;

/** out = k·point (Jacobian) by width-5 NAF: a doubling per bit, an addition per non-zero digit. */
function nafMultiply(out: usize, point: usize, k: usize): void {
  const twice = slot(52);
  const negated = slot(25);
  copyPoint(slot(ODD_MULTIPLES), point);
  double(twice, point);
  for (let i: usize = 1; i < 8; i++) addPoints(slot(ODD_MULTIPLES + 3 * i), slot(ODD_MULTIPLES + 3 * (i - 1)), twice);
  const count = nafDigits(k, NAF_WIDTH, NAF);
  setInfinity(out);
  for (let i = count - 1; i >= 0; i--) {
    double(out, out);
    const digit = <i32>load<i8>(NAF + i);
    if (digit == 0) continue;
    const multiple = slot(ODD_MULTIPLES + 3 * <usize>(((digit < 0 ? -digit : digit) - 1) >> 1));
    if (digit > 0) {
      addPoints(out, out, multiple);
    } else {
      copyPoint(negated, multiple);
      const y = coordinateY(negated);
      if (!isZero(y)) subtractPlain(y, P, y);
      addPoints(out, out, negated);
    }
  }
}

/** accumulator += digit·point for a NAF digit of ±1 (0: nothing); `negated` is scratch. */
function addSigned(accumulator: usize, point: usize, digit: i32, negated: usize): void {
  if (digit > 0) {
    addPoints(accumulator, accumulator, point);
  } else if (digit < 0) {
    copyPoint(negated, point);
    const y = coordinateY(negated);
    if (!isZero(y)) subtractPlain(y, P, y);
    addPoints(accumulator, accumulator, negated);
  }
}

/**
 * out = k·point, and whether q·point = O (the key's subgroup check), with one chain of doublings:
 * right to left, point, 2·point, 4·point, … added into two sums by the width-2 NAF digits of k and
 * of q. A doubling per bit serves both scalars, where k·point and q·point apart (nafMultiply) take
 * a doubling per bit each: about 0.7 of their cost on a curve with a cofactor, for a key not seen before.
 */
function jointMultiply(out: usize, point: usize, k: usize): bool {
  const power = slot(28);
  const order = slot(31);
  const negated = slot(25);
  const count = nafDigits(k, 2, NAF);
  const orderCount = nafDigits(Q, 2, NAF_ORDER);
  const longest = count > orderCount ? count : orderCount;
  copyPoint(power, point);
  setInfinity(out);
  setInfinity(order);
  for (let i = 0; i < longest; i++) {
    if (i < count) addSigned(out, power, <i32>load<i8>(NAF + i), negated);
    if (i < orderCount) addSigned(order, power, <i32>load<i8>(NAF_ORDER + i), negated);
    if (i + 1 < longest) double(power, power);
  }
  return isZero(coordinateZ(order));
}

/** Loads the key (x, y) of the input into a Jacobian point in Montgomery form; false if x or y ≥ p. */
function loadKey(point: usize, size: i32): bool {
  loadBytes(point, INPUT + INPUT_KEY_X, size, false);
  loadBytes(coordinateY(point), INPUT + INPUT_KEY_Y, size, false);
  if (!lessThan(point, P) || !lessThan(coordinateY(point), P)) return false;
  toMontgomery(point, point);
  toMontgomery(coordinateY(point), coordinateY(point));
  copy(coordinateZ(point), oneAt(P));
  return true;
}

/** Whether the affine point (x, y), Montgomery form, satisfies y² = x³ + ax + b. */
function onCurve(point: usize): bool {
  const left = slot(64);
  const right = slot(65);
  square(left, coordinateY(point));
  square(right, point);
  add(right, right, CURVE_A);
  multiply(right, right, point);
  add(right, right, CURVE_B);
  return equal(left, right);
}

export const VERIFIED: i32 = 1;
export const NOT_VERIFIED: i32 = 0;
export const KEY_NOT_ON_CURVE: i32 = 2;
export const KEY_OUTSIDE_SUBGROUP: i32 = 3;
/** Key checks the caller asks for: none (a key checked before), on the curve, and in the order-q subgroup. */
export const CHECK_NONE: i32 = 0;
export const CHECK_ON_CURVE: i32 = 1;
export const CHECK_SUBGROUP: i32 = 2;

/**
 * GOST R 34.10-2012 verification (RFC 7091, 6.2) of the input's digest, signature and key, on the
 * curve at `curve` (`limbs` limbs, a = −3 or not), with the base point's table and the key's table
 * (0: none, the key is multiplied by NAF). The key is checked as `check` says (on the curve
 * first; in the subgroup while it is multiplied, jointMultiply): a result other than KEY_* means it passed.
 */
export function verify(curve: usize, limbs: i32, aIsMinus3: bool, baseTable: usize, baseWidth: i32, baseRows: i32, keyTable: usize, keyWidth: i32, keyRows: i32, check: i32): i32 {
  selectCurve(curve, limbs);
  A_IS_MINUS_3 = aIsMinus3;
  const size = limbs == 9 ? 32 : 64;
  const s = slot(66);
  const r = slot(67);
  const e = slot(68);
  const v = slot(69);
  const z1 = slot(70);
  const z2 = slot(71);
  const candidate = slot(72);
  const zz = slot(73);
  const key = slot(19);
  if (check != CHECK_NONE || keyTable == 0) {
    if (!loadKey(key, size) || !onCurve(key)) return KEY_NOT_ON_CURVE;
  }
  loadBytes(s, INPUT + INPUT_SIGNATURE, size, true);
  loadBytes(r, INPUT + INPUT_SIGNATURE + size, size, true);
  if (isZero(r) || isZero(s) || !lessThan(r, Q) || !lessThan(s, Q)) {
    // No z2 to share the doublings with: the key is still checked, as the caller keeps the verdict.
    if (check == CHECK_SUBGROUP) {
      nafMultiply(slot(22), key, Q);
      if (!isZero(coordinateZ(slot(22)))) return KEY_OUTSIDE_SUBGROUP;
    }
    return NOT_VERIFIED;
  }
  // e = digest mod q (0 → 1), v = e⁻¹, z1 = s·v, z2 = −r·v, all mod q.
  loadBytes(e, INPUT + INPUT_DIGEST, size, false);
  while (!lessThan(e, Q)) subtractPlain(e, e, Q);
  if (isZero(e)) store<u32>(e, 1);
  MOD = Q;
  invertPlain(v, e);
  toMontgomery(v, v);
  // A plain number times a Montgomery one is plain: z1 and z2 come out as integers.
  multiply(z1, s, v);
  setSmall(candidate, 0);
  subtract(candidate, candidate, r);
  multiply(z2, candidate, v);
  MOD = P;
  // C = z1·G + z2·Q
  const c = slot(16);
  const keyMultiple = slot(22);
  tableMultiply(c, baseTable, baseWidth, baseRows, z1);
  if (keyTable != 0) tableMultiply(keyMultiple, keyTable, keyWidth, keyRows, z2);
  else if (check == CHECK_SUBGROUP) {
    if (!jointMultiply(keyMultiple, key, z2)) return KEY_OUTSIDE_SUBGROUP;
  } else nafMultiply(keyMultiple, key, z2);
  addPoints(c, c, keyMultiple);
  if (isZero(coordinateZ(c))) return NOT_VERIFIED;
  // x(C) mod q = r without an inversion: X = x·Z² for x one of r, r + q, r + 2q, … below p.
  square(zz, coordinateZ(c));
  copy(candidate, r);
  while (lessThan(candidate, P)) {
    const product = slot(74);
    toMontgomery(product, candidate);
    multiply(product, product, zz);
    if (equal(product, c)) return VERIFIED;
    addPlain(candidate, candidate, Q);
  }
  return NOT_VERIFIED;
}

/**
 * Writes the table of the input's key point (x, y) at `out`: rows of j·2^(width·i)·P, j = 1 …
 * 2^width − 1, affine, Montgomery form; `scratch` holds rows·(2^width − 1) Jacobian points and as
 * many numbers. False when the point is not on the curve or a multiple is the point at infinity.
 */
export function buildTable(curve: usize, limbs: i32, aIsMinus3: bool, out: usize, width: i32, rows: i32, scratch: usize): bool {
  selectCurve(curve, limbs);
  A_IS_MINUS_3 = aIsMinus3;
  const rowBase = slot(52);
  const multiple = slot(55);
  if (!loadKey(rowBase, limbs == 9 ? 32 : 64) || !onCurve(rowBase)) return false;
  const perRow = (1 << width) - 1;
  const count = <usize>(rows * perRow);
  const pointBytes: usize = 3 * L;
  const prefixes = scratch + count * pointBytes;
  let at = scratch;
  for (let row = 0; row < rows; row++) {
    copyPoint(multiple, rowBase);
    copyPoint(at, multiple);
    at += pointBytes;
    for (let j = 2; j <= perRow; j++) {
      addPoints(multiple, multiple, rowBase);
      copyPoint(at, multiple);
      at += pointBytes;
    }
    addPoints(rowBase, multiple, rowBase);
  }
  // Affine with one inversion (Montgomery's trick).
  const product = slot(64);
  const inverted = slot(65);
  const zInverse = slot(66);
  const zz = slot(67);
  copy(product, oneAt(P));
  for (let i: usize = 0; i < count; i++) {
    const z = coordinateZ(scratch + i * pointBytes);
    if (isZero(z)) return false;
    copy(prefixes + i * L, product);
    multiply(product, product, z);
  }
  invert(inverted, product);
  for (let i = <isize>count - 1; i >= 0; i--) {
    const point = scratch + <usize>i * pointBytes;
    const affine = out + <usize>i * 2 * L;
    multiply(zInverse, inverted, prefixes + <usize>i * L);
    multiply(inverted, inverted, coordinateZ(point));
    square(zz, zInverse);
    multiply(affine, point, zz);
    multiply(zz, zz, zInverse);
    multiply(affine + L, coordinateY(point), zz);
  }
  return true;
}

/**
 * For the tests' comparison with BigInt: a op b modulo p (modulus 0) or q (1), op 0 = a·b, 1 = a + b,
 * 2 = a − b, 3 = a⁻¹; a at INPUT_KEY_X, b at INPUT_KEY_Y (little-endian, reduced), the result at
 * INPUT_DIGEST.
 */
export function fieldOperation(curve: usize, limbs: i32, modulus: i32, operation: i32): void {
  selectCurve(curve, limbs);
  MOD = modulus == 0 ? P : Q;
  const size = limbs == 9 ? 32 : 64;
  const a = slot(64);
  const b = slot(65);
  loadBytes(a, INPUT + INPUT_KEY_X, size, false);
  loadBytes(b, INPUT + INPUT_KEY_Y, size, false);
  toMontgomery(a, a);
  toMontgomery(b, b);
  if (operation == 0) multiply(a, a, b);
  else if (operation == 1) add(a, a, b);
  else if (operation == 2) subtract(a, a, b);
  else invert(a, a);
  // Out of Montgomery form: times plain 1.
  setSmall(b, 1);
  multiply(a, a, b);
  storeBytes(INPUT + INPUT_DIGEST, a, size);
}

