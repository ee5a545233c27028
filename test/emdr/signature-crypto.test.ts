import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/emdr/errors/codes.js';
import { CURVES, keyCheckOf, type Curve } from '../../src/emdr/signatures/crypto/curves.js';
import { gostVerify, inOrderQSubgroup, isOnCurve, littleEndianInteger, multiplyBase } from '../../src/emdr/signatures/crypto/reference/gost3410.js';
import { wasmGostVerify } from '../../src/emdr/signatures/crypto/gost-wasm.js';
import { CurveArithmetic, inverse, mod, type Affine, type Jacobian } from '../../src/emdr/signatures/crypto/reference/point-arithmetic.js';
import { generateGostKeyPair, gostPublicKeyBytes, gostSign } from '../../src/emdr/signatures/crypto/reference/gost-sign.js';
import { parseSignedData } from '../../src/emdr/signatures/cms/cms.js';
import { Streebog, streebog } from '../../src/emdr/signatures/crypto/reference/streebog.js';
import { DocumentSignatureCheck } from '../../src/emdr/signatures/verify.js';
import { TestPki, type KeyAlgorithm } from '../support/signing.js';

/**
 * The cryptography of the signature check on its own: Streebog and GOST R 34.10-2012 against the
 * standards' examples and against the OpenSSL gost engine, and the CMS parser against hostile input.
 */

const fromBigEndianHex = (hex: string) => Buffer.from(hex, 'hex').reverse();
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

let pki: TestPki;
beforeAll(() => {
  pki = new TestPki({ gost: true });
});
afterAll(() => pki?.remove());

describe('Streebog (GOST R 34.11-2012)', () => {
  // RFC 6986, 10.1 and 10.2: messages and hashes written as big-endian numbers.
  const M1 = fromBigEndianHex('323130393837363534333231303938373635343332313039383736353433323130393837363534333231303938373635343332313039383736353433323130');
  const M2 = fromBigEndianHex(
    'fbe2e5f0eee3c820fbeafaebef20fffbf0e1e0f0f520e0ed20e8ece0ebe5f0f2f120fff0eeec20f120faf2fee5e2202ce8f6f3ede220e8e6eee1e8f0f2d1202ce8f0f2e5e220e5d1',
  );

  it("gives RFC 6986's hashes of M1 and M2, 512 and 256 bits", () => {
    expect(hex(Buffer.from(streebog(512, M1)).reverse())).toBe(
      '486f64c1917879417fef082b3381a4e211c324f074654c38823a7b76f830ad00fa1fbae42b1285c0352f227524bc9ab16254288dd6863dccd5b9f54a1ad0541b',
    );
    expect(hex(Buffer.from(streebog(256, M1)).reverse())).toBe('00557be5e584fd52a449b16b0251d05d27f94ab76cbaa6da890b59d8ef1e159d');
    expect(hex(Buffer.from(streebog(512, M2)).reverse())).toBe(
      '28fbc9bada033b1460642bdcddb90c3fb3e56c497ccd0f62b8a2ad4935e85f037613966de4ee00531ae60f3b5a47f8dae06915d5f2f194996fcabf2622e6881e',
    );
    expect(hex(Buffer.from(streebog(256, M2)).reverse())).toBe('508f7e553c06501d749a66fc28c6cac0b005746d97537fa85d9e40904efed29d');
  });

  it('agrees with the gost engine on any length, fed in slices of any size', () => {
    for (const length of [0, 1, 63, 64, 65, 127, 128, 1000, 70_001]) {
      const data = randomBytes(length);
      for (const bits of [256, 512] as const) {
        const engine = pki.openssl(['dgst', `-streebog${bits}`, '-binary'], data);
        const hasher = new Streebog(bits);
        for (let offset = 0; offset < data.length; ) {
          const step = 1 + Math.floor(Math.random() * 5000);
          hasher.update(data.subarray(offset, offset + step));
          offset += step;
        }
        expect(hex(hasher.digest()), `${bits} bits, ${length} bytes`).toBe(hex(engine));
      }
    }
  });
});

