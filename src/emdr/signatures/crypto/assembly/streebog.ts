/**
 * GOST R 34.11-2012 (Streebog, RFC 6986) compression in WebAssembly, compiled by AssemblyScript
 * (`make build`). The same algorithm and byte order as ../reference/streebog.ts, the reference the tests
 * compare it with: a 64-byte block is eight 64-bit words, least significant first. The caller
 * (../gost-wasm.ts) keeps each hash's state and its unfinished block; here are only whole blocks.
 * The standard's constants π, A and C come from ../reference/streebog.ts, written into
 * streebog-constants.generated.ts by scripts/build-wasm.ts.
 */
import { A, C, PI } from './streebog-constants.generated';

/**
 * LPS[k][b]: the word that byte b at byte position k of every input word contributes to the output
 * word of the same index as k's byte, after π, the transposition τ and l (filled by streebogSetUp).
 */
const LPS: usize = memory.data(8 * 256 * 8, 16);

/** A hash's state while a call runs: h, N and Σ, 64 bytes each (../gost-wasm.ts copies it in and out). */
const STATE: usize = memory.data(192, 16);
/** Where the caller writes the blocks to absorb (or the unfinished last block). */
export const STREEBOG_INPUT_BYTES: i32 = 65536;
const INPUT: usize = memory.data(STREEBOG_INPUT_BYTES, 16);
const KEY: usize = memory.data(64, 16);
const WORK: usize = memory.data(64, 16);
const ZERO: usize = memory.data(64, 16);
const LENGTH: usize = memory.data(64, 16);

export function streebogState(): usize {
  return STATE;
}

export function streebogInput(): usize {
  return INPUT;
}

export function streebogSetUp(): void {
  for (let k: u32 = 0; k < 8; k++) {
    for (let b: u32 = 0; b < 256; b++) {
      const substituted = <u32>load<u8>(PI + b);
      let word: u64 = 0;
      for (let bit: u32 = 0; bit < 8; bit++) {
        if (((substituted >> bit) & 1) != 0) word ^= load<u64>(A + ((63 - (8 * k + bit)) << 3));
      }
      store<u64>(LPS + ((k * 256 + b) << 3), word);
    }
  }
}

/**
 * The table entry of byte `shift`/8 of the 32-bit half-word x in table k: the byte, already times 8
 * (shifted and masked in one step), plus the table's offset as the load's constant offset.
 */
// @ts-ignore: decorator
@inline function entry(x: u32, shift: i32, k: i32): u64 {
  const index = shift == 0 ? (x << 3) & 0x7f8 : (x >> (shift - 3)) & 0x7f8;
  if (k == 0) return load<u64>(index, LPS);
  if (k == 1) return load<u64>(index, LPS + 2048);
  if (k == 2) return load<u64>(index, LPS + 4096);
  if (k == 3) return load<u64>(index, LPS + 6144);
  if (k == 4) return load<u64>(index, LPS + 8192);
  if (k == 5) return load<u64>(index, LPS + 10240);
  if (k == 6) return load<u64>(index, LPS + 12288);
  return load<u64>(index, LPS + 14336);
}

/** Output word i of LPS: byte i of each of the eight input words (from their low or high halves) looked up and XORed. */
// @ts-ignore: decorator
@inline function lpsWord(x0: u32, x1: u32, x2: u32, x3: u32, x4: u32, x5: u32, x6: u32, x7: u32, shift: i32): u64 {
  return entry(x0, shift, 0) ^ entry(x1, shift, 1) ^ entry(x2, shift, 2) ^ entry(x3, shift, 3)
    ^ entry(x4, shift, 4) ^ entry(x5, shift, 5) ^ entry(x6, shift, 6) ^ entry(x7, shift, 7);
}

