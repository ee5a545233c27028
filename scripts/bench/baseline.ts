/**
 * The bare baselines of the benchmark: plain node:http and pg (named prepared statements, a pool of
 * 10 that keeps its connections, like the service's) doing the same SQL and crypto as the service
 * for the operations measured, and nothing else: no router, no schema validation, no logging, no
 * limits. What the service costs beyond them is the price of its contract checks and structure.
 *
 *   POST /rpc                   JSON-RPC: patient.get_patient (SHA-256 of the session token, one
 *                               joined query that also writes the audit row, AES-256-GCM open of user_sign),
 *                               embedded_storage.save_auth_info (the link and its sealed user_sign read
 *                               with room reserved under the internal failure limit, SHA-1 credential
 *                               check, INSERT of the session with the room given back and its audit row) and
 *                               diagnostic_report.get_patient_diagnostic_reports (the session with its
 *                               patient, a keyset page of items, the read's audit row, the items with
 *                               the patient attached)
 *   GET /loop-delay             the event loop's delay (p99, max) and the collector's time since the last GET
 *   POST /api/RegisterDocument  the clinic's headers (SHA-256 of the token, one query, constant-time
 *                               compare), the body parsed, SHA-256 over it, the files decoded from
 *                               base64, one INSERT of the request (with its audit row) that the pipeline picks up
 *
 *   tsx scripts/bench/baseline.ts   (env: DATABASE_URL, DATA_KEY (hex), INTERNAL_USERS name:password, INTERNAL_AUTH_MAX_FAILURES, PORT (default: a free one it binds itself);
 *                                   prints "baseline listening on PORT" when ready)
 */
import { createDecipheriv, createHash, createSecretKey, randomUUID, timingSafeEqual } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import pg from 'pg';
import { JUDGING_PERIOD_MS } from '../../src/ehr/credentials/failure-limit.js';
import { giveBackRoom, reserveRoom } from '../../src/ehr/credentials/failure-limit-sql.js';
import { clientKey } from '../../src/http/client-address.js';

// Connections kept once opened, as the service's pool keeps them (src/db/database.ts): else this
// side alone would pay new connections in a steady round after idling through the service's.
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10, idleTimeoutMillis: 0 });
const dataKey = createSecretKey(Buffer.from(process.env.DATA_KEY!, 'hex'));
const [internalUser, internalPassword] = process.env.INTERNAL_USERS!.split(':') as [string, string];

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/** AES-256-GCM, laid out iv | tag | ciphertext, the user id as authenticated data (as src/db/encryption.ts). */
function openSealed(context: string, sealed: Buffer): string {
  const decipher = createDecipheriv('aes-256-gcm', dataKey, sealed.subarray(0, 12));
  decipher.setAAD(Buffer.from(context, 'utf8'));
  decipher.setAuthTag(sealed.subarray(12, 28));
  return Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]).toString('utf8');
}

// With the audit row of a successful read, as the service writes it (issue 11: the same work).
const GET_PATIENT = `
  with found as (
    select s.user_id, s.expires_at > now() as live, l.patient_id, l.user_sign_sealed,
           p.id, p.surname, p.name, p.middle_name, to_char(p.birth_date, 'YYYY-MM-DD') as birth_date, p.gender, p.phone, p.email, p.snils, p.medcard_number, p.active
      from ehr_sessions s
      left join ehr_user_links l on l.user_id = s.user_id
      left join ehr_patients p on p.id = l.patient_id
     where s.token_hash = $1
  ),
  audited as (
    insert into audit_events (request_id, internal_user_id, action, outcome)
    select $3, f.patient_id, 'patient.get_patient', 'ok'
      from found f, (select set_config('synchronous_commit', 'off', true)) as unflushed
     where f.user_id = $2 and f.live and f.active
  )
  select * from found`;

type Cred = { user: string; token: string };

async function getPatient(cred: Cred): Promise<unknown> {
  const { rows } = await pool.query({ name: 'get_patient', text: GET_PATIENT, values: [sha256(cred.token), cred.user, randomUUID()] });
  const row = rows[0];
  if (!row || row.user_id !== cred.user) return { error: { code: -33000, message: 'NotAuthorized' } };
  if (!row.live) return { error: { code: -33001, message: 'AuthExpired' } };
  if (!row.active) return { error: { code: -34002, message: 'PatientNotFound' } };
  const userSign = openSealed(row.user_id, row.user_sign_sealed);
  const patient = {
    id: row.id,
    surname: row.surname,
    name: row.name,
    ...(row.middle_name ? { middleName: row.middle_name } : {}),
    birthdate: `${row.birth_date} 00:00:00.000`,
    gender: row.gender,
    ...(row.phone ? { phone: row.phone } : {}),
    phones: row.phone ? [row.phone] : [],
    ...(row.email ? { email: row.email } : {}),
    ...(row.snils ? { snils: row.snils } : {}),
    ...(row.medcard_number ? { medcardNumber: row.medcard_number } : {}),
    active: row.active,
  };
  return { result: { patient, user_sign: userSign, userSign } };
}