describe('GOST R 34.10-2012 verification', () => {
  const big = (value: string) => BigInt(`0x${value}`);
  // The test parameter sets and examples of GOST R 34.10-2012, appendix A (RFC 7091, 7.1 and 7.2).
  const example256 = {
    curve: {
      name: 'test-256',
      bits: 256,
      p: big('8000000000000000000000000000000000000000000000000000000000000431'),
      a: 7n,
      b: big('5FBFF498AA938CE739B8E022FBAFEF40563F6E6A3472FC2A514C0CE9DAE23B7E'),
      q: big('8000000000000000000000000000000150FE8A1892976154C59CFC193ACCF5B3'),
      cofactor: 1n,
      x: 2n,
      y: big('08E2A8A0E65147D4BD6316030E16D19C85C97F0A9CA267122B96ABBCEA7E8FC8'),
    } as Curve,
    key: {
      x: big('7F2B49E270DB6D90D8595BEC458B50C58585BA1D4E9B788F6689DBD8E56FD80B'),
      y: big('26F1B489D6701DD185C8413A977B3CBBAF64D1C593D26627DFFB101A87FF77DA'),
    },
    e: '2DFBC1B372D89A1188C09C52E0EEC61FCE52032AB1022E8E67ECE6672B043EE5',
    r: '41AA28D2F1AB148280CD9ED56FEDA41974053554A42767B83AD043FD39DC0493',
    s: '01456C64BA4642A1653C235A98A60249BCD6D3F746B631DF928014F6C5BF9C40',
  };
  const example512 = {
    curve: {
      name: 'test-512',
      bits: 512,
      p: big('4531ACD1FE0023C7550D267B6B2FEE80922B14B2FFB90F04D4EB7C09B5D2D15DF1D852741AF4704A0458047E80E4546D35B8336FAC224DD81664BBF528BE6373'),
      a: 7n,
      b: big('1CFF0806A31116DA29D8CFA54E57EB748BC5F377E49400FDD788B649ECA1AC4361834013B2AD7322480A89CA58E0CF74BC9E540C2ADD6897FAD0A3084F302ADC'),
      q: big('4531ACD1FE0023C7550D267B6B2FEE80922B14B2FFB90F04D4EB7C09B5D2D15DA82F2D7ECB1DBAC719905C5EECC423F1D86E25EDBE23C595D644AAF187E6E6DF'),
      cofactor: 1n,
      x: big('24D19CC64572EE30F396BF6EBBFD7A6C5213B3B3D7057CC825F91093A68CD762FD60611262CD838DC6B60AA7EEE804E28BC849977FAC33B4B530F1B120248A9A'),
      y: big('2BB312A43BD2CE6E0D020613C857ACDDCFBF061E91E5F2C3F32447C259F39B2C83AB156D77F1496BF7EB3351E1EE4E43DC1A18B91B24640B6DBB92CB1ADD371E'),
    } as Curve,
    key: {
      x: big('115DC5BC96760C7B48598D8AB9E740D4C4A85A65BE33C1815B5C320C854621DD5A515856D13314AF69BC5B924C8B4DDFF75C45415C1D9DD9DD33612CD530EFE1'),
      y: big('37C7C90CD40B0F5621DC3AC1B751CFA0E2634FA0503B3D52639F5D7FB72AFD61EA199441D943FFE7F0C70A2759A3CDB84C114E1F9339FDF27F35ECA93677BEEC'),
    },
    e: '3754F3CFACC9E0615C4F4A7C4D8DAB531B09B6F9C170C533A71D147035B0C5917184EE536593F4414339976C647C5D5A407ADEDB1D560C4FC6777D2972075B8C',
    r: '2F86FA60A081091A23DD795E1E3C689EE512A3C82EE0DCC2643C78EEA8FCACD35492558486B20F1C9EC197C90699850260C93BCBCD9C5C3317E19344E173AE36',
    s: '1081B394696FFE8E6585E7A9362D26B6325F56778AADBC081C0BFBE933D52FF5823CE288E8C4F362526080DF7F70CE406A6EEB1F56919CB92A9853BDE73E5B4A',
  };

  for (const [label, example] of [
    ['256', example256],
    ['512', example512],
  ] as const) {
    it(`verifies the standard's ${label}-bit example and refuses it with one bit changed`, () => {
      // The digest as the engine stores it (little-endian); the signature as s ‖ r, big-endian.
      const digest = fromBigEndianHex(example.e);
      const signature = Buffer.from(example.s + example.r, 'hex');
      expect(gostVerify(example.curve, example.key, digest, signature)).toBe(true);
      const changed = Buffer.from(signature);
      changed[changed.length - 1]! ^= 1;
      expect(gostVerify(example.curve, example.key, digest, changed)).toBe(false);
      const otherDigest = Buffer.from(digest);
      otherDigest[0]! ^= 1;
      expect(gostVerify(example.curve, example.key, otherDigest, signature)).toBe(false);
    });
  }

  it('knows parameter sets whose base points lie on their curves', () => {
    for (const [oid, curve] of CURVES) expect(isOnCurve(curve, curve.x, curve.y), oid).toBe(true);
  });

  // The fast paths (a table per base point, a table per key seen twice) against the plain NAF
  // double-and-add, on every parameter set and the standard's test curves (a ≠ −3, p without a fast reducer).
  const distinctCurves = [...new Set([...CURVES.values(), example256.curve, example512.curve])];
  for (const curve of distinctCurves) {
    it(`multiplies by table as by double-and-add on ${curve.name}, for random scalars and keys`, () => {
      const arithmetic = new CurveArithmetic(curve);
      const affine = (point: Jacobian) => arithmetic.toAffine(point);
      const base: Affine = { x: curve.x, y: curve.y };
      const key = affine(arithmetic.nafMultiple(12345678901234567890n, base))!;
      const keyTable = arithmetic.buildTable(key, 4)!;
      const scalar = fc.bigInt({ min: 0n, max: curve.q - 1n });
      fc.assert(
        fc.property(scalar, scalar, (k1, k2) => {
          expect(affine(arithmetic.baseTable().multiply(k1))).toEqual(affine(arithmetic.nafMultiple(k1, base)));
          expect(affine(keyTable.multiply(k2))).toEqual(affine(arithmetic.nafMultiple(k2, key)));
          expect(affine(arithmetic.baseAndKeyMultiples(k1, key, k2))).toEqual(
            affine(arithmetic.add(arithmetic.nafMultiple(k1, base), arithmetic.nafMultiple(k2, key))),
          );
        }),
        { numRuns: 15 },
      );
      // Edge scalars: 0, 1, q − 1 (k·P = −P), and k·G + (q − k)·G = infinity.
      for (const k of [0n, 1n, curve.q - 1n]) expect(affine(arithmetic.baseTable().multiply(k))).toEqual(affine(arithmetic.nafMultiple(k, base)));
      expect(arithmetic.add(arithmetic.baseTable().multiply(7n), arithmetic.nafMultiple(curve.q - 7n, base)).z).toBe(0n);
    });
  }

  it('gives the same verdicts for a key seen once, seen twice (its table is built) and seen again', () => {
    for (const curve of new Set(CURVES.values())) {
      const key = generateGostKeyPair(curve);
      const digest = randomBytes(curve.bits / 8);
      const signature = gostSign(key, digest);
      const changed = Buffer.from(signature);
      changed[5]! ^= 1;
      for (let seen = 0; seen < 3; seen += 1) {
        expect(gostVerify(curve, key.publicKey, digest, signature), `${curve.name} #${seen}`).toBe(true);
        expect(gostVerify(curve, key.publicKey, digest, changed), `${curve.name} #${seen}`).toBe(false);
      }
    }
  });

  const document = Buffer.from('<ClinicalDocument xmlns="urn:hl7-org:v3"><title>Осмотр</title></ClinicalDocument>');
  const verdict = (signature: Buffer, bytes = document) => {
    const check = new DocumentSignatureCheck([{ name: 'signature', bytes: signature }], { now: Date.now() });
    check.update(bytes);
    return check.finish();
  };

  const cases: Array<[KeyAlgorithm, string]> = [
    ['gost2012_256', 'A'],
    ['gost2012_256', 'B'],
    ['gost2012_256', 'C'],
    ['gost2012_256', 'TCA'],
    ['gost2012_512', 'A'],
    ['gost2012_512', 'B'],
    ['gost2012_512', 'C'],
  ];
  for (const [algorithm, paramset] of cases) {
    it(`verifies CMS signatures the gost engine made with ${algorithm} parameter set ${paramset}, and refuses a changed value or document`, () => {
      const signer = pki.issue({ algorithm, paramset, commonName: `${algorithm} ${paramset}` });
      const signature = pki.sign(document, signer);
      expect(verdict(signature)).toEqual([]);
      const changed = Buffer.from(signature);
      changed[changed.length - 2]! ^= 0x10;
      expect(verdict(changed)).toEqual([
        { code: 'SIGNATURE_VERIFICATION_ERROR', message: "signature: the signature value does not verify with the signer's certificate" },
      ]);
      expect(verdict(signature, Buffer.concat([document, Buffer.from(' ')]))[0]!.code).toBe('SIGNATURE_VERIFICATION_ERROR');
    });
  }

  it('verifies a signature without signed attributes (over the document itself)', () => {
    const signer = pki.issue({ algorithm: 'gost2012_256', commonName: 'no attributes' });
    const input = `${pki.dir}/noattr.xml`;
    fs.writeFileSync(input, document);
    const signature = pki.openssl([
      'cms',
      '-sign',
      '-binary',
      '-noattr',
      '-in',
      input,
      '-signer',
      signer.certificate,
      '-inkey',
      signer.key,
      '-md',
      'streebog256',
      '-outform',
      'DER',
    ]);
    expect(verdict(signature)).toEqual([]);
    expect(verdict(signature, Buffer.from('<other/>'))).toEqual([
      { code: 'SIGNATURE_VERIFICATION_ERROR', message: "signature: the signature value does not verify with the signer's certificate" },
    ]);
  });
});

