/**
 * What the signature check costs per document (`node --import tsx scripts/bench/signature-cost.ts`):
 * the CMS and X.509 parsing of a signature alone ("parse alone"), then median and p99 of DocumentCheckPool.check (one worker thread, document fed in 48 KiB slices, as
 * the acceptance stage does, minus the database reads) for 10 KiB and 5 MiB documents signed with
 * GOST R 34.10-2012 256 and 512 and with RSA, with the signature and without it (the XML check
 * alone): the difference is what verification adds. Each signer signs every run, so from its second
 * document a worker verifies with that key's table (gost-wasm.ts); the "new key each document"
 * line is the cost for a key the worker has not seen before. Beside it, the same verification by the openssl
 * CLI with the gost engine as a child process (the option not taken). Then the GOST check alone,
 * in-process, ours (WebAssembly, and the TypeScript reference) against the engine's own time for the
 * same work (scripts/bench/lib/gost-check.ts, also `make bench`'s gost-check scenario). Needs `make
 * gost-engine-bench`.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { DocumentCheckPool } from '../../src/emdr/pipeline/document-check/document-check.js';
import { FILE_SLICE_BYTES } from '../../src/emdr/pipeline/lifecycle/request-files.js';
import { largeXml } from '../../test/support/emdr.js';
import { createTestSigner } from '../../src/emdr/signatures/test-signer.js';
import { parseSignedData } from '../../src/emdr/signatures/cms/cms.js';
import { TestPki, type Issued } from '../../test/support/signing.js';
import { commandLine } from '../lib/command-line.js';
import { measureGostCheck } from './lib/gost-check.js';

const HELP = `usage: tsx scripts/bench/signature-cost.ts

What the signature check costs per document: CMS and X.509 parsing alone, then median and p99 of
the document check (one worker thread) for 10 KiB and 5 MiB documents signed with GOST R 34.10-2012
256 and 512 and with RSA, with and without the signature; the openssl CLI with the gost engine
beside it; the GOST check alone, ours against the engine's. Needs make gost-engine-bench.

options:
  -h, --help   this text

example: tsx scripts/bench/signature-cost.ts`;

commandLine('signature-cost', HELP, { options: {} });

/** Parses of one signature timed for the "parse alone" lines. */
const PARSE_RUNS = 2000;

const SIZES = [
  { label: '10 KiB', bytes: 10 * 1024, runs: 300 },
  { label: '5 MiB', bytes: 5 * 1024 * 1024, runs: 30 },
];

// Fresh slices each time: the pool moves them to its worker.
async function* slices(document: Buffer): AsyncGenerator<Buffer> {
  for (let offset = 0; offset < document.length; offset += FILE_SLICE_BYTES) yield Buffer.from(document.subarray(offset, offset + FILE_SLICE_BYTES));
}

function percentile(sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)]!;
}

function summary(times: number[]): string {
  const sorted = [...times].sort((a, b) => a - b);
  return `median ${percentile(sorted, 0.5).toFixed(2)} ms, p99 ${percentile(sorted, 0.99).toFixed(2)} ms (${times.length} runs)`;
}