// save_auth_info as the service runs it (src/ehr/methods.ts, issue 21's race-free failure limit and audited internal
// calls): the link read in the statement that reserves room to judge the credential (the key's row, shared by every call of
// one internal account and address), then the session stored, the room given back and the audit row, in one statement.
const LINK_RESERVING = `with ${reserveRoom(2)}
  select r.granted, r.period, r.failures, l.user_id, l.patient_id, l.user_sign_sealed from reserved r left join ehr_user_links l on l.user_id = $1`;
const SAVE_SESSION = `with stored as (insert into ehr_sessions (token_hash, user_id, expires_at) values ($1, $2, $3) returning user_id),
  ${giveBackRoom(9)}
  insert into audit_events (request_id, internal_account, internal_user_id, action, outcome, client_address, client_request_id)
  select $4, $5, $6, 'embedded_storage.save_auth_info', 'ok', $7, $8 from stored`;
// The failure limit's allowance, as serve's in the bench: never reached, so no call waits for room.
const failureAllowance = Number(process.env.INTERNAL_AUTH_MAX_FAILURES);

async function saveAuthInfo(cred: Cred, authInfo: { user: string; token: string; ttl: number }, clientAddress: string): Promise<unknown> {
  const key = JSON.stringify([cred.user === internalUser ? cred.user : null, clientAddress]);
  const { rows } = await pool.query({ name: 'user_link', text: LINK_RESERVING, values: [authInfo.user, key, failureAllowance, JUDGING_PERIOD_MS] });
  const link = rows[0];
  if (!link.granted) return { error: { code: -33000, message: 'NotAuthorized' } };
  if (!link.user_id) return { error: { code: -34007, message: 'UserNotFound' } };
  const expected = createHash('sha1')
    .update(internalPassword + openSealed(authInfo.user, link.user_sign_sealed), 'utf8')
    .digest('hex');
  if (cred.user !== internalUser || !timingSafeEqual(sha256(cred.token), sha256(expected))) return { error: { code: -33000, message: 'NotAuthorized' } };
  const expiresAt = new Date(Date.now() + authInfo.ttl * 1000);
  try {
    await pool.query({
      name: 'save_session',
      text: SAVE_SESSION,
      values: [sha256(authInfo.token), authInfo.user, expiresAt, randomUUID(), cred.user, link.patient_id, clientAddress, null, key, link.period],
    });
  } catch (error) {
    if ((error as { code?: string }).code === '23505') return { error: { code: -34003, message: 'SaveAuthInfoError' } };
    throw error;
  }
  return { result: { success: true, internalUserId: link.patient_id, expiresAt: expiresAt.toISOString() } };
}

// The medical record's list of a patient, as the service reads it: the session with its patient,
// a page of items newest first, an audit row committed without waiting for the WAL flush.
const RECORD_SESSION = `
  select s.user_id, s.expires_at > now() as live, l.patient_id,
         p.id, p.surname, p.name, p.middle_name, to_char(p.birth_date, 'YYYY-MM-DD') as birth_date, p.gender, p.phone, p.email, p.medcard_number, p.active
    from ehr_sessions s
    left join ehr_user_links l on l.user_id = s.user_id
    left join ehr_patients p on p.id = l.patient_id
   where s.token_hash = $1`;
const REPORT_PAGE = `select x.message from record_diagnostic_reports x where x.patient_id = $1 and x.created < coalesce($2::timestamptz, 'infinity') order by x.created desc limit $3 offset $4`;
const AUDIT_READ = `insert into audit_events (request_id, internal_user_id, action, outcome) select $1, $2, $3, 'ok' from (select set_config('synchronous_commit', 'off', true)) as unflushed`;

async function patientDiagnosticReports(cred: Cred, params: { patientId: string; limit: number; offset?: number; lastItemCreated?: string }): Promise<unknown> {
  const { rows } = await pool.query({ name: 'record_session', text: RECORD_SESSION, values: [sha256(cred.token)] });
  const row = rows[0];
  if (!row || row.user_id !== cred.user || !row.patient_id) return { error: { code: -33000, message: 'NotAuthorized' } };
  if (!row.live) return { error: { code: -33001, message: 'AuthExpired' } };
  if (row.patient_id !== params.patientId) return { error: { code: -33403, message: 'AccessForbidden' } };
  const page = await pool.query({
    name: 'report_page',
    text: REPORT_PAGE,
    values: [params.patientId, params.lastItemCreated || null, params.limit, params.offset ?? 0],
  });
  await pool.query({ name: 'audit_read', text: AUDIT_READ, values: [randomUUID(), row.patient_id, 'diagnostic_report.get_patient_diagnostic_reports'] });
  const patient = {
    id: row.id,
    surname: row.surname,
    name: row.name,
    ...(row.middle_name ? { middleName: row.middle_name } : {}),
    phones: row.phone ? [row.phone] : [],
    ...(row.email ? { email: row.email } : {}),
    gender: row.gender,
    birthdate: `${row.birth_date} 00:00:00.000`,
    ...(row.medcard_number ? { medcardNumber: row.medcard_number } : {}),
  };
  return { result: { diagnosticReports: page.rows.map((item) => ({ ...item.message, patient })), validationErrors: [], recognitionResults: [] } };
}

