/**
 * The GOST check of one document measured in-process (no process start, no worker thread), ours
 * against the OpenSSL gost engine doing the same work:
 * - ours: DocumentSignatureCheck (what the document-check worker runs) fed the document in 48 KiB
 *   slices, then finish(): parse the CMS, Streebog over the document, compare the messageDigest,
 *   Streebog over the signed attributes, GOST R 34.10-2012 verification in WebAssembly;
 * - the TypeScript reference (crypto/reference/) doing the same steps;
 * - the engine: .tools/gost-engine-bench (scripts/bench/gost-engine-bench.c), a loop of d2i_CMS_bio
 *   and CMS_verify over the same signature and document in memory, timed inside that process.
 * The engine keeps nothing between its runs (it decodes the certificate's key and builds its
 * curve group every time), so its yardstick is ours with a new key each document; ours with the
 * signer's key seen before (a clinic signs many documents with one certificate: the key's table is
 * kept) is shown beside it. Streebog of the document alone, ours and the engine's, is the profile's
 * first line.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { FILE_SLICE_BYTES } from '../../../src/emdr/pipeline/lifecycle/request-files.js';
import { gostPublicKey } from '../../../src/emdr/signatures/crypto/algorithms.js';
import { WasmStreebog } from '../../../src/emdr/signatures/crypto/gost-wasm.js';
import { gostVerify, littleEndianInteger } from '../../../src/emdr/signatures/crypto/reference/gost3410.js';
import { Streebog, streebog } from '../../../src/emdr/signatures/crypto/reference/streebog.js';
import { parseSignedData } from '../../../src/emdr/signatures/cms/cms.js';
import { DocumentSignatureCheck } from '../../../src/emdr/signatures/verify.js';
import { TestPki } from '../../../test/support/signing.js';
import { xmlOfSize } from './documents.js';
import { median } from './scenario.js';

export const GOST_ENGINE_BENCH = path.resolve(import.meta.dirname, '../../../.tools/gost-engine-bench');

export interface GostCheckFigures {
  bits: 256 | 512;
  label: string;
  /** Microseconds per check (or per hash), medians over every run. */
  oursNewKey: number;
  oursSeenKey: number;
  reference: number;
  engine: number;
  oursStreebog: number;
  engineStreebog: number;
  runs: { ours: number; reference: number; engine: number };
}

interface Size {
  label: string;
  bytes: number;
  /** Runs per round of ours and the engine; new keys per round; runs of the reference in all. */
  runs: number;
  newKeys: number;
  /** New keys checked before the rounds, not counted: the JIT's warm-up of the new-key path (a certificate not read before, a key's first check). */
  warmUpKeys: number;
  referenceRuns: number;
}

function sizes(smoke: boolean): Size[] {
  return smoke
    ? [
        { label: '10 KiB', bytes: 10 * 1024, runs: 5, newKeys: 2, warmUpKeys: 1, referenceRuns: 2 },
        { label: '5 MiB', bytes: 5 * 1024 * 1024, runs: 1, newKeys: 1, warmUpKeys: 1, referenceRuns: 1 },
      ]
    : [
        { label: '10 KiB', bytes: 10 * 1024, runs: 100, newKeys: 15, warmUpKeys: 30, referenceRuns: 15 },
        { label: '5 MiB', bytes: 5 * 1024 * 1024, runs: 5, newKeys: 3, warmUpKeys: 1, referenceRuns: 2 },
      ];
}

const microseconds = (started: number) => (performance.now() - started) * 1000;

function* slices(document: Buffer): Generator<Buffer> {
  for (let offset = 0; offset < document.length; offset += FILE_SLICE_BYTES) yield document.subarray(offset, offset + FILE_SLICE_BYTES);
}

/** Ours: the document check as the worker runs it; throws unless the signature verifies. */
function oursCheck(document: Buffer, signature: Buffer): number {
  const started = performance.now();
  const check = new DocumentSignatureCheck([{ name: 'signature', bytes: signature }], { now: Date.now() });
  for (const slice of slices(document)) check.update(slice);
  const findings = check.finish();
  const elapsed = microseconds(started);
  if (findings.length > 0) throw new Error(`our GOST check refused a valid signature: ${JSON.stringify(findings)}`);
  return elapsed;
}

/** The TypeScript reference doing the same steps (the certificate's validity dates aside). */
function referenceCheck(document: Buffer, signature: Buffer, bits: 256 | 512): number {
  const started = performance.now();
  const { signers, certificates } = parseSignedData(signature);
  const signer = signers[0]!;
  const hash = new Streebog(bits);
  for (const slice of slices(document)) hash.update(slice);
  if (!hash.digest().equals(signer.signedAttributes!.messageDigest!)) throw new Error('the reference: messageDigest differs');
  const { curve, key } = gostPublicKey(certificates[0]!.publicKey, bits);
  const point = { x: littleEndianInteger(key.subarray(0, bits / 8)), y: littleEndianInteger(key.subarray(bits / 8)) };
  const verified = gostVerify(curve, point, streebog(bits, signer.signedAttributes!.der), signer.signature);
  const elapsed = microseconds(started);
  if (!verified) throw new Error('the reference refused a valid signature');
  return elapsed;
}

