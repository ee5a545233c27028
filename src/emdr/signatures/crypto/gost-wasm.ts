/**
 * The fast path of the GOST check: Streebog and GOST R 34.10-2012 verification in WebAssembly
 * (assembly/, compiled by AssemblyScript into gost.wasm by `make build`). reference/streebog.ts and
 * gost3410.ts compute the same in TypeScript: the reference the tests compare this with.
 *
 * Memory above the module's own data is laid out here: each curve's constants and its base point's
 * table (built on first use, width 6), the signers' key tables (width 4, built the second time a
 * key is seen, the last KEY_TABLES keys kept) and one scratch area for building tables. A key is
 * checked on the curve and, where the curve has a cofactor, in the order-q subgroup the first time
 * it is seen (curves.ts, keyCheckOf); the verdict is kept for the last KEY_VERDICTS keys, more
 * than the certificates the parse keeps (cms/certificate.ts), so a key seen before is not checked again.
 *
 * One instance per thread (each worker loads its own), synchronous, so that it runs in the
 * document-check workers and the CLI alike.
 */
import fs from 'node:fs';
import { BoundedCache } from '../cms/bounded-cache.ts';
import { keyCheckOf, type Curve } from './curves.ts';
import { inverse } from './reference/point-arithmetic.ts';
import { StreebogBlocks } from './reference/streebog.ts';

/** The module's exports: functions, and its codes and input offsets as globals (assembly/curve.ts). */
interface GostExports {
  memory: WebAssembly.Memory;
  heapBase(): number;
  streebogSetUp(): void;
  streebogState(): number;
  streebogInput(): number;
  streebogAbsorb(blocks: number): void;
  streebogFinish(pending: number): void;
  curveInput(): number;
  curveBlockBytes(limbs: number): number;
  verify(
    curve: number,
    limbs: number,
    aIsMinus3: number,
    baseTable: number,
    baseWidth: number,
    baseRows: number,
    keyTable: number,
    keyWidth: number,
    keyRows: number,
    check: number,
  ): number;
  buildTable(curve: number, limbs: number, aIsMinus3: number, out: number, width: number, rows: number, scratch: number): number;
  fieldOperation(curve: number, limbs: number, modulus: number, operation: number): void;
}

const CONSTANTS = [
  'STREEBOG_INPUT_BYTES',
  'VERIFIED',
  'KEY_NOT_ON_CURVE',
  'KEY_OUTSIDE_SUBGROUP',
  'CHECK_ON_CURVE',
  'CHECK_SUBGROUP',
  'CHECK_NONE',
  'INPUT_KEY_X',
  'INPUT_KEY_Y',
  'INPUT_DIGEST',
  'INPUT_SIGNATURE',
] as const;
type Constants = Record<(typeof CONSTANTS)[number], number>;

const LIMB_BITS = 29n;
const BASE_TABLE_WIDTH = 6;
const KEY_TABLE_WIDTH = 4;
/** How many signers' keys keep a table: at most ~0.28 MB each (512 bits). */
const KEY_TABLES = 32;
/** How many keys' verdicts are kept: a key and its curve's name, a few hundred bytes each. */
const KEY_VERDICTS = 1024;

const WASM_FILE = new URL('./gost.wasm', import.meta.url);
const PAGE = 65536;

class GostModule {
  readonly exports: GostExports;
  readonly constants: Constants;
  private top: number;
  private view: Uint8Array;

  constructor() {
    let code: Uint8Array<ArrayBuffer>;
    try {
      code = new Uint8Array(fs.readFileSync(WASM_FILE));
    } catch (error) {
      throw new Error(`${WASM_FILE.pathname} is missing (${(error as Error).message}): it is built by \`make build\``);
    }
    const exports = new WebAssembly.Instance(new WebAssembly.Module(code), {}).exports;
    this.exports = exports as unknown as GostExports;
    this.constants = Object.fromEntries(CONSTANTS.map((name) => [name, (exports[name] as WebAssembly.Global).value as number])) as Constants;
    this.exports.streebogSetUp();
    this.top = this.exports.heapBase();
    this.view = new Uint8Array(this.exports.memory.buffer);
  }

  /** The module's memory as bytes (a fresh view after the memory grew). */
  bytes(): Uint8Array {
    if (this.view.buffer !== this.exports.memory.buffer) this.view = new Uint8Array(this.exports.memory.buffer);
    return this.view;
  }

