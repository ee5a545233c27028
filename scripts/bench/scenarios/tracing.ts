import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LoadResult } from '../lib/http-load.js';
import { seedUsers } from '../lib/database.js';
import { registerDocumentRequests } from '../lib/documents.js';
import { CONNECTIONS, closedRound, failedRequestNotes, maxThroughputRows } from '../lib/rounds.js';
import { expectResult, getPatientRequest } from '../lib/rpc.js';
import { alternate, type BenchContext, type Measured, type Row } from '../lib/scenario.js';
import { addClinic, newDataKey, rpcVersion, startService } from '../lib/service.js';
import { ACK_DOCUMENT_BYTES, expectAcknowledgement } from './register-document.js';

/**
 * What tracing costs (issue 23): the same `serve` role twice on one database, one with
 * OTEL_EXPORTER_OTLP_ENDPOINT set (spans exported to a collector stand-in in this process) and one
 * without, in alternating rounds: RegisterDocument's acknowledgement (`--only emdr`) and
 * patient.get_patient (`--only ehr`). The off side is the service as it runs by default; what the
 * off path costs against no tracing code at all is the register-document and interface-a scenarios
 * run against a commit before tracing (`--root`).
 */

const COLUMNS: [string, string] = ['tracing on', 'tracing off'];

/** A collector stand-in: takes OTLP/HTTP exports and counts their spans (by their spanId members), answering as a collector does. */
async function startCollector(): Promise<{ url: string; spans(): number; close(): Promise<void> }> {
  let spans = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      for (let at = body.indexOf('"spanId"'); at >= 0; at = body.indexOf('"spanId"', at + 1)) spans += 1;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans: () => spans,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function rows(results: Record<string, LoadResult[]>): Row[] {
  const { throughput, cpu, p99 } = maxThroughputRows(results[COLUMNS[0]], results[COLUMNS[1]], `throughput, ${CONNECTIONS} connections`);
  return [throughput, cpu, p99];
}

export async function tracing(context: BenchContext): Promise<Measured[]> {
  const collector = await startCollector();
  const databaseUrl = await context.database.freshDatabase('bench_t');
  const dataKey = newDataKey();
  const traced = { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url };
  const outcomes: Measured[] = [];
  try {
    // RegisterDocument: its request span, the traceparent stored with the row.
    {
      const on = await startService(context, databaseUrl, dataKey, { only: 'emdr', env: traced });
      const off = await startService(context, databaseUrl, dataKey, { only: 'emdr' });
      try {
        const clinic = await addClinic(context, off, 'http://127.0.0.1:9');
        const next = registerDocumentRequests(clinic, ACK_DOCUMENT_BYTES);
        context.log('tracing: RegisterDocument acknowledgements, tracing on and off');
        const run = (service: typeof on) => closedRound(context, { port: service.publicPort, pid: service.pid }, { onAnswer: expectAcknowledgement, next });
        const spansBefore = collector.spans();
        const results = await alternate(context.rounds, [
          { name: COLUMNS[0], run: run(on) },
          { name: COLUMNS[1], run: run(off) },
        ]);
        // The batch processor exports every 5 s: what the last round made arrives at the stop.
        await on.stop();
        const requests = results[COLUMNS[0]]!.reduce((sum, result) => sum + result.requests, 0);
        outcomes.push({
          name: 'tracing_register_document',
          title: 'Tracing on vs off: RegisterDocument acknowledgement (10 KiB)',
          columns: COLUMNS,
          rows: rows(results),
          chart: {},
          notes: [
            ...failedRequestNotes(results),
            `spans at the collector stand-in: ${collector.spans() - spansBefore} for ${requests} measured requests (warm-ups too)`,
          ],
        });
      } finally {
        await on.stop();
        await off.stop();
      }
    }
    // get_patient: its request span and the call's span.
    {
      const on = await startService(context, databaseUrl, dataKey, { only: 'ehr', env: traced });
      const off = await startService(context, databaseUrl, dataKey, { only: 'ehr' });
      try {
        const seeded = await seedUsers(databaseUrl, Buffer.from(dataKey, 'hex'), { users: 1000, sessions: 1000 });
        const path = `/${rpcVersion(context.root)}/`;
        context.log('tracing: get_patient, tracing on and off');
        const run = (service: typeof on) =>
          closedRound(context, { port: service.publicPort, pid: service.pid }, { onAnswer: expectResult, next: () => getPatientRequest(seeded, path) });
        const results = await alternate(context.rounds, [
          { name: COLUMNS[0], run: run(on) },
          { name: COLUMNS[1], run: run(off) },
        ]);
        outcomes.push({
          name: 'tracing_get_patient',
          title: 'Tracing on vs off: patient.get_patient',
          columns: COLUMNS,
          rows: rows(results),
          chart: {},
          notes: failedRequestNotes(results),
        });
      } finally {
        await on.stop();
        await off.stop();
      }
    }
    return outcomes;
  } finally {
    await collector.close();
  }
}
