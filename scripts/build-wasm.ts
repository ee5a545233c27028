/**
 * Builds the GOST check's WebAssembly module, src/emdr/signatures/crypto/gost.wasm, from the
 * AssemblyScript in src/emdr/signatures/crypto/assembly/ (compiler: the `assemblyscript` npm
 * package, options in its asconfig.json). First it writes two sources there: field.generated.ts,
 * the Montgomery multiplication and squaring (and the plain ones for p = 2^k − c), the modular
 * addition and subtraction, for 9 and 18 limbs written out in full, every limb in a local, which
 * runs about twice as fast in V8 as the same loops (loads and stores of an accumulator); and
 * streebog-constants.generated.ts, the standard's constants of ../src/emdr/signatures/crypto/reference/streebog.ts.
 *   tsx scripts/build-wasm.ts
 */
import fs from 'node:fs';
import path from 'node:path';
import asc from 'assemblyscript/asc';
import { A, C, PI } from '../src/emdr/signatures/crypto/reference/streebog.ts';
import { commandLine } from './lib/command-line.ts';

const HELP = `usage: tsx scripts/build-wasm.ts

Builds src/emdr/signatures/crypto/gost.wasm (Streebog and GOST R 34.10-2012 verification) with AssemblyScript.

options:
  -h, --help   this text

example: tsx scripts/build-wasm.ts`;

commandLine('build-wasm', HELP, { options: {} });

const assembly = path.resolve(import.meta.dirname, '../src/emdr/signatures/crypto/assembly');

/**
 * The products of column k: a_i·b_(k−i) (a_i·a_(k−i) when squaring, each pair once, doubled) and,
 * for Montgomery, f_i·p_(k−i) for every i of the column (f: the multiples of m chosen so far).
 */
function columnTerms(n: number, k: number, square: boolean, montgomery = true): string[] {
  const terms: string[] = [];
  const low = Math.max(0, k - n + 1);
  const high = Math.min(k, n - 1);
  if (square) {
    const pairs: string[] = [];
    for (let i = low; i < k - i; i += 1) pairs.push(`a${i} * a${k - i}`);
    if (pairs.length > 0) terms.push(`((${pairs.join(' + ')}) << 1)`);
    if (k % 2 === 0) terms.push(`a${k / 2} * a${k / 2}`);
  } else {
    for (let i = low; i <= high; i += 1) terms.push(`a${i} * b${k - i}`);
  }
  if (montgomery) for (let i = low; i <= Math.min(high, k < n ? k - 1 : high); i += 1) terms.push(`f${i} * p${k - i}`);
  return terms;
}

/**
 * The end of each operation: the result's limbs (named `result` + i, i32, value below 2m) stored to
 * out, less m when they are not below m (limb i of m: `modulus(i)`).
 */
function subtractOnceAndStore(n: number, result: string, modulus: (i: number) => string): string[] {
  const lines = ['  let borrow: i32 = 0;'];
  for (let i = 0; i < n; i += 1) {
    lines.push(`  const d${i} = ${result}${i} - ${modulus(i)} - borrow;`);
    lines.push(`  borrow = d${i} >>> 31;`);
  }
  lines.push('  if (borrow == 0) {');
  for (let i = 0; i < n; i += 1) lines.push(`    store<i32>(out, d${i} & 0x1fffffff, ${4 * i});`);
  lines.push('  } else {');
  for (let i = 0; i < n; i += 1) lines.push(`    store<i32>(out, ${result}${i}, ${4 * i});`);
  lines.push('  }', '}');
  return lines;
}

/**
 * out = a·b·R⁻¹ mod m (or a²·R⁻¹), R = 2^(29n), with a, b < m and limbs < 2^29: product scanning,
 * the column sum in one u64 (at most 2n products below 2^58 and a carry: below 2^64 for n ≤ 18),
 * then one conditional subtraction of m.
 */