const pki = new TestPki({ gost: true });
const pool = new DocumentCheckPool(1);
pool.start();
try {
  const signers: Array<[string, Issued]> = [
    ['GOST 256 (Streebog-256)', pki.issue({ algorithm: 'gost2012_256', commonName: 'bench 256' })],
    ['GOST 512 (Streebog-512)', pki.issue({ algorithm: 'gost2012_512', commonName: 'bench 512' })],
    ['RSA 2048 (SHA-256)', pki.issue({ algorithm: 'rsa', commonName: 'bench rsa' })],
  ];
  // The CMS and X.509 parsing alone, in this thread: what the parser costs of a document's check.
  for (const [label, signer] of signers) {
    const signature = pki.sign(Buffer.from('<a/>'), signer);
    const times: number[] = [];
    for (let run = 0; run < PARSE_RUNS + 100; run += 1) {
      const started = performance.now();
      parseSignedData(signature);
      if (run >= 100) times.push(performance.now() - started);
    }
    const sorted = times.sort((a, b) => a - b);
    console.log(
      `parse alone  ${label.padEnd(24)} ${signature.length} bytes: median ${(percentile(sorted, 0.5) * 1000).toFixed(1)} µs, p99 ${(percentile(sorted, 0.99) * 1000).toFixed(1)} µs (${times.length} runs)`,
    );
  }
  for (const size of SIZES) {
    const document = largeXml(size.bytes);
    const documentPath = path.join(pki.dir, `bench-${size.bytes}.xml`);
    fs.writeFileSync(documentPath, document);
    for (const [label, signer] of signers) {
      const signature = pki.sign(document, signer);
      const signaturePath = `${documentPath}.${signer.algorithm}.sig`;
      fs.writeFileSync(signaturePath, signature);
      const times: number[] = [];
      const xmlOnly: number[] = [];
      for (let run = 0; run < size.runs + 5; run += 1) {
        let started = performance.now();
        const outcome = await pool.check(slices(document), { timeoutMs: 60_000, signatures: [{ name: 'signature', bytes: signature }] });
        if (outcome.signatureFindings.length > 0 || outcome.xmlFailure) throw new Error(`${label}: ${JSON.stringify(outcome)}`);
        if (run >= 5) times.push(performance.now() - started);
        started = performance.now();
        await pool.check(slices(document), { timeoutMs: 60_000 });
        if (run >= 5) xmlOnly.push(performance.now() - started);
      }
      const cli: number[] = [];
      for (let run = 0; run < Math.min(size.runs, 30); run += 1) {
        const started = performance.now();
        const result = spawnSync(
          'openssl',
          ['cms', '-verify', '-binary', '-inform', 'DER', '-in', signaturePath, '-content', documentPath, '-noverify', '-out', '/dev/null'],
          {
            env: { ...process.env, OPENSSL_CONF: path.join(pki.dir, 'engine.cnf') },
          },
        );
        if (result.status !== 0) throw new Error(`openssl cms -verify: ${result.stderr}`);
        cli.push(performance.now() - started);
      }
      console.log(
        `${size.label}  ${label.padEnd(24)} XML + signature: ${summary(times)} | XML alone: ${summary(xmlOnly)} | openssl CLI child: ${summary(cli)}`,
      );
    }
    const newKey: number[] = [];
    for (let run = 0; run < size.runs; run += 1) {
      const signature = createTestSigner({ commonName: `bench new key ${run}` }).sign(document);
      const started = performance.now();
      const outcome = await pool.check(slices(document), { timeoutMs: 60_000, signatures: [{ name: 'signature', bytes: signature }] });
      if (outcome.signatureFindings.length > 0 || outcome.xmlFailure) throw new Error(`new key: ${JSON.stringify(outcome)}`);
      newKey.push(performance.now() - started);
    }
    console.log(`${size.label}  ${'GOST 256, new key each document'.padEnd(24)} XML + signature: ${summary(newKey)}`);
  }
} finally {
  await pool.close();
  pki.remove();
}

console.log(
  `\nThe GOST check in-process, ours vs the gost engine (medians; load average ${os
    .loadavg()
    .map((load) => load.toFixed(2))
    .join(' ')}):`,
);
const micro = (value: number) => `${Math.round(value).toLocaleString('en')} µs`;
for (const figures of measureGostCheck({ smoke: false, rounds: 3, log: () => {} })) {
  const ratio = (value: number) => `${(value / figures.engine).toFixed(2)}×`;
  console.log(
    `GOST-${figures.bits} ${figures.label.padEnd(6)} engine ${micro(figures.engine)} | ours, new key ${micro(figures.oursNewKey)} (${ratio(figures.oursNewKey)}) | ours, key seen before ${micro(figures.oursSeenKey)} (${ratio(figures.oursSeenKey)}) | TypeScript reference ${micro(figures.reference)} (${ratio(figures.reference)}) | Streebog alone: ours ${micro(figures.oursStreebog)}, engine ${micro(figures.engineStreebog)}`,
  );
}