  /** `size` bytes of memory above everything allocated so far, 16-aligned; never freed. */
  allocate(size: number): number {
    const at = Math.ceil(this.top / 16) * 16;
    this.top = at + size;
    const missing = this.top - this.exports.memory.buffer.byteLength;
    if (missing > 0) this.exports.memory.grow(Math.ceil(missing / PAGE));
    return at;
  }
}

let loaded: GostModule | undefined;
function gostModule(): GostModule {
  loaded ??= new GostModule();
  return loaded;
}

// ---------------------------------------------------------------------------------------------
// Streebog

const STATE_BYTES = 192;

/** GOST R 34.11-2012, 256 or 512 bits, in the engine's byte order (as reference/streebog.ts). */
export class WasmStreebog extends StreebogBlocks {
  private readonly module = gostModule();
  /** h, N and Σ between calls. */
  private readonly state = new Uint8Array(STATE_BYTES);

  constructor(bits: 256 | 512) {
    super(bits);
    // The initial vector: 0^512 for the 512-bit hash, (00000001)^64 for the 256-bit one.
    if (bits === 256) this.state.fill(1, 0, 64);
  }

  protected absorb(bytes: Uint8Array, offset: number, blocks: number): void {
    const { exports, constants } = this.module;
    const memory = this.module.bytes();
    const state = exports.streebogState();
    const input = exports.streebogInput();
    memory.set(this.state, state);
    for (let done = 0; done < 64 * blocks; ) {
      const take = Math.min(64 * blocks - done, constants.STREEBOG_INPUT_BYTES);
      memory.set(bytes.subarray(offset + done, offset + done + take), input);
      exports.streebogAbsorb(take / 64);
      done += take;
    }
    this.state.set(memory.subarray(state, state + STATE_BYTES));
  }

  protected finish(last: Uint8Array, length: number): Buffer {
    const { exports } = this.module;
    const memory = this.module.bytes();
    const state = exports.streebogState();
    memory.set(this.state, state);
    memory.set(last.subarray(0, length), exports.streebogInput());
    exports.streebogFinish(length);
    return Buffer.from(memory.subarray(state, state + 64));
  }
}

export function wasmStreebog(bits: 256 | 512, bytes: Uint8Array): Buffer {
  return new WasmStreebog(bits).update(bytes).digest();
}

// ---------------------------------------------------------------------------------------------
// GOST R 34.10-2012

/** The number of little-endian 29-bit limbs. */
function limbsValue(words: Uint32Array): bigint {
  let value = 0n;
  for (let i = words.length - 1; i >= 0; i -= 1) value = (value << LIMB_BITS) | BigInt(words[i]!);
  return value;
}

/** A number as `count` little-endian 29-bit limbs in 32-bit words. */
function limbs(value: bigint, count: number): Uint32Array {
  const out = new Uint32Array(count);
  const mask = (1n << LIMB_BITS) - 1n;
  for (let i = 0; i < count; i += 1) out[i] = Number((value >> (LIMB_BITS * BigInt(i))) & mask);
  return out;
}

/**
 * A modulus block of assembly/curve.ts: m, −m⁻¹ mod 2^29, R² mod m, R mod m, c. For m = 2^k − c
 * with a small c (k = 256 or 512: p of CryptoPro-A, tc26-256-A, tc26-512-A and C) the module
 * multiplies without Montgomery, twice as fast: R is 1 there.
 */
function modulusBlock(m: bigint, count: number, special: boolean): Uint32Array {
  const c = (1n << (count === 9 ? 256n : 512n)) - m;
  const withoutMontgomery = special && c > 0n && c < 1024n;
  const r = withoutMontgomery ? 1n : 1n << (LIMB_BITS * BigInt(count));
  const limbBase = 1n << LIMB_BITS;
  const minv = (limbBase - inverse(m % limbBase, limbBase)) % limbBase;
  const block = new Uint32Array(3 * count + 2);
  block.set(limbs(m, count), 0);
  block[count] = Number(minv);
  block.set(limbs((r * r) % m, count), count + 1);
  block.set(limbs(r % m, count), 2 * count + 1);
  block[3 * count + 1] = withoutMontgomery ? Number(c) : 0;
  return block;
}

interface KeyTable {
  address: number;
  bits: 256 | 512;
}

