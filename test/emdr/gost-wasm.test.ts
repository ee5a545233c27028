import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CURVES, type Curve } from '../../src/emdr/signatures/crypto/curves.js';
import { gostVerify } from '../../src/emdr/signatures/crypto/reference/gost3410.js';
import { generateGostKeyPair, gostPublicKeyBytes, gostSign, type GostKeyPair } from '../../src/emdr/signatures/crypto/reference/gost-sign.js';
import { WasmStreebog, wasmFieldOperation, wasmGostVerify, wasmKeyChecks, wasmStreebog } from '../../src/emdr/signatures/crypto/gost-wasm.js';
import { CurveArithmetic, inverse, type Affine } from '../../src/emdr/signatures/crypto/reference/point-arithmetic.js';
import { streebog } from '../../src/emdr/signatures/crypto/reference/streebog.js';

/**
 * The WebAssembly GOST check (gost-wasm.ts, what the document check runs) against the TypeScript
 * reference (crypto/reference/) on random inputs: the same digests, the same field
 * arithmetic as BigInt, the same verdicts on every parameter set. The engine's signatures are
 * checked through the document check in signature-crypto.test.ts.
 */

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
const fromBigEndianHex = (text: string) => Buffer.from(text, 'hex').reverse();
const parameterSets = [...new Set(CURVES.values())];

describe('Streebog in WebAssembly', () => {
  it("gives RFC 6986's hashes of M1 and M2, 512 and 256 bits", () => {
    const m1 = fromBigEndianHex(
      '323130393837363534333231303938373635343332313039383736353433323130393837363534333231303938373635343332313039383736353433323130',
    );
    const m2 = fromBigEndianHex(
      'fbe2e5f0eee3c820fbeafaebef20fffbf0e1e0f0f520e0ed20e8ece0ebe5f0f2f120fff0eeec20f120faf2fee5e2202ce8f6f3ede220e8e6eee1e8f0f2d1202ce8f0f2e5e220e5d1',
    );
    expect(hex(Buffer.from(wasmStreebog(512, m1)).reverse())).toBe(
      '486f64c1917879417fef082b3381a4e211c324f074654c38823a7b76f830ad00fa1fbae42b1285c0352f227524bc9ab16254288dd6863dccd5b9f54a1ad0541b',
    );
    expect(hex(Buffer.from(wasmStreebog(256, m1)).reverse())).toBe('00557be5e584fd52a449b16b0251d05d27f94ab76cbaa6da890b59d8ef1e159d');
    expect(hex(Buffer.from(wasmStreebog(512, m2)).reverse())).toBe(
      '28fbc9bada033b1460642bdcddb90c3fb3e56c497ccd0f62b8a2ad4935e85f037613966de4ee00531ae60f3b5a47f8dae06915d5f2f194996fcabf2622e6881e',
    );
    expect(hex(Buffer.from(wasmStreebog(256, m2)).reverse())).toBe('508f7e553c06501d749a66fc28c6cac0b005746d97537fa85d9e40904efed29d');
  });

  it('agrees with the TypeScript reference on random bytes fed in random slices', () => {
    // Lengths around the block size and past the module's 64 KiB input area; slices of any size.
    const input = fc.record({
      bits: fc.constantFrom(256 as const, 512 as const),
      data: fc.oneof(
        fc.uint8Array({ maxLength: 300 }),
        fc.integer({ min: 60_000, max: 140_000 }).map((length) => new Uint8Array(randomBytes(length))),
      ),
      slices: fc.array(fc.integer({ min: 1, max: 70_000 }), { minLength: 1, maxLength: 8 }),
    });
    fc.assert(
      fc.property(input, ({ bits, data, slices }) => {
        const hash = new WasmStreebog(bits);
        let offset = 0;
        for (let i = 0; offset < data.length; i += 1) {
          const size = slices[i % slices.length]!;
          hash.update(data.subarray(offset, offset + size));
          offset += size;
        }
        expect(hex(hash.digest())).toBe(hex(streebog(bits, data)));
      }),
      { numRuns: 60 },
    );
  });

  it('keeps many hashes apart: each keeps its own state between updates', () => {
    const parts = [randomBytes(100), randomBytes(5000), randomBytes(64)];
    const hashes = [new WasmStreebog(256), new WasmStreebog(512), new WasmStreebog(256)];
    for (const part of parts)
      hashes.forEach((hash, index) => {
        hash.update(index === 2 ? part.subarray(1) : part);
      });
    expect(hex(hashes[0]!.digest())).toBe(hex(streebog(256, Buffer.concat(parts))));
    expect(hex(hashes[1]!.digest())).toBe(hex(streebog(512, Buffer.concat(parts))));
    expect(hex(hashes[2]!.digest())).toBe(hex(streebog(256, Buffer.concat(parts.map((part) => part.subarray(1))))));
  });
});

