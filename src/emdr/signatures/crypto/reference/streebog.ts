/**
 * GOST R 34.11-2012 ("Streebog", RFC 6986), 256 and 512 bits, computed incrementally: `update`
 * with slices of any size, then `digest` once, so a document is hashed as it streams in.
 *
 * Byte order is the OpenSSL gost engine's and CMS's (the messageDigest attribute, the digest a
 * GOST R 34.10 signature is made over): a 64-byte block is a 512-bit number stored little-endian,
 * where RFC 6986 writes the same numbers big-endian. The LPS step uses eight tables built at load
 * from the standard's S-box and matrix; table lookups are not constant-time, which verification of
 * public data does not need.
 */

/** The substitution π (RFC 6986, 6.2). scripts/build-wasm.ts writes these constants into the WebAssembly too. */
export const PI = [
  252, 238, 221, 17, 207, 110, 49, 22, 251, 196, 250, 218, 35, 197, 4, 77, 233, 119, 240, 219, 147, 46, 153, 186, 23, 54, 241, 187, 20, 205, 95, 193, 249, 24,
  101, 90, 226, 92, 239, 33, 129, 28, 60, 66, 139, 1, 142, 79, 5, 132, 2, 174, 227, 106, 143, 160, 6, 11, 237, 152, 127, 212, 211, 31, 235, 52, 44, 81, 234,
  200, 72, 171, 242, 42, 104, 162, 253, 58, 206, 204, 181, 112, 14, 86, 8, 12, 118, 18, 191, 114, 19, 71, 156, 183, 93, 135, 21, 161, 150, 41, 16, 123, 154,
  199, 243, 145, 120, 111, 157, 158, 178, 177, 50, 117, 25, 61, 255, 53, 138, 126, 109, 84, 198, 128, 195, 189, 13, 87, 223, 245, 36, 169, 62, 168, 67, 201,
  215, 121, 214, 246, 124, 34, 185, 3, 224, 15, 236, 222, 122, 148, 176, 188, 220, 232, 40, 80, 78, 51, 10, 74, 167, 151, 96, 115, 30, 0, 98, 68, 26, 184, 56,
  130, 100, 159, 38, 65, 173, 69, 70, 146, 39, 94, 85, 47, 140, 163, 165, 125, 105, 213, 149, 59, 7, 88, 179, 64, 134, 172, 29, 247, 48, 55, 107, 228, 136, 217,
  231, 137, 225, 27, 131, 73, 76, 63, 248, 254, 141, 83, 170, 144, 202, 216, 133, 97, 32, 113, 103, 164, 45, 43, 9, 91, 203, 155, 37, 208, 190, 229, 108, 82,
  89, 166, 116, 210, 230, 244, 180, 192, 209, 102, 175, 194, 57, 75, 99, 182,
];

/** The matrix A of the linear transformation l (RFC 6986, 6.4), row i applying to bit 63 - i. */
export const A = [
  '8e20faa72ba0b470',
  '47107ddd9b505a38',
  'ad08b0e0c3282d1c',
  'd8045870ef14980e',
  '6c022c38f90a4c07',
  '3601161cf205268d',
  '1b8e0b0e798c13c8',
  '83478b07b2468764',
  'a011d380818e8f40',
  '5086e740ce47c920',
  '2843fd2067adea10',
  '14aff010bdd87508',
  '0ad97808d06cb404',
  '05e23c0468365a02',
  '8c711e02341b2d01',
  '46b60f011a83988e',
  '90dab52a387ae76f',
  '486dd4151c3dfdb9',
  '24b86a840e90f0d2',
  '125c354207487869',
  '092e94218d243cba',
  '8a174a9ec8121e5d',
  '4585254f64090fa0',
  'accc9ca9328a8950',
  '9d4df05d5f661451',
  'c0a878a0a1330aa6',
  '60543c50de970553',
  '302a1e286fc58ca7',
  '18150f14b9ec46dd',
  '0c84890ad27623e0',
  '0642ca05693b9f70',
  '0321658cba93c138',
  '86275df09ce8aaa8',
  '439da0784e745554',
  'afc0503c273aa42a',
  'd960281e9d1d5215',
  'e230140fc0802984',
  '71180a8960409a42',
  'b60c05ca30204d21',
  '5b068c651810a89e',
  '456c34887a3805b9',
  'ac361a443d1c8cd2',
  '561b0d22900e4669',
  '2b838811480723ba',
  '9bcf4486248d9f5d',
  'c3e9224312c8c1a0',
  'effa11af0964ee50',
  'f97d86d98a327728',
  'e4fa2054a80b329c',
  '727d102a548b194e',
  '39b008152acb8227',
  '9258048415eb419d',
  '492c024284fbaec0',
  'aa16012142f35760',
  '550b8e9e21f7a530',
  'a48b474f9ef5dc18',
  '70a6a56e2440598e',
  '3853dc371220a247',
  '1ca76e95091051ad',
  '0edd37c48a08a6d8',
  '07e095624504536c',
  '8d70c431ac02a736',
  'c83862965601dd1b',
  '641c314b2b8ee083',
];

