import { closedLoop, httpRequest, type LoadResult } from '../lib/http-load.js';
import { seedDocuments, seedUsers, type SeededUsers } from '../lib/database.js';
import { registerDocumentRequests } from '../lib/documents.js';
import type { ServiceProcess } from '../lib/processes.js';
import { alternate, median, round1, type BenchContext, type Measured, type Row } from '../lib/scenario.js';
import { addClinic, newDataKey, rpcVersion, startService, type BenchClinic } from '../lib/service.js';
import { ACK_DOCUMENT_BYTES, expectAcknowledgement } from './register-document.js';

/**
 * Growth: the same service on a database with 1,000 sessions and documents and on one with
 * `growthRows` of each (completed requests and registered documents), rounds alternating between
 * the two: get_patient and RegisterDocument acknowledgements.
 */

const CONNECTIONS = 16;
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
    const getPatient = (target: Side) => () =>
      closedLoop({
        port: target.ehr.publicPort,
        connections: CONNECTIONS,
        durationMs: context.roundMs,
        warmupMs: context.warmupMs,
        onAnswer: (answer) => {
          if (answer.body.indexOf('"result"') < 0) throw new Error(answer.body.toString());
        },
        next: () => {
          const i = Math.floor(Math.random() * target.seeded.sessions);
          const body = JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'patient.get_patient',
            params: {},
            cred: { user: target.seeded.users[i % target.seeded.users.length]!.user, token: target.seeded.sessionToken(i) },
          });
          return { bytes: httpRequest('POST', path, { 'content-type': 'application/json' }, body) };
        },
      });
    context.log('growth: get_patient');
    const patients = await alternate(context.rounds, [
      { name: 'large', run: getPatient(large) },
      { name: 'small', run: getPatient(small) },
    ]);
    const register = (target: Side) => () =>
      closedLoop({
        port: target.emdr.publicPort,
        connections: CONNECTIONS,
        durationMs: context.roundMs,
        warmupMs: context.warmupMs,
        onAnswer: expectAcknowledgement,
        next: registerDocumentRequests(target.clinic, ACK_DOCUMENT_BYTES),
      });
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
  const per = (list: LoadResult[] | undefined, pick: (result: LoadResult) => number) => (list ?? []).map((result) => round1(pick(result)));
  const throughput: Row = {
    metric: `${what}: throughput`,
    unit: 'requests/s',
    service: median(per(results.large, (r) => r.perSecond)),
    baseline: median(per(results.small, (r) => r.perSecond)),
    rounds: { service: per(results.large, (r) => r.perSecond), baseline: per(results.small, (r) => r.perSecond) },
  };
  throughput.target = { text: '≥ 0.83× (within 1.2×)', met: throughput.service / throughput.baseline! >= 1 / 1.2 };
  const latency: Row = {
    metric: `${what}: mean latency`,
    unit: 'ms',
    service: median(per(results.large, (r) => r.mean)),
    baseline: median(per(results.small, (r) => r.mean)),
  };
  latency.target = { text: '≤ 1.2×', met: latency.service / latency.baseline! <= 1.2 };
  return [throughput, latency];
}
