import { createHash, randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { EmbeddedPostgres, ensureDatabase } from '../../../src/db/embedded-postgres.js';
import { seal } from '../../../src/db/encryption.js';
import { createLogger } from '../../../src/logging/logger.js';

/** The PostgreSQL of a benchmark run: DATABASE_URL's server, or an embedded one in a temporary DATA_DIR. */
export interface BenchDatabaseServer {
  /** postgres://user:password@host:port (no database). */
  serverUrl: string;
  /** The postmaster's pid when it runs on this machine (embedded), for its CPU time; undefined with DATABASE_URL. */
  postmasterPid: number | undefined;
  version: string;
  /** A new, empty database; returns its URL. */
  freshDatabase(prefix: string): Promise<string>;
  stop(): Promise<void>;
}

export async function startDatabaseServer(): Promise<BenchDatabaseServer> {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ehr-gateway-bench-'));
  const embedded = process.env.DATABASE_URL ? undefined : new EmbeddedPostgres(dataDir, createLogger('warn', process.stderr));
  const url = process.env.DATABASE_URL ?? (await embedded!.start({ adopt: true }));
  const parsed = new URL(url);
  parsed.pathname = '';
  const serverUrl = parsed.toString().replace(/\/$/, '');
  const postmasterPid = embedded ? Number((await fs.readFile(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8')).split('\n')[0]) : undefined;
  const client = new pg.Client({ connectionString: `${serverUrl}/postgres` });
  await client.connect();
  const version = (await client.query<{ server_version: string }>('show server_version')).rows[0]!.server_version;
  await client.end();
  return {
    serverUrl,
    postmasterPid,
    version,
    async freshDatabase(prefix) {
      const name = `${prefix}_${randomBytes(4).toString('hex')}`;
      await ensureDatabase(serverUrl, name);
      return `${serverUrl}/${name}`;
    },
    async stop() {
      await embedded?.stop();
      await fs.rm(dataDir, { recursive: true, force: true });
    },
  };
}

export async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** When the client backends of the database started since `since` began (epoch ms), the asking one left out. */
export async function backendsSince(url: string, since: number): Promise<number[]> {
  return withClient(url, async (client) => {
    const { rows } = await client.query<{ at: number }>(
      `select extract(epoch from backend_start)::float8 * 1000 as at from pg_stat_activity
        where datname = current_database() and backend_type = 'client backend' and pid <> pg_backend_pid() and backend_start >= to_timestamp($1 / 1000.0)`,
      [since],
    );
    return rows.map((row) => row.at);
  });
}

export const sha256 = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/** The end users of interface A's scenarios: each linked to a patient, with a user_sign the bench knows. */
export interface SeededUsers {
  users: Array<{ user: string; userSign: string }>;
  /** The session token of session i (0 ≤ i < sessions); its user is users[i % users.length]. */
  sessionToken(i: number): string;
  sessions: number;
}

const SESSION_BATCH = 20_000;

/** Patients, users linked to them (user_sign sealed with `dataKey`, as the service seals it) and live sessions. */
export async function seedUsers(url: string, dataKey: Buffer, counts: { users: number; sessions: number }): Promise<SeededUsers> {
  const users = Array.from({ length: counts.users }, (_, i) => ({ user: `bench-user-${i}`, userSign: randomBytes(32).toString('base64url') }));
  const sessionToken = (i: number) => `bench-session-${i}`;
  await withClient(url, async (client) => {
    await client.query(
      `insert into ehr_patients (id, surname, name, middle_name, birth_date, gender, phone, email, snils, medcard_number, active, surname_key, name_key, medcard_key)
       select 'bench-p' || i, 'Иванова', 'Мария', 'Петровна', date '1990-05-17', 2, '+7916' || lpad(i::text, 7, '0'), 'maria@example.org',
              '112-233-445 95', 'MC-' || i, true, 'иванова', 'мария', 'mc-' || i
         from generate_series(0, $1 - 1) i`,
      [counts.users],
    );
    await client.query(
      `insert into ehr_user_links (user_id, patient_id, user_sign_sealed)
       select u, 'bench-p' || (n - 1), s from unnest($1::text[], $2::bytea[]) with ordinality as t(u, s, n)`,
      [users.map((user) => user.user), users.map((user) => seal(dataKey, user.user, user.userSign))],
    );
    await addSessions(client, users, 0, counts.sessions, sessionToken);
  });
  return { users, sessionToken, sessions: counts.sessions };
}

/** Sessions from..to-1 (token sessionToken(i), user users[i % users.length]), valid for a day. */
export async function addSessions(
  client: pg.Client,
  users: SeededUsers['users'],
  from: number,
  to: number,
  sessionToken: (i: number) => string,
): Promise<void> {
  for (let start = from; start < to; start += SESSION_BATCH) {
    const end = Math.min(to, start + SESSION_BATCH);
    const hashes: Buffer[] = [];
    const owners: string[] = [];
    for (let i = start; i < end; i += 1) {
      hashes.push(sha256(sessionToken(i)));
      owners.push(users[i % users.length]!.user);
    }
    await client.query(
      `insert into ehr_sessions (token_hash, user_id, expires_at) select h, u, now() + interval '1 day' from unnest($1::bytea[], $2::text[]) as t(h, u)`,
      [hashes, owners],
    );
  }
}

/** `count` completed RegisterDocument requests of the clinic and as many registered documents, for the growth scenario. */
export async function seedDocuments(url: string, clinicBusinessId: string, count: number): Promise<void> {
  await withClient(url, async (client) => {
    const clinic = await client.query<{ id: string }>('select id from emdr_clients where business_id = $1', [clinicBusinessId]);
    const clientId = clinic.rows[0]!.id;
    const batch = 50_000;
    for (let start = 0; start < count; start += batch) {
      const end = Math.min(count, start + batch);
      await client.query(
        `with seeded as (
           select i, gen_random_uuid() as uid, gen_random_uuid() as qid from generate_series($2::int, $3::int - 1) i
         ),
         requests as (
           insert into emdr_requests (queue_message_id, client_id, operation, idempotency_key, body_hash, state, callback_url, local_uid, emdr_id, metadata)
           select qid, $1, 'RegisterDocument', uid, md5(i::text), 'completed', 'http://127.0.0.1:9', uid, 'bench.' || i,
                  jsonb_build_object('localUid', uid, 'kind', '119', 'organization', $4::text, 'patientSnils', '11223344595', 'creationDateTime', '2026-01-15T09:30:00+03:00')
             from seeded
         )
         insert into emdr_registry_documents (emdr_id, request_key, local_uid, kind, organization, patient_snils, creation_date_time, registration_date_time, version, file_name, content, signature)
         select 'bench.' || i, qid::text, uid, '6', $4::text, '11223344595', now(), now(), 1, 'bench.' || i || '.xml', '\\x3c612f3e'::bytea, '\\x00'::bytea
           from seeded`,
        [clientId, start, end, BENCH_ORGANIZATION],
      );
    }
    await client.query('analyze');
  });
}

export const BENCH_ORGANIZATION = '1.2.643.5.1.13.13.12.2.77.7973';

/** A random name for a clinic account. */
export const newBusinessId = () => `bench-${randomUUID().slice(0, 8)}`;
