/**
 * GOST R 34.11-2012 (Streebog, RFC 6986) compression in WebAssembly, compiled by AssemblyScript
 * (`make build`). The same algorithm and byte order as ../streebog.ts, the reference the tests
 * compare it with: a 64-byte block is eight 64-bit words, least significant first. The caller
 * (../wasm.ts) keeps each hash's state and its unfinished block; here are only whole blocks.
 */

/** The substitution π (RFC 6986, 6.2). */
const PI: usize = memory.data<u8>([
  252, 238, 221, 17, 207, 110, 49, 22, 251, 196, 250, 218, 35, 197, 4, 77, 233, 119, 240, 219, 147, 46, 153, 186, 23, 54, 241, 187, 20, 205, 95, 193,
    249, 24, 101, 90, 226, 92, 239, 33, 129, 28, 60, 66, 139, 1, 142, 79, 5, 132, 2, 174, 227, 106, 143, 160, 6, 11, 237, 152, 127, 212, 211, 31,
    235, 52, 44, 81, 234, 200, 72, 171, 242, 42, 104, 162, 253, 58, 206, 204, 181, 112, 14, 86, 8, 12, 118, 18, 191, 114, 19, 71, 156, 183, 93, 135,
    21, 161, 150, 41, 16, 123, 154, 199, 243, 145, 120, 111, 157, 158, 178, 177, 50, 117, 25, 61, 255, 53, 138, 126, 109, 84, 198, 128, 195, 189, 13, 87,
    223, 245, 36, 169, 62, 168, 67, 201, 215, 121, 214, 246, 124, 34, 185, 3, 224, 15, 236, 222, 122, 148, 176, 188, 220, 232, 40, 80, 78, 51, 10, 74,
    167, 151, 96, 115, 30, 0, 98, 68, 26, 184, 56, 130, 100, 159, 38, 65, 173, 69, 70, 146, 39, 94, 85, 47, 140, 163, 165, 125, 105, 213, 149, 59,
    7, 88, 179, 64, 134, 172, 29, 247, 48, 55, 107, 228, 136, 217, 231, 137, 225, 27, 131, 73, 76, 63, 248, 254, 141, 83, 170, 144, 202, 216, 133, 97,
    32, 113, 103, 164, 45, 43, 9, 91, 203, 155, 37, 208, 190, 229, 108, 82, 89, 166, 116, 210, 230, 244, 180, 192, 209, 102, 175, 194, 57, 75, 99, 182,
]);

/** The matrix A of the linear transformation l (RFC 6986, 6.4), row i applying to bit 63 − i. */
const A: usize = memory.data<u64>([
  0x8e20faa72ba0b470, 0x47107ddd9b505a38, 0xad08b0e0c3282d1c, 0xd8045870ef14980e, 0x6c022c38f90a4c07, 0x3601161cf205268d, 0x1b8e0b0e798c13c8, 0x83478b07b2468764,
  0xa011d380818e8f40, 0x5086e740ce47c920, 0x2843fd2067adea10, 0x14aff010bdd87508, 0x0ad97808d06cb404, 0x05e23c0468365a02, 0x8c711e02341b2d01, 0x46b60f011a83988e,
  0x90dab52a387ae76f, 0x486dd4151c3dfdb9, 0x24b86a840e90f0d2, 0x125c354207487869, 0x092e94218d243cba, 0x8a174a9ec8121e5d, 0x4585254f64090fa0, 0xaccc9ca9328a8950,
  0x9d4df05d5f661451, 0xc0a878a0a1330aa6, 0x60543c50de970553, 0x302a1e286fc58ca7, 0x18150f14b9ec46dd, 0x0c84890ad27623e0, 0x0642ca05693b9f70, 0x0321658cba93c138,
  0x86275df09ce8aaa8, 0x439da0784e745554, 0xafc0503c273aa42a, 0xd960281e9d1d5215, 0xe230140fc0802984, 0x71180a8960409a42, 0xb60c05ca30204d21, 0x5b068c651810a89e,
  0x456c34887a3805b9, 0xac361a443d1c8cd2, 0x561b0d22900e4669, 0x2b838811480723ba, 0x9bcf4486248d9f5d, 0xc3e9224312c8c1a0, 0xeffa11af0964ee50, 0xf97d86d98a327728,
  0xe4fa2054a80b329c, 0x727d102a548b194e, 0x39b008152acb8227, 0x9258048415eb419d, 0x492c024284fbaec0, 0xaa16012142f35760, 0x550b8e9e21f7a530, 0xa48b474f9ef5dc18,
  0x70a6a56e2440598e, 0x3853dc371220a247, 0x1ca76e95091051ad, 0x0edd37c48a08a6d8, 0x07e095624504536c, 0x8d70c431ac02a736, 0xc83862965601dd1b, 0x641c314b2b8ee083,
]);