/** The iteration constants C1..C12 (RFC 6986, 6.5), big-endian as the RFC writes them. */
export const C = [
  'b1085bda1ecadae9ebcb2f81c0657c1f2f6a76432e45d016714eb88d7585c4fc4b7ce09192676901a2422a08a460d31505767436cc744d23dd806559f2a64507',
  '6fa3b58aa99d2f1a4fe39d460f70b5d7f3feea720a232b9861d55e0f16b501319ab5176b12d699585cb561c2db0aa7ca55dda21bd7cbcd56e679047021b19bb7',
  'f574dcac2bce2fc70a39fc286a3d843506f15e5f529c1f8bf2ea7514b1297b7bd3e20fe490359eb1c1c93a376062db09c2b6f443867adb31991e96f50aba0ab2',
  'ef1fdfb3e81566d2f948e1a05d71e4dd488e857e335c3c7d9d721cad685e353fa9d72c82ed03d675d8b71333935203be3453eaa193e837f1220cbebc84e3d12e',
  '4bea6bacad4747999a3f410c6ca923637f151c1f1686104a359e35d7800fffbdbfcd1747253af5a3dfff00b723271a167a56a27ea9ea63f5601758fd7c6cfe57',
  'ae4faeae1d3ad3d96fa4c33b7a3039c02d66c4f95142a46c187f9ab49af08ec6cffaa6b71c9ab7b40af21f66c2bec6b6bf71c57236904f35fa68407a46647d6e',
  'f4c70e16eeaac5ec51ac86febf240954399ec6c7e6bf87c9d3473e33197a93c90992abc52d822c3706476983284a05043517454ca23c4af38886564d3a14d493',
  '9b1f5b424d93c9a703e7aa020c6e41414eb7f8719c36de1e89b4443b4ddbc49af4892bcb929b069069d18d2bd1a5c42f36acc2355951a8d9a47f0dd4bf02e71e',
  '378f5a541631229b944c9ad8ec165fde3a7d3a1b258942243cd955b7e00d0984800a440bdbb2ceb17b2b8a9aa6079c540e38dc92cb1f2a607261445183235adb',
  'abbedea680056f52382ae548b2e4f3f38941e71cff8a78db1fffe18a1b3361039fe76702af69334b7a1e6c303b7652f43698fad1153bb6c374b4c7fb98459ced',
  '7bcd9ed0efc889fb3002c6cd635afe94d8fa6bbbebab076120018021148466798a1d71efea48b9caefbacd1d7d476e98dea2594ac06fd85d6bcaa4cd81f32d1b',
  '378ee767f11631bad21380b00449b17acda43c32bcdf1d77f82012d430219f9b5d80ef9d1891cc86e71da4aa88e12852faf417d5d9b21b9948bc924af11bd720',
];

/**
 * A 512-bit value as sixteen 32-bit words, least significant first: word 2i is the low half of the
 * i-th 64-bit word of the reference implementation, word 2i+1 its high half.
 */
type Block = Uint32Array;

/** Sixteen words from 64 little-endian bytes at `offset`. */
function loadBlock(bytes: Uint8Array, offset: number, into: Block): void {
  for (let i = 0; i < 16; i += 1) {
    const at = offset + 4 * i;
    into[i] = (bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16) | (bytes[at + 3]! << 24)) >>> 0;
  }
}

function blockOfBigEndianHex(hex: string): Block {
  const bytes = Buffer.from(hex, 'hex').reverse();
  const block = new Uint32Array(16);
  loadBlock(bytes, 0, block);
  return block;
}

const ROUND_CONSTANTS = C.map(blockOfBigEndianHex);

/**
 * LPS_TABLE[(k * 256 + b) * 2 + half]: the 64-bit word that byte b at byte position k of every
 * input word contributes to the output word of the same index as k's byte, after π, the
 * transposition τ and l. Built once from PI and A.
 */