describe('keys outside the order-q subgroup (the small-subgroup forgery)', () => {
  // tc26-256-A and tc26-512-C have cofactor 4: points of order 2 lie on them. With such a point T as
  // the public key, z2·T vanishes whenever z2 is even, so (s, r) = (k·e mod q, x(k·G) mod q) verifies
  // for any digest e once k is picked so that z2 = −r·e⁻¹ mod q is even: anyone can sign anything.
  const random = (below: bigint) => BigInt(`0x${randomBytes(80).toString('hex')}`) % below;
  const power = (base: bigint, exponent: bigint, modulus: bigint) => {
    let result = 1n;
    for (let b = base % modulus, e = exponent; e > 0n; e >>= 1n, b = (b * b) % modulus) if (e & 1n) result = (result * b) % modulus;
    return result;
  };

  /** A square root modulo the prime p by Tonelli–Shanks (a power when p ≡ 3 mod 4); undefined for a non-residue. */
  function squareRoot(value: bigint, p: bigint): bigint | undefined {
    if (value === 0n) return 0n;
    if (power(value, (p - 1n) / 2n, p) !== 1n) return undefined;
    let q = p - 1n;
    let twos = 0n;
    for (; q % 2n === 0n; q /= 2n) twos += 1n;
    let z = 2n;
    while (power(z, (p - 1n) / 2n, p) !== p - 1n) z += 1n;
    let [m, c, t, root] = [twos, power(z, q, p), power(value, q, p), power(value, (q + 1n) / 2n, p)];
    while (t !== 1n) {
      let i = 0n;
      for (let square = t; square !== 1n; square = (square * square) % p) i += 1n;
      const b = power(c, 1n << (m - i - 1n), p);
      [m, c, t, root] = [i, (b * b) % p, (t * b * b) % p, (root * b) % p];
    }
    return root;
  }

  /** A random point of the curve. */
  function randomPoint(curve: Curve): Affine {
    for (;;) {
      const x = random(curve.p);
      const y = squareRoot(mod(x * x * x + curve.a * x + curve.b, curve.p), curve.p);
      if (y !== undefined) return { x, y };
    }
  }

  /** A point of order 2: q·R has order 1, 2 or 4 for any point R; its double, if not O, has order 2. */
  function orderTwoPoint(curve: Curve): Affine {
    const arithmetic = new CurveArithmetic(curve);
    for (;;) {
      const small = arithmetic.nafMultiple(curve.q, randomPoint(curve));
      if (small.z === 0n) continue;
      const twice = arithmetic.double(small);
      return arithmetic.toAffine(twice.z === 0n ? small : twice)!;
    }
  }

  /** A signature of `digest` under the order-2 key, made without any private key. */
  function forge(curve: Curve, digest: Uint8Array): Buffer {
    const { q } = curve;
    const size = curve.bits / 8;
    const e = littleEndianInteger(digest) % q || 1n;
    for (;;) {
      const k = 1n + random(q - 1n);
      const r = multiplyBase(curve, k).x % q;
      const s = (k * e) % q;
      if (r === 0n || s === 0n || mod(-r * inverse(e, q), q) % 2n !== 0n) continue;
      return Buffer.concat([Buffer.from(s.toString(16).padStart(2 * size, '0'), 'hex'), Buffer.from(r.toString(16).padStart(2 * size, '0'), 'hex')]);
    }
  }

  const keyBytes = (curve: Curve, point: Affine) => gostPublicKeyBytes({ curve, privateKey: 0n, publicKey: point });

  for (const oid of ['1.2.643.7.1.2.1.1.1', '1.2.643.7.1.2.1.2.3']) {
    const curve = CURVES.get(oid)!;
    it(`${curve.name}: a signature forged for a key of order 2 satisfies the verification equation, and both verifiers refuse the key`, () => {
      const arithmetic = new CurveArithmetic(curve);
      const key = orderTwoPoint(curve);
      expect(isOnCurve(curve, key.x, key.y)).toBe(true);
      expect(key.y).toBe(0n);
      expect(inOrderQSubgroup(curve, key)).toBe(false);
      for (let round = 0; round < 3; round += 1) {
        const digest = randomBytes(curve.bits / 8);
        const signature = forge(curve, digest);
        // The equation holds: x(z1·G + z2·Q) mod q = r. Only the subgroup check stands in the way.
        const size = curve.bits / 8;
        const s = BigInt(`0x${signature.subarray(0, size).toString('hex')}`);
        const r = BigInt(`0x${signature.subarray(size).toString('hex')}`);
        const v = inverse(littleEndianInteger(digest) % curve.q || 1n, curve.q);
        const c = arithmetic.toAffine(arithmetic.add(arithmetic.baseTable().multiply((s * v) % curve.q), arithmetic.nafMultiple(mod(-r * v, curve.q), key)))!;
        expect(c.x % curve.q).toBe(r);
        expect(gostVerify(curve, key, digest, signature)).toBe(false);
        expect(wasmGostVerify(curve, keyBytes(curve, key), digest, signature)).toBe(false);
      }
    });

    it(`${curve.name}: a key of order 2q (a real key plus a point of order 2) is refused even where its signature would verify`, () => {
      const arithmetic = new CurveArithmetic(curve);
      const real = generateGostKeyPair(curve);
      const mixed = arithmetic.toAffine(arithmetic.addAffine({ ...real.publicKey, z: 1n }, orderTwoPoint(curve)))!;
      const digest = randomBytes(curve.bits / 8);
      const e = littleEndianInteger(digest) % curve.q || 1n;
      // A signature by the real key whose z2 is even: z2·(Q + T) = z2·Q, so the equation holds for the mixed key.
      let signature = gostSign(real, digest);
      while (mod(-BigInt(`0x${signature.subarray(curve.bits / 8).toString('hex')}`) * inverse(e, curve.q), curve.q) % 2n !== 0n)
        signature = gostSign(real, digest);
      expect(gostVerify(curve, real.publicKey, digest, signature)).toBe(true);
      expect(wasmGostVerify(curve, keyBytes(curve, real.publicKey), digest, signature)).toBe(true);
      expect(inOrderQSubgroup(curve, mixed)).toBe(false);
      expect(gostVerify(curve, mixed, digest, signature)).toBe(false);
      expect(wasmGostVerify(curve, keyBytes(curve, mixed), digest, signature)).toBe(false);
    });
  }

  /** The integer square root: the largest r with r² ≤ n. */
  function isqrt(n: bigint): bigint {
    let root = 1n << BigInt(Math.ceil(n.toString(2).length / 2));
    for (let next = (root + n / root) >> 1n; next < root; next = (root + n / root) >> 1n) root = next;
    return root;
  }

  /** Miller–Rabin with 24 random bases: a composite passes with probability below 4⁻²⁴. */
  function probablyPrime(n: bigint): boolean {
    let d = n - 1n;
    let twos = 0;
    for (; d % 2n === 0n; d /= 2n) twos += 1;
    for (let round = 0; round < 24; round += 1) {
      let x = power(2n + random(n - 3n), d, n);
      if (x === 1n || x === n - 1n) continue;
      let witness = true;
      for (let i = 1; i < twos && witness; i += 1) {
        x = (x * x) % n;
        if (x === n - 1n) witness = false;
      }
      if (witness) return false;
    }
    return true;
  }

  // Each parameter set's key check (curves.ts keyCheckOf) from its numbers: the base point has prime
  // order q, and cofactor·q is the only multiple of q within Hasse's bound |p + 1 − #E| ≤ 2√p (q is
  // wider than the interval), so #E = cofactor·q. With cofactor 1 the group has prime order and every
  // point but O lies in it: lying on the curve is enough. With 4 it has points of order 2 and 4.
  for (const curve of [...new Set(CURVES.values())]) {
    it(`${curve.name}: the key check its cofactor ${curve.cofactor} calls for (${keyCheckOf(curve)}) is the one the curve's order needs`, () => {
      const arithmetic = new CurveArithmetic(curve);
      expect(probablyPrime(curve.q)).toBe(true);
      expect(arithmetic.nafMultiple(curve.q, { x: curve.x, y: curve.y }).z).toBe(0n);
      const bound = 2n * isqrt(curve.p) + 2n;
      expect(curve.q > 2n * bound).toBe(true);
      const order = curve.cofactor * curve.q;
      expect(order > curve.p + 1n - bound && order < curve.p + 1n + bound).toBe(true);
      const points = Array.from({ length: 12 }, () => randomPoint(curve));
      for (const point of points) expect(arithmetic.nafMultiple(order, point).z).toBe(0n);
      const outside = points.filter((point) => arithmetic.nafMultiple(curve.q, point).z !== 0n);
      if (keyCheckOf(curve) === 'on-curve') {
        expect(curve.cofactor).toBe(1n);
        expect(outside).toEqual([]);
      } else {
        // Three of four random points lie outside the order-q group: a key among them is refused.
        expect(outside.length).toBeGreaterThan(0);
        const key = generateGostKeyPair(curve);
        const digest = randomBytes(curve.bits / 8);
        const signature = gostSign(key, digest);
        expect(wasmGostVerify(curve, keyBytes(curve, outside[0]!), digest, signature)).toBe(false);
        expect(gostVerify(curve, outside[0]!, digest, signature)).toBe(false);
      }
    });
  }

  it('refuses a document whose signer certificate carries a key of order 2, with any signature value (SIGNATURE_VERIFICATION_ERROR)', () => {
    const curve = CURVES.get('1.2.643.7.1.2.1.1.1')!;
    const document = Buffer.from('<ClinicalDocument xmlns="urn:hl7-org:v3"><title>Чужой документ</title></ClinicalDocument>');
    // The gost engine's signature with a tc26-256-A key; then the key in its certificate swapped for
    // a point of order 2 and the signature value for one forged over the same signed attributes.
    const signature = pki.sign(document, pki.issue({ algorithm: 'gost2012_256', paramset: 'TCA', commonName: 'small subgroup' }));
    const signedData = parseSignedData(signature);
    const realKey = signedData.certificates[0]!.publicKey.key.subarray(2);
    const signer = signedData.signers[0]!;
    expect(signature.subarray(-64)).toEqual(Buffer.from(signer.signature));
    const forged = Buffer.from(signature);
    forged.set(keyBytes(curve, orderTwoPoint(curve)), forged.indexOf(Buffer.from(realKey)));
    forged.set(forge(curve, streebog(256, signer.signedAttributes!.der)), forged.length - 64);
    const check = new DocumentSignatureCheck([{ name: 'signature', bytes: forged }], { now: Date.now() });
    check.update(document);
    expect(check.finish()).toEqual([
      { code: 'SIGNATURE_VERIFICATION_ERROR', message: "signature: the signature value does not verify with the signer's certificate" },
    ]);
    const genuine = new DocumentSignatureCheck([{ name: 'signature', bytes: signature }], { now: Date.now() });
    genuine.update(document);
    expect(genuine.finish()).toEqual([]);
  });
});

