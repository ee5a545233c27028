/**
 * What the signature check costs per document (`node --import tsx scripts/bench/signature-cost.ts`):
 * median and p99 of SignatureVerifier.check (worker thread, document fed in 48 KiB slices, as the
 * acceptance stage does, minus the database reads) for 10 KiB and 5 MiB documents signed with
 * GOST R 34.10-2012 256 and 512 and with RSA; beside it, the same check by the openssl CLI with
 * the gost engine as a child process (the option not taken). Needs `make gost-engine`.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { FILE_SLICE_BYTES } from '../../src/emdr/request-files.js';
import { SignatureVerifier } from '../../src/emdr/signatures/verifier.js';
import { largeXml } from '../../test/support/emdr.js';
import { TestPki, type Issued } from '../../test/support/signing.js';

const SIZES = [
  { label: '10 KiB', bytes: 10 * 1024, runs: 300 },
  { label: '5 MiB', bytes: 5 * 1024 * 1024, runs: 30 },
];

function* slices(document: Buffer): Generator<Buffer> {
  for (let offset = 0; offset < document.length; offset += FILE_SLICE_BYTES) yield document.subarray(offset, offset + FILE_SLICE_BYTES);
}

function percentile(sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)]!;
}

function summary(times: number[]): string {
  const sorted = [...times].sort((a, b) => a - b);
  return `median ${percentile(sorted, 0.5).toFixed(2)} ms, p99 ${percentile(sorted, 0.99).toFixed(2)} ms (${times.length} runs)`;
}

const pki = new TestPki({ gost: true });
const verifier = new SignatureVerifier({ workers: 1, timeoutMs: 60_000 });
try {
  const signers: Array<[string, Issued]> = [
    ['GOST 256 (Streebog-256)', pki.issue({ algorithm: 'gost2012_256', commonName: 'bench 256' })],
    ['GOST 512 (Streebog-512)', pki.issue({ algorithm: 'gost2012_512', commonName: 'bench 512' })],
    ['RSA 2048 (SHA-256)', pki.issue({ algorithm: 'rsa', commonName: 'bench rsa' })],
  ];
  for (const size of SIZES) {
    const document = largeXml(size.bytes);
    const documentPath = path.join(pki.dir, `bench-${size.bytes}.xml`);
    fs.writeFileSync(documentPath, document);
    for (const [label, signer] of signers) {
      const signature = pki.sign(document, signer);
      const signaturePath = `${documentPath}.${signer.algorithm}.sig`;
      fs.writeFileSync(signaturePath, signature);
      const times: number[] = [];
      for (let run = 0; run < size.runs + 5; run += 1) {
        const started = performance.now();
        const outcome = await verifier.check([{ name: 'signature', bytes: signature }], () => slices(document));
        if (outcome.errors.length > 0) throw new Error(`${label}: ${JSON.stringify(outcome.errors)}`);
        if (run >= 5) times.push(performance.now() - started);
      }
      const cli: number[] = [];
      for (let run = 0; run < Math.min(size.runs, 30); run += 1) {
        const started = performance.now();
        const result = spawnSync('openssl', ['cms', '-verify', '-binary', '-inform', 'DER', '-in', signaturePath, '-content', documentPath, '-noverify', '-out', '/dev/null'], {
          env: { ...process.env, OPENSSL_CONF: path.join(pki.dir, 'engine.cnf') },
        });
        if (result.status !== 0) throw new Error(`openssl cms -verify: ${result.stderr}`);
        cli.push(performance.now() - started);
      }
      console.log(`${size.label}  ${label.padEnd(24)} worker pool: ${summary(times)} | openssl CLI child: ${summary(cli)}`);
    }
  }
} finally {
  await verifier.stop();
  pki.remove();
}