function montgomery(n: number, square: boolean): string {
  const lines: string[] = [];
  const name = `${square ? 'square' : 'multiply'}${n}`;
  lines.push(`export function ${name}(out: usize, a: usize, ${square ? '' : 'b: usize, '}m: usize): void {`);
  lines.push(`  const minv = <u64>load<u32>(m, ${4 * n});`);
  for (let i = 0; i < n; i += 1) {
    lines.push(
      `  const a${i} = <u64>load<u32>(a, ${4 * i});${square ? '' : ` const b${i} = <u64>load<u32>(b, ${4 * i});`} const p${i} = <u64>load<u32>(m, ${4 * i});`,
    );
  }
  lines.push('  let sum: u64 = 0;');
  for (let k = 0; k < n; k += 1) {
    lines.push(`  sum += ${columnTerms(n, k, square).join(' + ')};`);
    lines.push(`  const f${k} = ((sum & 0x1fffffff) * minv) & 0x1fffffff;`);
    lines.push(`  sum = (sum + f${k} * p0) >> 29;`);
  }
  for (let k = n; k < 2 * n - 1; k += 1) {
    lines.push(`  sum += ${columnTerms(n, k, square).join(' + ')};`);
    lines.push(`  const r${k - n} = <i32>(sum & 0x1fffffff);`);
    lines.push('  sum >>= 29;');
  }
  lines.push(`  const r${n - 1} = <i32>sum;`);
  lines.push(...subtractOnceAndStore(n, 'r', (i) => `<i32>p${i}`));
  return lines.join('\n');
}

/**
 * out = a·b mod p (or a² mod p) for p = 2^k − c with c < 2^10 (k = 256 for 9 limbs, 512 for 18):
 * the full product by columns, then x = low + high·c twice (2^k ≡ c), below 2^k + 2^21 < 2p, then
 * one conditional subtraction of p. Half the products of the Montgomery multiplication, for the
 * parameter sets whose p has that form (CryptoPro-A, tc26-256-A, tc26-512-A and C).
 */
function pseudoMersenne(n: number, square: boolean): string {
  const k = n === 9 ? 256 : 512;
  const limb = Math.floor(k / 29);
  const shift = k % 29;
  const lines: string[] = [];
  lines.push(`export function ${square ? 'square' : 'multiply'}Special${n}(out: usize, a: usize, ${square ? '' : 'b: usize, '}m: usize, c: u64): void {`);
  for (let i = 0; i < n; i += 1) lines.push(`  const a${i} = <u64>load<u32>(a, ${4 * i});${square ? '' : ` const b${i} = <u64>load<u32>(b, ${4 * i});`}`);
  lines.push('  let sum: u64 = 0;');
  for (let column = 0; column < 2 * n - 1; column += 1) {
    lines.push(`  sum += ${columnTerms(n, column, square, false).join(' + ')};`);
    lines.push(`  const r${column} = sum & 0x1fffffff;`);
    lines.push('  sum >>= 29;');
  }
  lines.push(`  const r${2 * n - 1} = sum;`);
  // t = (r mod 2^k) + (r >> k)·c
  const highLimbs = 2 * n - limb;
  const highPart = (j: number) => `((r${limb + j} >> ${shift}) | ((${limb + j + 1 < 2 * n ? `r${limb + j + 1}` : '0'} << ${29 - shift}) & 0x1fffffff))`;
  lines.push('  sum = 0;');
  for (let j = 0; j < highLimbs; j += 1) {
    const lowPart = j < limb ? `r${j}` : j === limb ? `(r${limb} & ${(1 << shift) - 1})` : '0';
    lines.push(`  sum += ${lowPart} + ${highPart(j)} * c;`);
    lines.push(`  const t${j} = sum & 0x1fffffff;`);
    lines.push('  sum >>= 29;');
  }
  // t < 2^(k+11): fold its bits from k on once more.
  const above = [`(t${limb} >> ${shift})`, `(t${limb + 1} << ${29 - shift})`];
  if (limb + 2 < highLimbs) above.push(`(t${limb + 2} << ${58 - shift})`);
  lines.push(`  sum = (${above.join(' | ')} | (sum << ${29 * highLimbs - k})) * c;`);
  const result: string[] = [];
  for (let j = 0; j < n; j += 1) {
    const lowPart = j < limb ? `t${j}` : `(t${limb} & ${(1 << shift) - 1})`;
    lines.push(`  sum += ${lowPart};`);
    lines.push(`  const u${j} = <i32>(sum & 0x1fffffff);`);
    if (j < n - 1) lines.push('  sum >>= 29;');
    result.push(`u${j}`);
  }
  lines.push(...subtractOnceAndStore(n, 'u', (i) => `load<i32>(m, ${4 * i})`));
  return lines.join('\n');
}