describe('the CMS parser under hostile input', () => {
  it('never throws: every mutation of a real signature, and any bytes, end in findings with classifier codes', () => {
    const document = Buffer.from('<a>fuzz</a>');
    const signature = pki.sign(document, pki.issue({ algorithm: 'gost2012_256', commonName: 'fuzz' }));
    const mutation = fc.oneof(
      fc.record({ kind: fc.constant('flip' as const), at: fc.nat(signature.length - 1), mask: fc.integer({ min: 1, max: 255 }) }),
      fc.record({ kind: fc.constant('cut' as const), at: fc.nat(signature.length - 1) }),
      fc.record({ kind: fc.constant('insert' as const), at: fc.nat(signature.length - 1), bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }) }),
    );
    type Mutation = { kind: 'flip'; at: number; mask: number } | { kind: 'cut'; at: number } | { kind: 'insert'; at: number; bytes: Uint8Array };
    const mutate = (steps: Mutation[]) => {
      let bytes = Buffer.from(signature);
      for (const step of steps) {
        const at = Math.min(step.at, Math.max(bytes.length - 1, 0));
        if (step.kind === 'flip' && bytes.length > 0) bytes[at]! ^= step.mask;
        if (step.kind === 'cut') bytes = bytes.subarray(0, at);
        if (step.kind === 'insert') bytes = Buffer.concat([bytes.subarray(0, at), Buffer.from(step.bytes), bytes.subarray(at)]);
      }
      return bytes;
    };
    const input = fc.oneof(
      fc.array(mutation, { minLength: 1, maxLength: 4 }).map(mutate),
      fc.uint8Array({ maxLength: 2048 }).map((bytes) => Buffer.from(bytes)),
    );
    fc.assert(
      fc.property(input, (bytes) => {
        const check = new DocumentSignatureCheck([{ name: 'signature', bytes }], { now: Date.now() });
        check.update(document);
        for (const finding of check.finish()) {
          expect(Object.keys(ERROR_CODES)).toContain(finding.code);
          expect(finding.message.startsWith('signature')).toBe(true);
        }
      }),
      { numRuns: 2000, seed: 20261121 },
    );
  });
});
