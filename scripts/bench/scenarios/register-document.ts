import type { Answer } from '../lib/http-load.js';
import { registerDocumentRequests } from '../lib/documents.js';
import { CONNECTIONS, closedRound, failedRequestNotes, maxThroughputRows } from '../lib/rounds.js';
import { alternate, type BenchContext, type Measured } from '../lib/scenario.js';
import { addClinic, newDataKey, startBaseline, startService } from '../lib/service.js';

/** RegisterDocument's acknowledgement of a 10 KiB document (interface B's intake alone: `serve --only emdr`) against the baseline. */

export const ACK_DOCUMENT_BYTES = 10 * 1024;

export function expectAcknowledgement(answer: Answer): void {
  if (answer.status !== 200 || answer.body.indexOf('"queueMessageId"') < 0)
    throw new Error(`not an acknowledgement: HTTP ${answer.status} ${answer.body.toString('utf8', 0, 300)}`);
}

export async function registerDocument(context: BenchContext): Promise<Measured[]> {
  const databaseUrl = await context.database.freshDatabase('bench_b');
  const dataKey = newDataKey();
  const service = await startService(context, databaseUrl, dataKey, { only: 'emdr' });
  const baseline = await startBaseline(context, databaseUrl, dataKey);
  try {
    // Nobody receives these callbacks: only the acknowledgement is measured, no worker runs.
    const clinic = await addClinic(context, service, 'http://127.0.0.1:9');
    const next = registerDocumentRequests(clinic, ACK_DOCUMENT_BYTES);
    context.log('RegisterDocument: acknowledgements of 10 KiB documents');
    const run = (port: number, pid: number) => closedRound(context, { port, pid }, { onAnswer: expectAcknowledgement, next });
    const results = await alternate(context.rounds, [
      { name: 'service', run: run(service.publicPort, service.pid) },
      { name: 'baseline', run: run(baseline.port, baseline.pid) },
    ]);
    const { throughput, cpu, p99 } = maxThroughputRows(results.service, results.baseline, `acknowledgements, 10 KiB document, ${CONNECTIONS} connections`, 0.7);
    cpu.target = { text: '≤ 1.25× baseline', met: cpu.service <= 1.25 * cpu.baseline! };
    return [
      {
        name: 'register_document',
        title: 'RegisterDocument acknowledgement (10 KiB)',
        rows: [throughput, cpu, p99],
        chart: {
          throughput: { label: 'RegisterDocument ack', unit: 'requests/s', service: throughput.service, baseline: throughput.baseline },
          latency: { label: 'RegisterDocument p99 @ max', unit: 'ms', service: p99.service, baseline: p99.baseline },
        },
        notes: failedRequestNotes(results),
      },
    ];
  } finally {
    await service.stop();
    await baseline.stop();
  }
}
