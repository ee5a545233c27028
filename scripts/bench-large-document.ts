/**
 * Peak memory of `ehr-gateway serve` for one 20 MiB document through the whole pipeline:
 * RegisterDocument → both callbacks → DemandContent → both callbacks (the file callback carries it).
 * The document carries a GOST R 34.10-2012 256-bit signature (made with the gost engine: make gost-engine),
 * so the acceptance stage hashes all of it with Streebog-256.
 * Reads the child's VmHWM (peak RSS) from /proc, so it measures the service, not this script.
 *   tsx scripts/bench-large-document.ts        (DATABASE_URL, or an embedded PostgreSQL in a temp dir)
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { EmbeddedPostgres, ensureDatabase, freePort } from '../src/db/embedded-postgres.js';
import { createLogger } from '../src/logging/logger.js';
import { exitOf, spawnCli, waitForOk } from '../test/support/cli.js';
import { startCallbackReceiver } from '../test/support/callback-receiver.js';
import { addClinic, authHeaders, largeXml, post, registerBody } from '../test/support/emdr.js';
import { TestPki } from '../test/support/signing.js';

const DOCUMENT_BYTES = 20 * 1024 * 1024;

async function peakRssMiB(pid: number): Promise<number> {
  const status = await fs.readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ehr-gateway-bench-'));
const embedded = process.env.DATABASE_URL ? undefined : new EmbeddedPostgres(dataDir, createLogger('warn', process.stderr));
const serverUrl = process.env.DATABASE_URL ?? (await embedded!.start({ adopt: true }));
const name = `bench_${randomUUID().slice(0, 8)}`;
const base = serverUrl.slice(0, serverUrl.lastIndexOf('/'));
await ensureDatabase(base, name);
const databaseUrl = `${base}/${name}`;

const receiver = await startCallbackReceiver();
const port = await freePort();
const dataKey = randomBytes(32).toString('hex');
const service = spawnCli(['serve'], {
  DATABASE_URL: databaseUrl,
  // `serve` with a database requires the data key.
  DATA_KEY: dataKey,
  PORT: String(port),
  INTERNAL_PORT: String(await freePort()),
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
});
try {
  const serviceUrl = `http://127.0.0.1:${port}`;
  await waitForOk(`${serviceUrl}/readyz`, 60_000);
  const clinic = await addClinic({ databaseUrl, dataKey: Buffer.from(dataKey, 'hex') }, receiver.url);
  receiver.signingSecret = clinic.signingSecret;
  const baseline = await peakRssMiB(service.pid!);
  const xml = largeXml(DOCUMENT_BYTES);
  const pki = new TestPki({ gost: true });
  const signature = pki.sign(xml, pki.issue({ algorithm: 'gost2012_256', commonName: 'bench' }));
  pki.remove();
  const started = Date.now();
  const { body: ack } = await post(serviceUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody({ document: xml.toString('base64'), signature: signature.toString('base64') }));
  // Intake (express.json's body text, the parsed object, the INSERT) is the largest single step.
  const afterIntake = await peakRssMiB(service.pid!);
  const registered = await receiver.waitFor((received) => received.some((item) => item.name === 'SendRegisterDocumentResultResponse' && item.body.queueMessageId === ack.queueMessageId), 120_000);
  const emdrId = registered.find((item) => item.name === 'SendRegisterDocumentResultResponse')!.body.emdrId;
  const acceptance = registered.find((item) => item.name === 'SendRegisterDocumentResponse' && item.body.queueMessageId === ack.queueMessageId)!;
  if (acceptance.body.status !== 'success') throw new Error(`not accepted: ${JSON.stringify(acceptance.body.errors)}`);
  const registeredMs = Date.now() - started;
  const afterRegistration = await peakRssMiB(service.pid!);
  const { body: demand } = await post(serviceUrl, '/api/DemandContent', authHeaders(clinic), { emdrId });
  const delivered = await receiver.waitFor((received) => received.some((item) => item.name === 'SendDocumentFileResultResponse' && item.body.queueMessageId === demand.queueMessageId), 120_000);
  const file = delivered.find((item) => item.name === 'SendDocumentFileResultResponse')!;
  const identical = Buffer.from((file.body.document as { content: string }).content, 'base64').equals(xml);
  console.log(
    JSON.stringify({
      documentMiB: +(xml.length / 1024 / 1024).toFixed(1),
      peakRssMiB: +(await peakRssMiB(service.pid!)).toFixed(1),
      peakRssBeforeDocumentMiB: +baseline.toFixed(1),
      peakRssAfterIntakeMiB: +afterIntake.toFixed(1),
      peakRssAfterRegistrationMiB: +afterRegistration.toFixed(1),
      registerToResultCallbackMs: registeredMs,
      totalMs: Date.now() - started,
      fileByteIdentical: identical,
    }),
  );
} finally {
  service.kill('SIGTERM');
  await exitOf(service, 60_000);
  await receiver.close();
  await embedded?.stop();
  await fs.rm(dataDir, { recursive: true, force: true });
}
