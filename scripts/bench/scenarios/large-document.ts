import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { withClient } from '../lib/database.js';
import { registerDocumentBody, signedDocument, xmlOfSize } from '../lib/documents.js';
import { rssMiB } from '../lib/processes.js';
import { round1, type BenchContext, type Measured, type Row } from '../lib/scenario.js';
import { addClinic, clinicHeaders, newDataKey, startReceiver, startService, type BenchClinic, type Receiver } from '../lib/service.js';

/**
 * Memory of `serve` (all roles, one process) for one large document through everything:
 * RegisterDocument → both callbacks → DemandContent → both callbacks, the file callback carrying
 * it. Before each document the process's peak RSS is reset (/proc/PID/clear_refs), so the growth
 * is the peak while the document went through minus the resident size just before it.
 */

async function waitForArrival(receiver: Receiver, name: string, queueMessageId: string, timeoutMs: number): Promise<void> {
  const ends = Date.now() + timeoutMs;
  while (Date.now() < ends) {
    if ((await receiver.arrivals()).some(([arrived, id]) => arrived === name && id === queueMessageId)) return;
    await sleep(100);
  }
  throw new Error(`large document: no ${name} for ${queueMessageId} within ${timeoutMs} ms (receiver: ${JSON.stringify(await receiver.stats())}, arrived: ${JSON.stringify(await receiver.arrivals())})`);
}

interface Run {
  intakeGrowthMiB: number;
  peakGrowthMiB: number;
  seconds: number;
  identical: boolean;
}

async function oneDocument(pid: number, publicUrl: string, databaseUrl: string, receiver: Receiver, clinic: BenchClinic, xml: Buffer): Promise<Run> {
  const body = registerDocumentBody(signedDocument(xml));
  const headers = clinicHeaders(clinic);
  await fs.writeFile(`/proc/${pid}/clear_refs`, '5');
  const before = await rssMiB(pid, 'VmRSS');
  const started = Date.now();
  const ack = (await (await fetch(`${publicUrl}/api/RegisterDocument`, { method: 'POST', headers, body })).json()) as { queueMessageId: string };
  const intakeGrowthMiB = (await rssMiB(pid, 'VmHWM')) - before;
  await waitForArrival(receiver, 'SendRegisterDocumentResultResponse', ack.queueMessageId, 120_000);
  const emdrId = await withClient(databaseUrl, async (client) => (await client.query('select emdr_id from emdr_requests where queue_message_id = $1', [ack.queueMessageId])).rows[0].emdr_id as string);
  const demand = (await (await fetch(`${publicUrl}/api/DemandContent`, { method: 'POST', headers, body: JSON.stringify({ emdrId }) })).json()) as { queueMessageId: string };
  await waitForArrival(receiver, 'SendDocumentFileResultResponse', demand.queueMessageId, 30_000);
  const peakGrowthMiB = (await rssMiB(pid, 'VmHWM')) - before;
  const file = (await receiver.files()).find(([id]) => id === demand.queueMessageId);
  return { intakeGrowthMiB, peakGrowthMiB, seconds: (Date.now() - started) / 1000, identical: file?.[1] === createHash('sha256').update(xml).digest('hex') };
}

export async function largeDocument(context: BenchContext): Promise<Measured[]> {
  const databaseUrl = await context.database.freshDatabase('bench_large');
  const dataKey = newDataKey();
  const receiver = await startReceiver(context);
  const service = await startService(context, databaseUrl, dataKey);
  try {
    const clinic = await addClinic(context, service, receiver.url);
    await receiver.configure(clinic.signingSecret);
    const xml = xmlOfSize(context.largeDocumentBytes);
    const documentMiB = xml.length / 1024 / 1024;
    const runs: Run[] = [];
    for (let round = 0; round < context.rounds; round += 1) {
      context.log(`large document: ${documentMiB.toFixed(1)} MiB, round ${round + 1}`);
      runs.push(await oneDocument(service.pid, `http://127.0.0.1:${service.publicPort}`, databaseUrl, receiver, clinic, xml));
    }
    const worst = Math.max(...runs.map((run) => run.peakGrowthMiB));
    const peak: Row = { metric: `peak RSS growth, ${documentMiB.toFixed(1)} MiB document (worst of ${runs.length})`, unit: 'MiB', service: round1(worst), rounds: { service: runs.map((run) => round1(run.peakGrowthMiB)) } };
    peak.target = { text: `≤ 3× the document (${round1(3 * documentMiB)} MiB)`, met: worst <= 3 * documentMiB };
    const rows: Row[] = [
      peak,
      { metric: 'peak growth ÷ document size', unit: '×', service: +(worst / documentMiB).toFixed(2) },
      { metric: 'peak RSS growth during intake alone (worst)', unit: 'MiB', service: round1(Math.max(...runs.map((run) => run.intakeGrowthMiB))), rounds: { service: runs.map((run) => round1(run.intakeGrowthMiB)) } },
      { metric: 'RegisterDocument → file callback delivered', unit: 's', service: round1(Math.max(...runs.map((run) => run.seconds))) },
    ];
    return [
      {
        name: 'large_document',
        title: `Large document (${documentMiB.toFixed(1)} MiB) through everything`,
        rows,
        chart: {},
        notes: [`file callback byte-identical to the document sent: ${runs.every((run) => run.identical) ? 'yes' : 'NO'}`],
      },
    ];
  } finally {
    await service.stop();
    await receiver.stop();
  }
}