/** The engine's times of `runs` runs (after two not counted), from its own process. */
function engineRuns(pki: TestPki, args: string[], runs: number): number[] {
  const result = spawnSync(GOST_ENGINE_BENCH, [...args, String(runs + 2)], {
    encoding: 'utf8',
    env: { ...process.env, OPENSSL_CONF: path.join(pki.dir, 'engine.cnf') },
  });
  if (result.status !== 0) throw new Error(`${GOST_ENGINE_BENCH} ${args.join(' ')}: exit ${result.status}: ${result.stderr}${result.error?.message ?? ''}`);
  return result.stdout.trim().split('\n').slice(2).map(Number);
}

export function measureGostCheck(options: { smoke: boolean; rounds: number; log(message: string): void }): GostCheckFigures[] {
  if (!fs.existsSync(GOST_ENGINE_BENCH)) throw new Error(`${GOST_ENGINE_BENCH} is missing: run make gost-engine-bench`);
  const pki = new TestPki({ gost: true });
  try {
    const figures: GostCheckFigures[] = [];
    for (const bits of [256, 512] as const) {
      const algorithm = bits === 256 ? 'gost2012_256' : 'gost2012_512';
      for (const size of sizes(options.smoke)) {
        options.log(`GOST-${bits} ${size.label}: signing with ${options.rounds * size.newKeys + size.warmUpKeys + 1} keys (the engine, paramset A)`);
        const document = xmlOfSize(size.bytes);
        const documentPath = path.join(pki.dir, `gost-${size.bytes}.xml`);
        fs.writeFileSync(documentPath, document);
        const signature = pki.sign(document, pki.issue({ algorithm, commonName: `bench ${bits} seen` }));
        const signaturePath = `${documentPath}.${bits}.sig`;
        fs.writeFileSync(signaturePath, signature);
        const fresh = Array.from({ length: options.rounds * size.newKeys }, (_, index) =>
          pki.sign(document, pki.issue({ algorithm, commonName: `bench ${bits} new ${index}` })),
        );
        const times = {
          seen: [] as number[],
          fresh: [] as number[],
          reference: [] as number[],
          engine: [] as number[],
          oursHash: [] as number[],
          engineHash: [] as number[],
        };
        const warmUp = Array.from({ length: size.warmUpKeys }, (_, index) =>
          pki.sign(document, pki.issue({ algorithm, commonName: `bench ${bits} warm-up ${index}` })),
        );
        // Warm-up: the module and the JIT, the curve's base table, this key's table (from its second check); then the JIT of the
        // new-key path (the engine's, compiled C, needs none): in 150 new-key checks in a row, the first thirty or so took
        // 0.6-1.8 ms, the rest 0.45-0.6 ms.
        for (let run = 0; run < 3; run += 1) oursCheck(document, signature);
        for (const other of warmUp) oursCheck(document, other);
        for (let round = 0; round < options.rounds; round += 1) {
          options.log(`GOST-${bits} ${size.label}: round ${round + 1} of ${options.rounds}`);
          const ours = () => {
            for (let run = 0; run < size.runs; run += 1) times.seen.push(oursCheck(document, signature));
            for (const other of fresh.slice(round * size.newKeys, (round + 1) * size.newKeys)) times.fresh.push(oursCheck(document, other));
            for (let run = 0; run < Math.min(size.runs, 5); run += 1) {
              const started = performance.now();
              const hash = new WasmStreebog(bits);
              for (const slice of slices(document)) hash.update(slice);
              hash.digest();
              times.oursHash.push(microseconds(started));
            }
          };
          const engine = () => {
            times.engine.push(...engineRuns(pki, ['cms', signaturePath, documentPath], size.runs));
            times.engineHash.push(...engineRuns(pki, [`digest${bits}`, documentPath], Math.min(size.runs, 5)));
          };
          // Alternating who goes first, so that a change of the machine's load falls on both.
          for (const step of round % 2 === 0 ? [ours, engine] : [engine, ours]) step();
        }
        for (const other of fresh.slice(0, size.referenceRuns)) times.reference.push(referenceCheck(document, other, bits));
        figures.push({
          bits,
          label: size.label,
          oursNewKey: median(times.fresh),
          oursSeenKey: median(times.seen),
          reference: median(times.reference),
          engine: median(times.engine),
          oursStreebog: median(times.oursHash),
          engineStreebog: median(times.engineHash),
          runs: { ours: times.seen.length + times.fresh.length, reference: times.reference.length, engine: times.engine.length },
        });
      }
    }
    return figures;
  } finally {
    pki.remove();
  }
}