/** out = LPS(x ⊕ y); out may be x or y (all of x ⊕ y is read first). */
// @ts-ignore: decorator
@inline function xlps(x: usize, y: usize, out: usize): void {
  const l0 = load<u32>(x) ^ load<u32>(y);
  const h0 = load<u32>(x, 4) ^ load<u32>(y, 4);
  const l1 = load<u32>(x, 8) ^ load<u32>(y, 8);
  const h1 = load<u32>(x, 12) ^ load<u32>(y, 12);
  const l2 = load<u32>(x, 16) ^ load<u32>(y, 16);
  const h2 = load<u32>(x, 20) ^ load<u32>(y, 20);
  const l3 = load<u32>(x, 24) ^ load<u32>(y, 24);
  const h3 = load<u32>(x, 28) ^ load<u32>(y, 28);
  const l4 = load<u32>(x, 32) ^ load<u32>(y, 32);
  const h4 = load<u32>(x, 36) ^ load<u32>(y, 36);
  const l5 = load<u32>(x, 40) ^ load<u32>(y, 40);
  const h5 = load<u32>(x, 44) ^ load<u32>(y, 44);
  const l6 = load<u32>(x, 48) ^ load<u32>(y, 48);
  const h6 = load<u32>(x, 52) ^ load<u32>(y, 52);
  const l7 = load<u32>(x, 56) ^ load<u32>(y, 56);
  const h7 = load<u32>(x, 60) ^ load<u32>(y, 60);
  store<u64>(out, lpsWord(l0, l1, l2, l3, l4, l5, l6, l7, 0));
  store<u64>(out, lpsWord(l0, l1, l2, l3, l4, l5, l6, l7, 8), 8);
  store<u64>(out, lpsWord(l0, l1, l2, l3, l4, l5, l6, l7, 16), 16);
  store<u64>(out, lpsWord(l0, l1, l2, l3, l4, l5, l6, l7, 24), 24);
  store<u64>(out, lpsWord(h0, h1, h2, h3, h4, h5, h6, h7, 0), 32);
  store<u64>(out, lpsWord(h0, h1, h2, h3, h4, h5, h6, h7, 8), 40);
  store<u64>(out, lpsWord(h0, h1, h2, h3, h4, h5, h6, h7, 16), 48);
  store<u64>(out, lpsWord(h0, h1, h2, h3, h4, h5, h6, h7, 24), 56);
}

/** The compression g_N(h, m): h = E(LPS(h ⊕ N), m) ⊕ h ⊕ m. */
function compress(h: usize, n: usize, m: usize): void {
  xlps(h, n, KEY);
  xlps(KEY, m, WORK);
  for (let i = 0; i < 11; i++) {
    xlps(KEY, C + (i << 6), KEY);
    xlps(KEY, WORK, WORK);
  }
  xlps(KEY, C + (11 << 6), KEY);
  for (let i = 0; i < 64; i += 8) store<u64>(h + i, load<u64>(h + i) ^ load<u64>(WORK + i) ^ load<u64>(KEY + i) ^ load<u64>(m + i));
}

/** x += y modulo 2^512. */
function add512(x: usize, y: usize): void {
  let carry: u64 = 0;
  for (let i = 0; i < 64; i += 8) {
    const left = load<u64>(x + i);
    const sum = left + load<u64>(y + i);
    const total = sum + carry;
    carry = u64(sum < left) | u64(total < sum);
    store<u64>(x + i, total);
  }
}

/** Absorbs `blocks` whole 64-byte blocks from the input area into the state. */
export function streebogAbsorb(blocks: i32): void {
  const h = STATE;
  const n = STATE + 64;
  const sigma = STATE + 128;
  store<u64>(LENGTH, 512);
  for (let block = 0; block < blocks; block++) {
    const m = INPUT + (<usize>block << 6);
    compress(h, n, m);
    add512(n, LENGTH);
    add512(sigma, m);
  }
}

/** Ends the hash with the `pending` (< 64) bytes at the start of the input area; h is the result. */
export function streebogFinish(pending: i32): void {
  const h = STATE;
  const n = STATE + 64;
  const sigma = STATE + 128;
  const m = INPUT;
  store<u8>(m + pending, 1);
  memory.fill(m + pending + 1, 0, 63 - pending);
  compress(h, n, m);
  memory.fill(LENGTH, 0, 64);
  store<u64>(LENGTH, <u64>pending * 8);
  add512(n, LENGTH);
  add512(sigma, m);
  compress(h, ZERO, n);
  compress(h, ZERO, sigma);
}