const LPS_TABLE = (() => {
  const table = new Uint32Array(8 * 256 * 2);
  const rows = A.map((hex) => [Number.parseInt(hex.slice(8), 16), Number.parseInt(hex.slice(0, 8), 16)] as const);
  for (let k = 0; k < 8; k += 1) {
    for (let b = 0; b < 256; b += 1) {
      let low = 0;
      let high = 0;
      const substituted = PI[b]!;
      for (let bit = 0; bit < 8; bit += 1) {
        if (((substituted >>> bit) & 1) === 0) continue;
        const [rowLow, rowHigh] = rows[63 - (8 * k + bit)]!;
        low ^= rowLow;
        high ^= rowHigh;
      }
      table[(k * 256 + b) * 2] = low >>> 0;
      table[(k * 256 + b) * 2 + 1] = high >>> 0;
    }
  }
  return table;
})();

/**
 * One output word of LPS: the byte at `shift` of each of the eight (half-)words w0…w7 looked up in
 * its table and XORed, written to out[index] (low) and out[index + 1] (high).
 */
function lpsWord(
  w0: number,
  w1: number,
  w2: number,
  w3: number,
  w4: number,
  w5: number,
  w6: number,
  w7: number,
  shift: number,
  out: Block,
  index: number,
): void {
  const t = LPS_TABLE;
  const i0 = ((w0 >>> shift) & 0xff) << 1;
  const i1 = 512 + (((w1 >>> shift) & 0xff) << 1);
  const i2 = 1024 + (((w2 >>> shift) & 0xff) << 1);
  const i3 = 1536 + (((w3 >>> shift) & 0xff) << 1);
  const i4 = 2048 + (((w4 >>> shift) & 0xff) << 1);
  const i5 = 2560 + (((w5 >>> shift) & 0xff) << 1);
  const i6 = 3072 + (((w6 >>> shift) & 0xff) << 1);
  const i7 = 3584 + (((w7 >>> shift) & 0xff) << 1);
  out[index] = t[i0]! ^ t[i1]! ^ t[i2]! ^ t[i3]! ^ t[i4]! ^ t[i5]! ^ t[i6]! ^ t[i7]!;
  out[index + 1] = t[i0 + 1]! ^ t[i1 + 1]! ^ t[i2 + 1]! ^ t[i3 + 1]! ^ t[i4 + 1]! ^ t[i5 + 1]! ^ t[i6 + 1]! ^ t[i7 + 1]!;
}

/** out = LPS(x ⊕ y); `out` may be `x` or `y` (all of x ⊕ y is read before anything is written). */
function xlps(x: Block, y: Block, out: Block): void {
  // Low and high halves of the eight 64-bit words of x ⊕ y.
  const l0 = x[0]! ^ y[0]!,
    h0 = x[1]! ^ y[1]!,
    l1 = x[2]! ^ y[2]!,
    h1 = x[3]! ^ y[3]!;
  const l2 = x[4]! ^ y[4]!,
    h2 = x[5]! ^ y[5]!,
    l3 = x[6]! ^ y[6]!,
    h3 = x[7]! ^ y[7]!;
  const l4 = x[8]! ^ y[8]!,
    h4 = x[9]! ^ y[9]!,
    l5 = x[10]! ^ y[10]!,
    h5 = x[11]! ^ y[11]!;
  const l6 = x[12]! ^ y[12]!,
    h6 = x[13]! ^ y[13]!,
    l7 = x[14]! ^ y[14]!,
    h7 = x[15]! ^ y[15]!;
  // Output word i gathers byte i of every input word: bytes 0-3 from the low halves, 4-7 from the high.
  lpsWord(l0, l1, l2, l3, l4, l5, l6, l7, 0, out, 0);
  lpsWord(l0, l1, l2, l3, l4, l5, l6, l7, 8, out, 2);
  lpsWord(l0, l1, l2, l3, l4, l5, l6, l7, 16, out, 4);
  lpsWord(l0, l1, l2, l3, l4, l5, l6, l7, 24, out, 6);
  lpsWord(h0, h1, h2, h3, h4, h5, h6, h7, 0, out, 8);
  lpsWord(h0, h1, h2, h3, h4, h5, h6, h7, 8, out, 10);
  lpsWord(h0, h1, h2, h3, h4, h5, h6, h7, 16, out, 12);
  lpsWord(h0, h1, h2, h3, h4, h5, h6, h7, 24, out, 14);
}

/** x += y modulo 2^512. */
function add512(x: Block, y: Block): void {
  let carry = 0;
  for (let i = 0; i < 16; i += 1) {
    const sum = x[i]! + y[i]! + carry;
    x[i] = sum >>> 0;
    carry = sum > 0xffffffff ? 1 : 0;
  }
}

