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
 * it. Each round runs a fresh `serve` that has taken one small document the same way first (its
 * code paths loaded, its pools started) and never a large one: a process that had held a large
 * document keeps some of the freed memory resident, so a later document there grew into memory
 * already counted in the baseline (a round once measured −0.2 MiB). The growth is the peak while
 * the document went through (VmHWM after /proc/PID/clear_refs reset it, or the highest VmRSS
 * sampled, whichever is higher) minus the resident size just before it.
 */

async function waitForArrival(receiver: Receiver, name: string, queueMessageId: string, timeoutMs: number): Promise<void> {
  const ends = Date.now() + timeoutMs;
  while (Date.now() < ends) {
    if ((await receiver.arrivals()).some(([arrived, id]) => arrived === name && id === queueMessageId)) return;
    await sleep(100);
  }
  throw new Error(
    `large document: no ${name} for ${queueMessageId} within ${timeoutMs} ms (receiver: ${JSON.stringify(await receiver.stats())}, arrived: ${JSON.stringify(await receiver.arrivals())})`,
  );
}

interface Run {
  intakeGrowthMiB: number;
  peakGrowthMiB: number;
  seconds: number;
  identical: boolean;
}

/** The highest VmRSS seen every few milliseconds until stopped (VmHWM alone can come out a little low: the kernel keeps it from approximate counters). */
function sampleRss(pid: number): { highest(): Promise<number> } {
  let highest = 0;
  let sampling = true;
  const done = (async () => {
    while (sampling) {
      highest = Math.max(highest, await rssMiB(pid, 'VmRSS'));
      await sleep(5);
    }
  })();
  return {
    async highest() {
      sampling = false;
      await done;
      return Math.max(highest, await rssMiB(pid, 'VmHWM'), await rssMiB(pid, 'VmRSS'));
    },
  };
}

/** RegisterDocument → result callback → DemandContent → file callback; whether the file came back byte-identical. */
async function throughEverything(
  publicUrl: string,
  databaseUrl: string,
  receiver: Receiver,
  clinic: BenchClinic,
  xml: Buffer,
  afterIntake: () => Promise<void> = async () => {},
): Promise<boolean> {
  const headers = clinicHeaders(clinic);
  const ack = (await (
    await fetch(`${publicUrl}/api/RegisterDocument`, { method: 'POST', headers, body: registerDocumentBody(signedDocument(xml)) })
  ).json()) as { queueMessageId: string };
  await afterIntake();
  await waitForArrival(receiver, 'SendRegisterDocumentResultResponse', ack.queueMessageId, 120_000);
  const emdrId = await withClient(
    databaseUrl,
    async (client) => (await client.query('select emdr_id from emdr_requests where queue_message_id = $1', [ack.queueMessageId])).rows[0].emdr_id as string,
  );
  const demand = (await (await fetch(`${publicUrl}/api/DemandContent`, { method: 'POST', headers, body: JSON.stringify({ emdrId }) })).json()) as {
    queueMessageId: string;
  };
  await waitForArrival(receiver, 'SendDocumentFileResultResponse', demand.queueMessageId, 30_000);
  const file = (await receiver.files()).find(([id]) => id === demand.queueMessageId);
  return file?.[1] === createHash('sha256').update(xml).digest('hex');
}

/** One large document through a fresh `serve` that has taken a small one first. */
async function oneDocument(context: BenchContext, databaseUrl: string, dataKey: string, receiver: Receiver, clinic: BenchClinic, xml: Buffer): Promise<Run> {
  const service = await startService(context, databaseUrl, dataKey);
  try {
    const publicUrl = `http://127.0.0.1:${service.publicPort}`;
    await throughEverything(publicUrl, databaseUrl, receiver, clinic, xmlOfSize(16 * 1024));
    const pid = service.pid;
    await fs.writeFile(`/proc/${pid}/clear_refs`, '5');
    const before = await rssMiB(pid, 'VmRSS');
    const whole = sampleRss(pid);
    const intake = sampleRss(pid);
    const started = Date.now();
    let intakePeak = 0;
    const identical = await throughEverything(publicUrl, databaseUrl, receiver, clinic, xml, async () => {
      intakePeak = await intake.highest();
    });
    const peak = await whole.highest();
    return { intakeGrowthMiB: intakePeak - before, peakGrowthMiB: peak - before, seconds: (Date.now() - started) / 1000, identical };
  } finally {
    await service.stop();
  }
}

export async function largeDocument(context: BenchContext): Promise<Measured[]> {
  const databaseUrl = await context.database.freshDatabase('bench_large');
  const dataKey = newDataKey();
  const receiver = await startReceiver(context);
  // The clinic is made through a first service, stopped before the rounds: each round starts its own.
  const first = await startService(context, databaseUrl, dataKey);
  const clinic = await addClinic(context, first, receiver.url).finally(() => first.stop());
  try {
    await receiver.configure(clinic.signingSecret);
    const xml = xmlOfSize(context.largeDocumentBytes);
    const documentMiB = xml.length / 1024 / 1024;
    const runs: Run[] = [];
    for (let round = 0; round < context.rounds; round += 1) {
      context.log(`large document: ${documentMiB.toFixed(1)} MiB, round ${round + 1}`);
      runs.push(await oneDocument(context, databaseUrl, dataKey, receiver, clinic, xml));
    }
    const worst = Math.max(...runs.map((run) => run.peakGrowthMiB));
    const peak: Row = {
      metric: `peak RSS growth, ${documentMiB.toFixed(1)} MiB document (worst of ${runs.length})`,
      unit: 'MiB',
      service: round1(worst),
      rounds: { service: runs.map((run) => round1(run.peakGrowthMiB)) },
    };
    peak.target = { text: `≤ 3× the document (${round1(3 * documentMiB)} MiB)`, met: worst <= 3 * documentMiB };
    const rows: Row[] = [
      peak,
      { metric: 'peak growth ÷ document size', unit: '×', service: +(worst / documentMiB).toFixed(2) },
      {
        metric: 'peak RSS growth during intake alone (worst)',
        unit: 'MiB',
        service: round1(Math.max(...runs.map((run) => run.intakeGrowthMiB))),
        rounds: { service: runs.map((run) => round1(run.intakeGrowthMiB)) },
      },
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
    await receiver.stop();
  }
}