async function rpc(body: Buffer, clientAddress: string): Promise<unknown> {
  const call = JSON.parse(body.toString('utf8'));
  const outcome =
    call.method === 'patient.get_patient'
      ? await getPatient(call.cred)
      : call.method === 'embedded_storage.save_auth_info'
        ? await saveAuthInfo(call.cred, call.params.authInfo, clientAddress)
        : call.method === 'diagnostic_report.get_patient_diagnostic_reports'
          ? await patientDiagnosticReports(call.cred, call.params)
          : { error: { code: -32601, message: 'Method not found' } };
  return { jsonrpc: '2.0', id: call.id, ...(outcome as object) };
}

const CLINIC = 'select id, token_hash, callback_urls from emdr_clients where business_id = $1 and user_name = $2';
// With its audit row, as the service writes it (issue 11: the same work).
const INSERT_REQUEST = `
  with inserted as (
    insert into emdr_requests (queue_message_id, client_id, operation, idempotency_key, body_hash, state, callback_url, local_uid, metadata, document, signature, request_id)
    values ($1, $2, 'RegisterDocument', $3, $4, 'received', $5, $3, $6, $7::bytea, $8::bytea, $9)
    on conflict (client_id, operation, idempotency_key, body_hash) do nothing
    returning queue_message_id
  ),
  audited as (
    insert into audit_events (request_id, business_id, action, queue_message_id, outcome)
    select $9, $10, 'RegisterDocument', queue_message_id, 'ok' from inserted
  )
  select queue_message_id from inserted`;

async function registerDocument(request: IncomingMessage, body: Buffer): Promise<[number, unknown]> {
  const { rows } = await pool.query({ name: 'clinic', text: CLINIC, values: [request.headers.businessid, request.headers.user] });
  const clinic = rows[0];
  if (!clinic || !timingSafeEqual(clinic.token_hash, sha256(String(request.headers.token)))) return [401, { status: 'Error' }];
  const document = JSON.parse(body.toString('utf8'));
  const metadata = {
    localUid: document.localUid,
    kind: document.kind,
    organization: document.organization,
    patientSnils: document.patientSnils,
    creationDateTime: document.creationDateTime,
  };
  const bodyHash = createHash('sha256').update(body).digest('hex');
  const inserted = await pool.query({
    name: 'insert_request',
    text: INSERT_REQUEST,
    values: [
      randomUUID(),
      clinic.id,
      document.localUid,
      bodyHash,
      clinic.callback_urls[0],
      JSON.stringify(metadata),
      Buffer.from(document.document, 'base64'),
      Buffer.from(document.signature, 'base64'),
      randomUUID(),
      request.headers.businessid,
    ],
  });
  return [200, { localUid: document.localUid, queueMessageId: inserted.rows[0]?.queue_message_id }];
}

function readBody(request: IncomingMessage): Promise<Buffer> {
  const length = Number(request.headers['content-length']);
  const body = Buffer.allocUnsafe(length);
  let at = 0;
  return new Promise((resolve, reject) => {
    request.on('data', (chunk: Buffer) => {
      chunk.copy(body, at);
      at += chunk.length;
    });
    request.on('end', () => resolve(body));
    request.on('error', reject);
  });
}

function send(response: ServerResponse, status: number, value: unknown): void {
  const text = JSON.stringify(value);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

// The loop's stalls and the collector's time, as the service's /metrics has them; GET /loop-delay
// answers them since the last ask, for the bench's steady rounds, beyond the sampling interval (a
// sample's delay counts the interval itself; the service samples less often: EVENT_LOOP_SAMPLE_MS).
const LOOP_DELAY_RESOLUTION_MS = 10;
const loopDelay = monitorEventLoopDelay({ resolution: LOOP_DELAY_RESOLUTION_MS });
loopDelay.enable();
let collectorMs = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) collectorMs += entry.duration;
}).observe({ entryTypes: ['gc'] });

function loopDelaySinceLastAsk(): unknown {
  const beyondInterval = (ns: number) => Math.max(0, ns / 1e6 - LOOP_DELAY_RESOLUTION_MS);
  const answer = { p99Ms: beyondInterval(loopDelay.percentile(99)), maxMs: beyondInterval(loopDelay.max), gcMs: collectorMs };
  loopDelay.reset();
  collectorMs = 0;
  return answer;
}

const server = http.createServer((request, response) => {
  void (async () => {
    try {
      if (request.url === '/loop-delay') {
        send(response, 200, loopDelaySinceLastAsk());
        return;
      }
      const body = await readBody(request);
      if (request.url === '/rpc') send(response, 200, await rpc(body, clientKey(request.socket.remoteAddress)));
      else if (request.url === '/api/RegisterDocument') send(response, ...(await registerDocument(request, body)));
      else send(response, 404, { error: 'not found' });
    } catch (error) {
      send(response, 500, { error: String(error) });
    }
  })();
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => console.log(`baseline listening on ${(server.address() as AddressInfo).port}`));
process.on('SIGTERM', () => server.close(() => void pool.end().then(() => process.exit(0))));