describe('GOST R 34.10-2012 arithmetic in WebAssembly', () => {
  for (const curve of parameterSets) {
    it(`multiplies, adds, subtracts and inverts modulo p and q of ${curve.name} as BigInt does`, () => {
      for (const [modulus, m] of [
        [0, curve.p],
        [1, curve.q],
      ] as const) {
        const element = fc.oneof(fc.bigInt({ min: 0n, max: m - 1n }), fc.constantFrom(0n, 1n, 2n, m - 1n, m - 2n, (m - 1n) / 2n));
        fc.assert(
          fc.property(element, element, (a, b) => {
            expect(wasmFieldOperation(curve, modulus, 0, a, b)).toBe((a * b) % m);
            expect(wasmFieldOperation(curve, modulus, 1, a, b)).toBe((a + b) % m);
            expect(wasmFieldOperation(curve, modulus, 2, a, b)).toBe((((a - b) % m) + m) % m);
            expect(wasmFieldOperation(curve, modulus, 3, a, b)).toBe(a === 0n ? 0n : inverse(a, m));
          }),
          { numRuns: 40 },
        );
      }
    });
  }
});

/** Both verdicts on one input: the reference's and the WebAssembly's. */
function verdicts(curve: Curve, key: GostKeyPair, digest: Uint8Array, signature: Uint8Array): [boolean, boolean] {
  return [gostVerify(curve, key.publicKey, digest, signature), wasmGostVerify(curve, gostPublicKeyBytes(key), digest, signature)];
}

const power = (base: bigint, exponent: bigint, modulus: bigint) => {
  let result = 1n;
  for (let b = base % modulus, e = exponent; e > 0n; e >>= 1n, b = (b * b) % modulus) if (e & 1n) result = (result * b) % modulus;
  return result;
};

const bigEndian = (value: bigint, size: number) => Buffer.from(value.toString(16).padStart(2 * size, '0'), 'hex');

