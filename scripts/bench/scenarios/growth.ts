import type { LoadResult } from '../lib/http-load.js';
import { seedDocuments, seedUsers, type SeededUsers } from '../lib/database.js';
import { registerDocumentRequests } from '../lib/documents.js';
import type { ServiceProcess } from '../lib/processes.js';
import { closedRound, perRound } from '../lib/rounds.js';
import { expectResult, getPatientRequest } from '../lib/rpc.js';
import { alternate, median, type BenchContext, type Measured, type Row } from '../lib/scenario.js';
import { addClinic, newDataKey, rpcVersion, startService, type BenchClinic } from '../lib/service.js';
import { ACK_DOCUMENT_BYTES, expectAcknowledgement } from './register-document.js';

/**
 * Growth: the same service on a database with 1,000 sessions and documents and on one with
 * `growthRows` of each (completed requests and registered documents), rounds alternating between
 * the two: get_patient and RegisterDocument acknowledgements.
 */

const SMALL = 1000;

interface Side {
  ehr: ServiceProcess;
  emdr: ServiceProcess;
  seeded: SeededUsers;
  clinic: BenchClinic;
}

async function side(context: BenchContext, rows: number): Promise<Side> {
  const databaseUrl = await context.database.freshDatabase(`bench_growth_${rows}`);
  const dataKey = newDataKey();
  const ehr = await startService(context, databaseUrl, dataKey, { only: 'ehr' });
  const emdr = await startService(context, databaseUrl, dataKey, { only: 'emdr' });
  const clinic = await addClinic(context, emdr, 'http://127.0.0.1:9');
  context.log(`growth: seeding ${rows} sessions and ${rows} documents`);
  const seeded = await seedUsers(databaseUrl, Buffer.from(dataKey, 'hex'), { users: 1000, sessions: rows });
  await seedDocuments(databaseUrl, clinic.businessId, rows);
  return { ehr, emdr, seeded, clinic };
}

export async function growth(context: BenchContext): Promise<Measured[]> {
  const small = await side(context, SMALL);
  const large = await side(context, context.growthRows);
  try {
    const path = `/${rpcVersion(context.root)}/`;
    const getPatient = (target: Side) =>
      closedRound(context, { port: target.ehr.publicPort }, { onAnswer: expectResult, next: () => getPatientRequest(target.seeded, path) });
    context.log('growth: get_patient');
    const patients = await alternate(context.rounds, [
      { name: 'large', run: getPatient(large) },
      { name: 'small', run: getPatient(small) },
    ]);
    const register = (target: Side) =>
      closedRound(
        context,
        { port: target.emdr.publicPort },
        { onAnswer: expectAcknowledgement, next: registerDocumentRequests(target.clinic, ACK_DOCUMENT_BYTES) },
      );
    context.log('growth: RegisterDocument');
    const documents = await alternate(context.rounds, [
      { name: 'large', run: register(large) },
      { name: 'small', run: register(small) },
    ]);
    const rows = [...growthRows('get_patient', patients), ...growthRows('RegisterDocument ack', documents)];
    return [
      {
        name: 'growth',
        title: `Growth: ${context.growthRows.toLocaleString('en')} vs ${SMALL.toLocaleString('en')} sessions and documents`,
        columns: [`${context.growthRows.toLocaleString('en')} rows`, `${SMALL.toLocaleString('en')} rows`],
        rows,
        chart: {},
        notes: [
          'Ratio: the large database against the small one; within 1.2× means a throughput ratio of at least 0.83 and a mean-latency ratio of at most 1.2.',
        ],
      },
    ];
  } finally {
    for (const process of [small.ehr, small.emdr, large.ehr, large.emdr]) await process.stop();
  }
}

function growthRows(what: string, results: Record<string, LoadResult[]>): Row[] {
  const throughput: Row = {
    metric: `${what}: throughput`,
    unit: 'requests/s',
    service: median(perRound(results.large, (r) => r.perSecond)),
    baseline: median(perRound(results.small, (r) => r.perSecond)),
    rounds: { service: perRound(results.large, (r) => r.perSecond), baseline: perRound(results.small, (r) => r.perSecond) },
  };
  throughput.target = { text: '≥ 0.83× (within 1.2×)', met: throughput.service / throughput.baseline! >= 1 / 1.2 };
  const latency: Row = {
    metric: `${what}: mean latency`,
    unit: 'ms',
    service: median(perRound(results.large, (r) => r.mean)),
    baseline: median(perRound(results.small, (r) => r.mean)),
  };
  latency.target = { text: '≤ 1.2×', met: latency.service / latency.baseline! <= 1.2 };
  return [throughput, latency];
}