interface WasmCurve {
  curve: Curve;
  limbs: number;
  size: number;
  aIsMinus3: number;
  address: number;
  baseTable: number;
  baseRows: number;
  keyRows: number;
  /** Whether keys must be checked in the order-q subgroup: the group's order is a multiple of q. */
  checkSubgroup: boolean;
}

class GostVerifier {
  private readonly module = gostModule();
  private readonly curves = new Map<Curve, WasmCurve>();
  /** Keys checked before: whether they passed (on the curve and, with a cofactor, in the order-q subgroup). */
  private readonly verdicts = new BoundedCache<string, boolean>(KEY_VERDICTS);
  /** The tables of the keys seen most recently (a Map keeps insertion order: the oldest first). */
  private readonly tables = new Map<string, KeyTable>();
  private readonly freeTables: KeyTable[] = [];
  /** How many keys were checked (for the tests: a key seen before is not checked again). */
  keyChecks = 0;
  private scratch = { address: 0, size: 0 };

  private setUp(curve: Curve): WasmCurve {
    const known = this.curves.get(curve);
    if (known) return known;
    const { exports } = this.module;
    const count = curve.bits === 256 ? 9 : 18;
    const size = curve.bits / 8;
    const address = this.module.allocate(exports.curveBlockBytes(count));
    const block = new Uint32Array(exports.curveBlockBytes(count) / 4);
    const p = modulusBlock(curve.p, count, true);
    // a and b in the field's form: times R mod p (R = 1 without Montgomery).
    const r = limbsValue(p.subarray(2 * count + 1, 3 * count + 1));
    block.set(p, 0);
    block.set(modulusBlock(curve.q, count, false), 3 * count + 2);
    block.set(limbs((curve.a * r) % curve.p, count), 6 * count + 4);
    block.set(limbs((curve.b * r) % curve.p, count), 7 * count + 4);
    this.module.bytes().set(new Uint8Array(block.buffer), address);
    const qBits = curve.q.toString(2).length;
    const baseRows = Math.ceil(qBits / BASE_TABLE_WIDTH);
    const setUp: WasmCurve = {
      curve,
      limbs: count,
      size,
      aIsMinus3: curve.a === curve.p - 3n ? 1 : 0,
      address,
      baseTable: 0,
      baseRows,
      keyRows: Math.ceil(qBits / KEY_TABLE_WIDTH),
      checkSubgroup: keyCheckOf(curve) === 'order-q',
    };
    setUp.baseTable = this.module.allocate(baseRows * ((1 << BASE_TABLE_WIDTH) - 1) * 2 * 4 * count);
    this.writeKey(littleEndian(curve.x, size), littleEndian(curve.y, size));
    if (!this.buildTable(setUp, setUp.baseTable, BASE_TABLE_WIDTH, baseRows)) throw new Error(`${curve.name}: the base point's table cannot be built`);
    this.curves.set(curve, setUp);
    return setUp;
  }

  private writeKey(x: Uint8Array, y: Uint8Array): void {
    const layout = this.module.constants;
    const input = this.module.exports.curveInput();
    const memory = this.module.bytes();
    memory.set(x, input + layout.INPUT_KEY_X);
    memory.set(y, input + layout.INPUT_KEY_Y);
  }

  private buildTable(curve: WasmCurve, out: number, width: number, rows: number): boolean {
    const needed = rows * ((1 << width) - 1) * 4 * 4 * curve.limbs;
    if (this.scratch.size < needed) this.scratch = { address: this.module.allocate(needed), size: needed };
    return this.module.exports.buildTable(curve.address, curve.limbs, curve.aIsMinus3, out, width, rows, this.scratch.address) === 1;
  }

  private keyTable(curve: WasmCurve): KeyTable | undefined {
    const index = this.freeTables.findIndex((table) => table.bits === curve.curve.bits);
    const table =
      index >= 0
        ? this.freeTables.splice(index, 1)[0]!
        : { address: this.module.allocate(curve.keyRows * ((1 << KEY_TABLE_WIDTH) - 1) * 2 * 4 * curve.limbs), bits: curve.curve.bits };
    if (this.buildTable(curve, table.address, KEY_TABLE_WIDTH, curve.keyRows)) return table;
    this.freeTables.push(table);
    return undefined;
  }

