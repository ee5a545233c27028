import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import knexFactory, { type Knex } from 'knex';
import { createClinicAccount, type CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { decodeBase64Strict } from '../../src/emdr/values/values.js';
import { responseProblems } from './contract.js';
import { postHead, type RawAnswer } from './raw-http.js';
import { testSignatureOf } from './signing.js';

const fixtures = path.join(import.meta.dirname, '../emdr/fixtures');
/** A small CDA-like XML document and a detached CMS signature over it (openssl, RSA test key). */
export const FIXTURE_XML = fs.readFileSync(path.join(fixtures, 'doc.xml'));
export const FIXTURE_SIGNATURE = fs.readFileSync(path.join(fixtures, 'doc.xml.sig'));
/** The same signature with the content attached (not detached). */
export const FIXTURE_ATTACHED_SIGNATURE = fs.readFileSync(path.join(fixtures, 'attached.sig'));

export const ORGANIZATION = '1.2.643.5.1.13.13.12.2.77.7973';
/** A SNILS with a valid check number. */
export const VALID_SNILS = '112-233-445 95';

export function openKnex(databaseUrl: string): Knex {
  return knexFactory({ client: 'pg', connection: databaseUrl, pool: { min: 0, max: 2 } });
}

/** A clinic account in the service's database, its secrets sealed with the service's data key; by default it acts for ORGANIZATION. */
export async function addClinic(
  service: { databaseUrl: string; dataKey: Buffer },
  callbackUrl: string,
  extra: { businessId?: string; organizations?: string[] | null; callbackUrls?: string[] } = {},
): Promise<CreatedClinicAccount> {
  const knex = openKnex(service.databaseUrl);
  try {
    return await createClinicAccount(knex, service.dataKey, {
      businessId: extra.businessId ?? `b-${randomUUID().slice(0, 8)}`,
      user: 'mis',
      callbackUrls: extra.callbackUrls ?? [callbackUrl],
      organizations: extra.organizations === undefined ? [ORGANIZATION] : extra.organizations,
    });
  } finally {
    await knex.destroy();
  }
}

export function authHeaders(clinic: CreatedClinicAccount): Record<string, string> {
  return { businessId: clinic.businessId, user: clinic.user, token: clinic.token, 'content-type': 'application/json' };
}

/**
 * A RegisterDocument body whose signature covers its document: the RSA fixture for FIXTURE_XML, a
 * fresh test signature for a `document` given without a `signature`.
 */
export function registerBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const document = typeof overrides.document === 'string' ? decodeBase64Strict(overrides.document) : undefined;
  const signature = document && !('signature' in overrides) ? testSignatureOf(document) : FIXTURE_SIGNATURE;
  return {
    localUid: randomUUID(),
    kind: '119',
    organization: ORGANIZATION,
    patientSnils: VALID_SNILS,
    creationDateTime: '2026-01-15T09:30:00+03:00',
    document: FIXTURE_XML.toString('base64'),
    signature: signature.toString('base64'),
    ...overrides,
  };
}

/**
 * POSTs to interface B and checks the answer against specs/openapi.yaml (a live contract check):
 * an undocumented status or a body off its schema fails the calling test.
 */
export async function post(baseUrl: string, route: string, headers: Record<string, string>, body: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${baseUrl}${route}`, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
  const answer = { status: response.status, body: await response.json() };
  const problems = responseProblems('POST', route, answer.status, answer.body);
  if (problems.length > 0) throw new Error(`the answer breaks the spec: ${problems.join('; ')}`);
  return answer;
}

/** A well-formed UTF-8 XML document of at least `bytes` bytes (Cyrillic text, many elements). */
export function largeXml(bytes: number): Buffer {
  const filler = '<p>Описание осмотра пациента, строка для объёма.</p>';
  // Its author is the worker the tests' personal signatures name (the registry refuses a signer the document does not name).
  const head =
    '<?xml version="1.0" encoding="UTF-8"?><ClinicalDocument xmlns="urn:hl7-org:v3"><author><assignedAuthor><id root="1.2.643.100.3" extension="087-654-321 10"/></assignedAuthor></author>';
  const count = Math.ceil((bytes - head.length) / Buffer.byteLength(filler));
  return Buffer.from(`${head}${filler.repeat(count)}</ClinicalDocument>`);
}

/**
 * Where the pipeline's rows stand (requests, callbacks, the built-in registry's queued answers), for
 * the message of a wait that failed: which stage holds the work, and until when.
 */
export async function pipelineSnapshot(databaseUrl: string): Promise<string> {
  const knex = openKnex(databaseUrl);
  try {
    const at = (column: string) => knex.raw(`to_char(${column}, 'HH24:MI:SS.MS') as ${column}`);
    const requests = await knex('emdr_requests').select('operation', 'state', 'claims', at('available_at'), at('leased_until'), at('updated_at'));
    const callbacks = await knex('emdr_callbacks').select('name', 'state', 'attempt_count', at('available_at'), at('leased_until'));
    const answers = await knex('emdr_registry_answers').select(at('available_at'));
    return JSON.stringify({ now: new Date().toISOString(), requests, callbacks, answers });
  } catch (error) {
    return `(no snapshot: ${(error as Error).message})`;
  } finally {
    await knex.destroy();
  }
}

/**
 * A RegisterDocument whose body stops after its first byte until `finish` sends the rest: it is in
 * progress (holds an intake slot, and its address's share) while it is read. From `localAddress`,
 * e.g. 127.0.0.2 for another client on loopback.
 */
export function heldRegisterDocument(port: number, clinic: CreatedClinicAccount, localAddress?: string): { answer: Promise<RawAnswer>; finish(): void } {
  const body = Buffer.from(JSON.stringify(registerBody()));
  const socket = net.connect({ port, host: '127.0.0.1', ...(localAddress ? { localAddress } : {}) });
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  socket.on('error', () => undefined);
  const answer = new Promise<RawAnswer>((resolve) =>
    socket.on('close', () =>
      resolve({ statusLine: text.split('\r\n')[0] ?? '', status: Number(text.split(' ')[1] ?? 0), headers: {}, body: '', bodyBytes: 0, closed: true }),
    ),
  );
  socket.on('data', () => {
    // One answer is all it waits for.
    if (/\r\n\r\n/.test(text)) socket.end();
  });
  socket.on('connect', () => socket.write(postHead('/api/RegisterDocument', authHeaders(clinic), body.length) + body.subarray(0, 1).toString('latin1')));
  return { answer, finish: () => socket.write(body.subarray(1)) };
}
