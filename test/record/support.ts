import { expect } from 'vitest';
import type { TestService } from '../support/service.js';
import { runCli } from '../support/cli.js';
import { expectResultMatchesSchema, VERSION } from '../ehr/support/rpc.js';

export interface Answer {
  result?: any;
  error?: { code: number; message: string; data?: { reason?: string; errors?: Array<{ path: string; message: string }> } };
}

/** The resource types the import maps, written here apart from src/record so that a change there shows. */
export const IMPORTED: ReadonlySet<string> = new Set([
  'Patient',
  'Practitioner',
  'Organization',
  'Location',
  'Medication',
  'Encounter',
  'Condition',
  'Observation',
  'Procedure',
  'DiagnosticReport',
  'MedicationRequest',
  'ServiceRequest',
]);

let counter = 0;

/**
 * One call as the peer SDK's transport sends it: a string id, Content-Type
 * application/json;charset=UTF-8, the members jsonrpc, id, method, params, cred, apiKey (null when
 * unused). Every result is checked against its method's result schema.
 */
export async function sdkCall(
  service: TestService,
  method: string,
  params: object,
  credentials: { cred?: { user: string; token: string } | null; apiKey?: string | null } = {},
): Promise<Answer> {
  counter += 1;
  const id = String(counter);
  const body = JSON.stringify({ jsonrpc: '2.0', id, method, params, cred: credentials.cred ?? null, apiKey: credentials.apiKey ?? null });
  const response = await fetch(`${service.publicUrl}/${VERSION}/`, { method: 'POST', headers: { 'Content-Type': 'application/json;charset=UTF-8' }, body });
  expect(response.status).toBe(200);
  const answer = (await response.json()) as Answer & { id: unknown };
  expect(answer.id).toBe(id);
  if (answer.error === undefined) await expectResultMatchesSchema(method, answer.result);
  return answer;
}

/** The result, failing the test with the error when there is one. */
export function resultOf(answer: Answer): any {
  expect(answer.error, JSON.stringify(answer.error)).toBeUndefined();
  return answer.result;
}

/** `ehr-gateway apikeys add` for the organizations; returns the key. */
export async function addApiKey(service: TestService, ...organizations: string[]): Promise<{ id: string; apiKey: string }> {
  const added = await runCli(['apikeys', 'add', ...organizations.flatMap((oid) => ['--organization', oid]), '--name', 'test'], service.env);
  expect(added.code, added.stderr).toBe(0);
  return JSON.parse(added.stdout) as { id: string; apiKey: string };
}

/** `ehr-gateway records import` of files; returns the exit code and the JSON summary. */
export async function importRecords(
  service: TestService,
  files: readonly string[],
  options: { organization: string; source?: string },
): Promise<{ code: number | null; summary: any; stderr: string }> {
  const result = await runCli(
    ['records', 'import', ...files, '--organization', options.organization, '--source', options.source ?? 'synthea'],
    service.env,
    240_000,
  );
  let summary: any;
  try {
    summary = JSON.parse(result.stdout);
  } catch {
    throw new Error(`records import printed no summary (exit ${result.code}): ${result.stderr.slice(-2000)}`);
  }
  return { code: result.code, summary, stderr: result.stderr };
}

/** Every item of a patient's list, paged the SDK's way (lastItemCreated = the last item's created, or issuedDate for reports). */
export async function pageAll(
  service: TestService,
  method: string,
  member: string,
  patientId: string,
  credentials: { cred?: { user: string; token: string }; apiKey?: string },
  options: { limit: number; by: 'keyset' | 'offset'; newestFirst?: boolean },
): Promise<any[]> {
  const items: any[] = [];
  let lastItemCreated: string | undefined;
  for (let page = 0; page < 10_000; page += 1) {
    const params: Record<string, unknown> = { patientId, limit: options.limit, offset: options.by === 'offset' ? items.length : 0, lastItemCreated };
    if (options.newestFirst === false) params.orderByDescendingDate = false;
    const batch = resultOf(await sdkCall(service, method, params, credentials))[member] as any[];
    items.push(...batch);
    if (batch.length < options.limit) return items;
    const last = batch.at(-1);
    lastItemCreated = options.by === 'keyset' ? (last.created ?? last.issuedDate) : undefined;
  }
  throw new Error('too many pages');
}