describe('GOST R 34.10-2012 verification in WebAssembly', () => {
  for (const curve of parameterSets) {
    it(`gives the reference's verdicts on ${curve.name}: valid, changed, out-of-range and random signatures, for keys seen once and again`, () => {
      const size = curve.bits / 8;
      const keys = [generateGostKeyPair(curve), generateGostKeyPair(curve)];
      const change = fc.record({ at: fc.nat(2 * size - 1), mask: fc.integer({ min: 1, max: 255 }) });
      const input = fc.record({
        key: fc.nat(1),
        digest: fc.uint8Array({ minLength: size, maxLength: size }),
        change: fc.option(change),
        changeDigest: fc.boolean(),
      });
      fc.assert(
        fc.property(input, ({ key: which, digest, change: changed, changeDigest }) => {
          const key = keys[which]!;
          const signature = gostSign(key, digest);
          if (changed) signature[changed.at]! ^= changed.mask;
          const checked = Buffer.from(digest);
          if (changeDigest) checked[0]! ^= 1;
          const [reference, wasm] = verdicts(curve, key, checked, signature);
          expect(wasm).toBe(reference);
          expect(wasm).toBe(!changed && !changeDigest);
        }),
        // Each key is seen many times: the first verification by NAF, then with its table.
        { numRuns: 24 },
      );
      const digest = randomBytes(size);
      const valid = gostSign(keys[0]!, digest);
      const r = valid.subarray(size);
      // s or r of 0, q, q + 1 and all ones; a signature of the wrong length; random bytes.
      for (const bad of [0n, curve.q, curve.q + 1n, (1n << BigInt(curve.bits)) - 1n]) {
        expect(verdicts(curve, keys[0]!, digest, Buffer.concat([bigEndian(bad, size), r]))).toEqual([false, false]);
        expect(verdicts(curve, keys[0]!, digest, Buffer.concat([valid.subarray(0, size), bigEndian(bad, size)]))).toEqual([false, false]);
      }
      expect(verdicts(curve, keys[0]!, digest, valid.subarray(1))).toEqual([false, false]);
      expect(verdicts(curve, keys[0]!, digest, randomBytes(2 * size))).toEqual([false, false]);
      // A key off the curve (y + 1), refused before and after the valid key was seen.
      const offCurve: GostKeyPair = { ...keys[0]!, publicKey: { x: keys[0]!.publicKey.x, y: (keys[0]!.publicKey.y + 1n) % curve.p } };
      expect(verdicts(curve, offCurve, digest, valid)).toEqual([false, false]);
      expect(verdicts(curve, offCurve, digest, valid)).toEqual([false, false]);
      expect(verdicts(curve, keys[0]!, digest, valid)).toEqual([true, true]);
    });
  }

  // On a curve with a cofactor a new key's q·Q = O is found in the same chain of doublings as its
  // z2·Q (jointMultiply in assembly/curve.ts): that path, against the reference, on keys each seen once.
  for (const curve of parameterSets.filter((set) => set.cofactor !== 1n)) {
    it(`gives the reference's verdicts on ${curve.name} for keys seen once: in the order-q group or beside it, signatures valid or not`, () => {
      const arithmetic = new CurveArithmetic(curve);
      const size = curve.bits / 8;
      const random = (below: bigint) => BigInt(`0x${randomBytes(size + 16).toString('hex')}`) % below;
      /** q·R for a random point R: a point of order 1, 2 or 4 (p ≡ 3 mod 4: a square root is a power). */
      const smallOrderPoint = (): Affine | undefined => {
        for (;;) {
          const x = random(curve.p);
          const right = (((x * x * x + curve.a * x + curve.b) % curve.p) + curve.p) % curve.p;
          const y = power(right, (curve.p + 1n) / 4n, curve.p);
          if ((y * y) % curve.p === right) return arithmetic.toAffine(arithmetic.nafMultiple(curve.q, { x, y }));
        }
      };
      const input = fc.record({ kind: fc.constantFrom('valid', 'changed', 'beside', 'malformed-then-valid'), at: fc.nat(2 * size - 1) });
      fc.assert(
        fc.property(input, ({ kind, at }) => {
          const key = generateGostKeyPair(curve);
          const digest = randomBytes(size);
          const e = BigInt(`0x${Buffer.from(digest).reverse().toString('hex')}`) % curve.q || 1n;
          // z2 = −r·e⁻¹ mod q a multiple of 4, so that z2·(Q + T) = z2·Q: beside the group, only the key's check refuses it.
          const z2 = (signed: Buffer) => (((-BigInt(`0x${signed.subarray(size).toString('hex')}`) * inverse(e, curve.q)) % curve.q) + curve.q) % curve.q;
          let signature = gostSign(key, digest);
          while (kind !== 'changed' && z2(signature) % 4n !== 0n) signature = gostSign(key, digest);
          let publicKey = key.publicKey;
          if (kind === 'changed') signature[at]! ^= 1;
          if (kind === 'beside' || kind === 'malformed-then-valid') {
            const small = smallOrderPoint();
            // Q + T for T of order 2 or 4 (now and then O: then the key is a real one).
            if (small) publicKey = arithmetic.toAffine(arithmetic.addAffine({ ...key.publicKey, z: 1n }, small)) ?? publicKey;
          }
          const bytes = gostPublicKeyBytes({ ...key, publicKey });
          const inGroup = arithmetic.nafMultiple(curve.q, publicKey).z === 0n;
          if (kind === 'malformed-then-valid') {
            // A signature of zeros first: the key's verdict, kept, must still be the subgroup's.
            expect(wasmGostVerify(curve, bytes, digest, Buffer.alloc(2 * size))).toBe(false);
          }
          const reference = gostVerify(curve, publicKey, digest, signature);
          expect(wasmGostVerify(curve, bytes, digest, signature)).toBe(reference);
          expect(reference).toBe(kind !== 'changed' && inGroup);
        }),
        { numRuns: 40 },
      );
    });
  }

  it('checks a key once (on tc26-256-A, its q·Q = O too), however many other keys come between: beyond the keys it keeps tables for', () => {
    const curve = CURVES.get('1.2.643.7.1.2.1.1.1')!;
    const signed = Array.from({ length: 48 }, () => {
      const key = generateGostKeyPair(curve);
      const digest = randomBytes(32);
      return { key: gostPublicKeyBytes(key), digest, signature: gostSign(key, digest) };
    });
    const before = wasmKeyChecks();
    for (const { key, digest, signature } of signed) expect(wasmGostVerify(curve, key, digest, signature)).toBe(true);
    expect(wasmKeyChecks() - before).toBe(signed.length);
    for (let round = 0; round < 2; round += 1) {
      for (const { key, digest, signature } of signed) {
        expect(wasmGostVerify(curve, key, digest, signature)).toBe(true);
        expect(wasmGostVerify(curve, key, randomBytes(32), signature)).toBe(false);
      }
    }
    expect(wasmKeyChecks() - before).toBe(signed.length);
  });

  it('keeps its verdicts while more keys come than it keeps tables for (tables dropped and their memory reused)', () => {
    const curve = CURVES.get('1.2.643.2.2.35.1')!;
    const signed = Array.from({ length: 40 }, () => {
      const key = generateGostKeyPair(curve);
      const digest = randomBytes(32);
      return { key, digest, signature: gostSign(key, digest) };
    });
    for (let round = 0; round < 3; round += 1) {
      for (const { key, digest, signature } of signed) {
        expect(wasmGostVerify(curve, gostPublicKeyBytes(key), digest, signature)).toBe(true);
        const other = Buffer.from(digest);
        other[round]! ^= 0x80;
        expect(wasmGostVerify(curve, gostPublicKeyBytes(key), other, signature)).toBe(false);
      }
    }
  });
});