/** The iteration constants C1..C12 (RFC 6986, 6.5), each as eight words, least significant first. */
const C: usize = memory.data<u64>([
  0xdd806559f2a64507, 0x05767436cc744d23, 0xa2422a08a460d315, 0x4b7ce09192676901, 0x714eb88d7585c4fc, 0x2f6a76432e45d016, 0xebcb2f81c0657c1f, 0xb1085bda1ecadae9,
  0xe679047021b19bb7, 0x55dda21bd7cbcd56, 0x5cb561c2db0aa7ca, 0x9ab5176b12d69958, 0x61d55e0f16b50131, 0xf3feea720a232b98, 0x4fe39d460f70b5d7, 0x6fa3b58aa99d2f1a,
  0x991e96f50aba0ab2, 0xc2b6f443867adb31, 0xc1c93a376062db09, 0xd3e20fe490359eb1, 0xf2ea7514b1297b7b, 0x06f15e5f529c1f8b, 0x0a39fc286a3d8435, 0xf574dcac2bce2fc7,
  0x220cbebc84e3d12e, 0x3453eaa193e837f1, 0xd8b71333935203be, 0xa9d72c82ed03d675, 0x9d721cad685e353f, 0x488e857e335c3c7d, 0xf948e1a05d71e4dd, 0xef1fdfb3e81566d2,
  0x601758fd7c6cfe57, 0x7a56a27ea9ea63f5, 0xdfff00b723271a16, 0xbfcd1747253af5a3, 0x359e35d7800fffbd, 0x7f151c1f1686104a, 0x9a3f410c6ca92363, 0x4bea6bacad474799,
  0xfa68407a46647d6e, 0xbf71c57236904f35, 0x0af21f66c2bec6b6, 0xcffaa6b71c9ab7b4, 0x187f9ab49af08ec6, 0x2d66c4f95142a46c, 0x6fa4c33b7a3039c0, 0xae4faeae1d3ad3d9,
  0x8886564d3a14d493, 0x3517454ca23c4af3, 0x06476983284a0504, 0x0992abc52d822c37, 0xd3473e33197a93c9, 0x399ec6c7e6bf87c9, 0x51ac86febf240954, 0xf4c70e16eeaac5ec,
  0xa47f0dd4bf02e71e, 0x36acc2355951a8d9, 0x69d18d2bd1a5c42f, 0xf4892bcb929b0690, 0x89b4443b4ddbc49a, 0x4eb7f8719c36de1e, 0x03e7aa020c6e4141, 0x9b1f5b424d93c9a7,
  0x7261445183235adb, 0x0e38dc92cb1f2a60, 0x7b2b8a9aa6079c54, 0x800a440bdbb2ceb1, 0x3cd955b7e00d0984, 0x3a7d3a1b25894224, 0x944c9ad8ec165fde, 0x378f5a541631229b,
  0x74b4c7fb98459ced, 0x3698fad1153bb6c3, 0x7a1e6c303b7652f4, 0x9fe76702af69334b, 0x1fffe18a1b336103, 0x8941e71cff8a78db, 0x382ae548b2e4f3f3, 0xabbedea680056f52,
  0x6bcaa4cd81f32d1b, 0xdea2594ac06fd85d, 0xefbacd1d7d476e98, 0x8a1d71efea48b9ca, 0x2001802114846679, 0xd8fa6bbbebab0761, 0x3002c6cd635afe94, 0x7bcd9ed0efc889fb,
  0x48bc924af11bd720, 0xfaf417d5d9b21b99, 0xe71da4aa88e12852, 0x5d80ef9d1891cc86, 0xf82012d430219f9b, 0xcda43c32bcdf1d77, 0xd21380b00449b17a, 0x378ee767f11631ba,
]);

/**
 * LPS[k][b]: the word that byte b at byte position k of every input word contributes to the output
 * word of the same index as k's byte, after π, the transposition τ and l (filled by streebogSetUp).
 */
const LPS: usize = memory.data(8 * 256 * 8, 16);

/** A hash's state while a call runs: h, N and Σ, 64 bytes each (../wasm.ts copies it in and out). */
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
