import { measureGostCheck, type GostCheckFigures } from '../lib/gost-check.js';
import type { BenchContext, Measured, Row } from '../lib/scenario.js';

/**
 * The GOST check of one 10 KiB and one 5 MiB document, GOST-256 and GOST-512: ours (WebAssembly)
 * against the OpenSSL gost engine doing the same work in-process (scripts/bench/lib/gost-check.ts).
 * The target, within 2× of the engine, is judged on GOST-256 with a new key each document (the
 * engine keeps nothing between documents either); the rest is shown beside it. In-process, so it
 * measures this checkout's code, whatever --root names.
 */

const TARGET_RATIO = 2;

function rowsOf(figures: GostCheckFigures): Row[] {
  const large = figures.label !== '10 KiB';
  const unit = large ? 'ms' : 'µs';
  const scale = (value: number) => +(large ? value / 1000 : value).toFixed(large ? 1 : 0);
  const name = `GOST-${figures.bits} ${figures.label}`;
  const reference = figures.bits === 256 ? `GOST-256 ${figures.label}, new key` : 'GOST-512: no target';
  const newKey: Row = {
    metric: `${name}: check, a new key each document (ours: WebAssembly)`,
    unit,
    service: scale(figures.oursNewKey),
    baseline: scale(figures.engine),
  };
  if (figures.bits === 256) newKey.target = { text: `≤ ${TARGET_RATIO}× the engine`, met: figures.oursNewKey <= TARGET_RATIO * figures.engine };
  else newKey.reference = reference;
  return [
    newKey,
    {
      metric: `${name}: check, the signer's key seen before (its table kept)`,
      unit,
      service: scale(figures.oursSeenKey),
      baseline: scale(figures.engine),
      reference,
    },
    {
      metric: `${name}: check by the TypeScript reference, a new key each document`,
      unit,
      service: scale(figures.reference),
      baseline: scale(figures.engine),
      reference,
    },
    { metric: `${name}: Streebog of the document alone`, unit, service: scale(figures.oursStreebog), baseline: scale(figures.engineStreebog), reference },
  ];
}

export async function gostCheck(context: BenchContext): Promise<Measured[]> {
  const figures = measureGostCheck({ smoke: context.smoke, rounds: context.rounds, log: context.log });
  const small = figures.find((entry) => entry.bits === 256 && entry.label === '10 KiB')!;
  const runs = figures
    .map(
      (entry) => `GOST-${entry.bits} ${entry.label}: ${entry.runs.ours} of ours, ${entry.runs.engine} of the engine, ${entry.runs.reference} of the reference`,
    )
    .join('; ');
  return [
    {
      name: 'gost_check',
      title: 'GOST check of one document, in-process: ours vs the OpenSSL gost engine',
      columns: ['ours', 'gost engine'],
      rows: figures.flatMap(rowsOf),
      chart: { latency: { label: 'GOST-256 check, 10 KiB, new key', unit: 'µs', service: Math.round(small.oursNewKey), baseline: Math.round(small.engine) } },
      notes: [
        "Both in-process, without process start: ours is DocumentSignatureCheck as the document-check worker runs it (the CMS parsed, Streebog over the document in 48 KiB slices, the messageDigest compared, Streebog over the signed attributes, GOST R 34.10-2012 in WebAssembly); the engine is scripts/bench/gost-engine-bench.c, a loop of d2i_CMS_bio + CMS_verify (certificate chain not checked, as ours without a trust store) with Debian's libcrypto and gost engine, timed inside its own process. Medians of every run, ours and the engine's in alternating batches.",
        'The engine decodes the key and builds its curve group anew for each document: its yardstick is ours with a new key each document. A clinic signs its documents with one certificate, so the service usually checks a key it has seen: from its second document the key has a table (gost-wasm.ts).',
        `Runs: ${runs}. Keys and signatures made by the engine (parameter set A).`,
      ],
    },
  ];
}
