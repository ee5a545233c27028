import type { SeededUsers } from './database.js';
import { httpRequest, type Answer, type LoadRequest } from './http-load.js';

/** Interface A's requests as the scenarios send them. */

export const JSON_HEADERS = { 'content-type': 'application/json' };

/** A JSON-RPC answer that is not a result (an error object) fails the request. */
export function expectResult(answer: Answer): void {
  if (answer.body.indexOf('"result"') < 0) throw new Error(`not a result: ${answer.body.toString('utf8', 0, 300)}`);
}

/** patient.get_patient with a random seeded session's credentials, to `path` (the service's /vN/ or the baseline's /rpc). */
export function getPatientRequest(seeded: SeededUsers, path: string): LoadRequest {
  const i = Math.floor(Math.random() * seeded.sessions);
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'patient.get_patient',
    params: {},
    cred: { user: seeded.users[i % seeded.users.length]!.user, token: seeded.sessionToken(i) },
  });
  return { bytes: httpRequest('POST', path, JSON_HEADERS, body) };
}