const ZERO = new Uint32Array(16);
const key = new Uint32Array(16);
const state = new Uint32Array(16);

/** The compression g_N(h, m): h = E(LPS(h ⊕ N), m) ⊕ h ⊕ m. */
function compress(h: Block, n: Block, m: Block): void {
  xlps(h, n, key);
  xlps(key, m, state);
  for (let i = 0; i < 11; i += 1) {
    xlps(key, ROUND_CONSTANTS[i]!, key);
    xlps(key, state, state);
  }
  xlps(key, ROUND_CONSTANTS[11]!, key);
  for (let i = 0; i < 16; i += 1) h[i] = (h[i]! ^ state[i]! ^ key[i]! ^ m[i]!) >>> 0;
}

const BLOCK_BITS = (() => {
  const block = new Uint32Array(16);
  block[0] = 512;
  return block;
})();

/**
 * A Streebog hash fed in slices of any size: update() keeps the unfinished block, absorb() gets
 * whole 64-byte blocks, finish() the last bytes (fewer than 64). Shared by this reference and the
 * WebAssembly one (gost-wasm.ts).
 */
export abstract class StreebogBlocks {
  private readonly pending = new Uint8Array(64);
  private pendingLength = 0;
  private finished = false;
  readonly bits: 256 | 512;

  constructor(bits: 256 | 512) {
    this.bits = bits;
  }

  /** Absorbs `blocks` whole blocks of `bytes` from `offset` on. */
  protected abstract absorb(bytes: Uint8Array, offset: number, blocks: number): void;

  /** Ends the hash with the first `length` (< 64) bytes of `last`; h, 64 bytes in the engine's order. */
  protected abstract finish(last: Uint8Array, length: number): Buffer;

  update(bytes: Uint8Array): this {
    if (this.finished) throw new Error('Streebog: update after digest');
    let offset = 0;
    if (this.pendingLength > 0) {
      offset = Math.min(64 - this.pendingLength, bytes.length);
      this.pending.set(bytes.subarray(0, offset), this.pendingLength);
      this.pendingLength += offset;
      if (this.pendingLength < 64) return this;
      this.absorb(this.pending, 0, 1);
      this.pendingLength = 0;
    }
    const blocks = (bytes.length - offset) >> 6;
    if (blocks > 0) this.absorb(bytes, offset, blocks);
    offset += blocks * 64;
    this.pending.set(bytes.subarray(offset), 0);
    this.pendingLength = bytes.length - offset;
    return this;
  }

  /** The hash, in the engine's (little-endian) byte order. */
  digest(): Buffer {
    if (this.finished) throw new Error('Streebog: digest called twice');
    this.finished = true;
    const h = this.finish(this.pending, this.pendingLength);
    return this.bits === 512 ? h : h.subarray(32);
  }
}

export class Streebog extends StreebogBlocks {
  private readonly h = new Uint32Array(16);
  private readonly n = new Uint32Array(16);
  private readonly sigma = new Uint32Array(16);
  private readonly message = new Uint32Array(16);

  constructor(bits: 256 | 512) {
    super(bits);
    // The initial vector: 0^512 for the 512-bit hash, (00000001)^64 for the 256-bit one.
    if (bits === 256) this.h.fill(0x01010101);
  }

  protected absorb(bytes: Uint8Array, offset: number, blocks: number): void {
    for (let block = 0; block < blocks; block += 1) {
      loadBlock(bytes, offset + 64 * block, this.message);
      compress(this.h, this.n, this.message);
      add512(this.n, BLOCK_BITS);
      add512(this.sigma, this.message);
    }
  }

  protected finish(pending: Uint8Array, length: number): Buffer {
    const last = new Uint8Array(64);
    last.set(pending.subarray(0, length));
    last[length] = 1;
    loadBlock(last, 0, this.message);
    compress(this.h, this.n, this.message);
    const lengthBits = new Uint32Array(16);
    lengthBits[0] = length * 8;
    add512(this.n, lengthBits);
    add512(this.sigma, this.message);
    compress(this.h, ZERO, this.n);
    compress(this.h, ZERO, this.sigma);
    const out = Buffer.alloc(64);
    for (let i = 0; i < 16; i += 1) out.writeUInt32LE(this.h[i]!, 4 * i);
    return out;
  }
}

/** The Streebog hash of `bytes` in one call. */
export function streebog(bits: 256 | 512, bytes: Uint8Array): Buffer {
  return new Streebog(bits).update(bytes).digest();
}