/** out = a + b mod m (a, b < m), then one conditional subtraction of m. */
function modularAdd(n: number): string {
  const lines = [`export function add${n}(out: usize, a: usize, b: usize, m: usize): void {`, '  let carry: i32 = 0;'];
  for (let i = 0; i < n; i += 1) {
    lines.push(`  const s${i} = load<i32>(a, ${4 * i}) + load<i32>(b, ${4 * i}) + carry;`);
    lines.push(`  carry = s${i} >>> 29;`);
    lines.push(`  const r${i} = s${i} & 0x1fffffff;`);
  }
  lines.push(...subtractOnceAndStore(n, 'r', (i) => `load<i32>(m, ${4 * i})`));
  return lines.join('\n');
}

/** out = a − b mod m (a, b < m): m added back when the subtraction borrowed. */
function modularSubtract(n: number): string {
  const lines = [`export function subtract${n}(out: usize, a: usize, b: usize, m: usize): void {`, '  let borrow: i32 = 0;'];
  for (let i = 0; i < n; i += 1) {
    lines.push(`  const d${i} = load<i32>(a, ${4 * i}) - load<i32>(b, ${4 * i}) - borrow;`);
    lines.push(`  borrow = d${i} >>> 31;`);
    lines.push(`  const r${i} = d${i} & 0x1fffffff;`);
  }
  lines.push('  if (borrow == 0) {');
  for (let i = 0; i < n; i += 1) lines.push(`    store<i32>(out, r${i}, ${4 * i});`);
  lines.push('    return;', '  }', '  let carry: i32 = 0;');
  for (let i = 0; i < n; i += 1) {
    lines.push(`  const s${i} = r${i} + load<i32>(m, ${4 * i}) + carry;`);
    lines.push(`  carry = s${i} >>> 29;`);
    lines.push(`  store<i32>(out, s${i} & 0x1fffffff, ${4 * i});`);
  }
  lines.push('}');
  return lines.join('\n');
}

const generated = [
  '// Written by scripts/build-wasm.ts: do not edit. The Montgomery multiplication of curve.ts for 9',
  '// and 18 limbs of 29 bits written out in full; m points at a modulus block (m, then −m⁻¹ mod 2^29).',
  '',
  ...[9, 18].flatMap((n) => [
    montgomery(n, false),
    '',
    montgomery(n, true),
    '',
    pseudoMersenne(n, false),
    '',
    pseudoMersenne(n, true),
    '',
    modularAdd(n),
    '',
    modularSubtract(n),
    '',
  ]),
].join('\n');
fs.writeFileSync(path.join(assembly, 'field.generated.ts'), generated);

/** C's big-endian hex as eight 64-bit words, least significant first (the block's word order). */
const words = (hex: string) => Array.from({ length: 8 }, (_, i) => `0x${hex.slice(128 - 16 * (i + 1), 128 - 16 * i)}`).join(', ');
const constants = [
  '// Written by scripts/build-wasm.ts from src/emdr/signatures/crypto/reference/streebog.ts: do not edit.',
  '',
  '/** The substitution π (RFC 6986, 6.2). */',
  `export const PI: usize = memory.data<u8>([${PI.join(', ')}]);`,
  '',
  '/** The matrix A of the linear transformation l (RFC 6986, 6.4), row i applying to bit 63 − i. */',
  `export const A: usize = memory.data<u64>([${A.map((row) => `0x${row}`).join(', ')}]);`,
  '',
  '/** The iteration constants C1..C12 (RFC 6986, 6.5), each as eight words, least significant first. */',
  'export const C: usize = memory.data<u64>([',
  ...C.map((constant) => `  ${words(constant)},`),
  ']);',
  '',
].join('\n');
fs.writeFileSync(path.join(assembly, 'streebog-constants.generated.ts'), constants);

const { error, stderr } = await asc.main(['--config', path.join(assembly, 'asconfig.json')]);
if (error) {
  console.error(stderr.toString());
  console.error(`scripts/build-wasm.ts: ${error.message}`);
  process.exit(1);
}