  /** The table of a key that passed its check: kept, or built now (the second sight), dropping the oldest beyond KEY_TABLES. */
  private tableOf(id: string, curve: WasmCurve): KeyTable | undefined {
    let table = this.tables.get(id);
    if (table) this.tables.delete(id);
    else table = this.keyTable(curve);
    if (!table) return undefined;
    this.tables.set(id, table);
    if (this.tables.size > KEY_TABLES) {
      const [oldestId, oldest] = this.tables.entries().next().value!;
      this.tables.delete(oldestId);
      this.freeTables.push(oldest);
    }
    return table;
  }

  verify(curve: Curve, key: Uint8Array, digest: Uint8Array, signature: Uint8Array): boolean {
    const size = curve.bits / 8;
    if (key.length !== 2 * size || digest.length !== size || signature.length !== 2 * size) return false;
    const setUp = this.setUp(curve);
    const layout = this.module.constants;
    const id = `${curve.name}:${Buffer.from(key).toString('latin1')}`;
    const verdict = this.verdicts.get(id);
    if (verdict === false) return false;
    const input = this.module.exports.curveInput();
    this.writeKey(key.subarray(0, size), key.subarray(size));
    let check = layout.CHECK_NONE;
    if (verdict === undefined) {
      check = setUp.checkSubgroup ? layout.CHECK_SUBGROUP : layout.CHECK_ON_CURVE;
      this.keyChecks += 1;
    }
    // Seen before, so checked: the second sight builds its table.
    const table = verdict ? this.tableOf(id, setUp) : undefined;
    const memory = this.module.bytes();
    memory.set(digest, input + layout.INPUT_DIGEST);
    memory.set(signature, input + layout.INPUT_SIGNATURE);
    const result = this.module.exports.verify(
      setUp.address,
      setUp.limbs,
      setUp.aIsMinus3,
      setUp.baseTable,
      BASE_TABLE_WIDTH,
      setUp.baseRows,
      table?.address ?? 0,
      KEY_TABLE_WIDTH,
      setUp.keyRows,
      check,
    );
    if (result === layout.KEY_NOT_ON_CURVE || result === layout.KEY_OUTSIDE_SUBGROUP) {
      this.verdicts.set(id, false);
      return false;
    }
    if (verdict === undefined) this.verdicts.set(id, true);
    return result === layout.VERIFIED;
  }

  /** For the tests: a op b modulo p (modulus 0) or q (1); see fieldOperation in assembly/curve.ts. */
  fieldOperation(curve: Curve, modulus: 0 | 1, operation: 0 | 1 | 2 | 3, a: bigint, b: bigint): bigint {
    const setUp = this.setUp(curve);
    const layout = this.module.constants;
    const input = this.module.exports.curveInput();
    const memory = this.module.bytes();
    memory.set(littleEndian(a, setUp.size), input + layout.INPUT_KEY_X);
    memory.set(littleEndian(b, setUp.size), input + layout.INPUT_KEY_Y);
    this.module.exports.fieldOperation(setUp.address, setUp.limbs, modulus, operation);
    const out = this.module.bytes().subarray(input + layout.INPUT_DIGEST, input + layout.INPUT_DIGEST + setUp.size);
    return BigInt(`0x${Buffer.from(out).reverse().toString('hex')}`);
  }
}

function littleEndian(value: bigint, size: number): Uint8Array {
  return Buffer.from(value.toString(16).padStart(2 * size, '0'), 'hex').reverse();
}

let verifier: GostVerifier | undefined;
function gostVerifier(): GostVerifier {
  verifier ??= new GostVerifier();
  return verifier;
}

/**
 * Whether `signature` (s ‖ r, big-endian) is a GOST R 34.10-2012 signature of `digest` (engine byte
 * order) under `key`, x ‖ y little-endian as in a certificate (RFC 4491, 2.3.2). False also for a
 * key off the curve or outside the order-q subgroup.
 */
export function wasmGostVerify(curve: Curve, key: Uint8Array, digest: Uint8Array, signature: Uint8Array): boolean {
  return gostVerifier().verify(curve, key, digest, signature);
}

/** For the tests: how many keys were checked (on the curve, and in the subgroup where the curve needs it) so far. */
export function wasmKeyChecks(): number {
  return gostVerifier().keyChecks;
}

/** For the tests' comparison of the field arithmetic with BigInt. */
export function wasmFieldOperation(curve: Curve, modulus: 0 | 1, operation: 0 | 1 | 2 | 3, a: bigint, b: bigint): bigint {
  return gostVerifier().fieldOperation(curve, modulus, operation, a, b);
}
