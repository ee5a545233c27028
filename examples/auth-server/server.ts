/**
 * A stand-in authorization server for local development of interface A: it logs users in by phone
 * with a simulated one-time password, issues (user, token) pairs and exchange tokens, and talks to
 * ehr-gateway's internal channel exactly as the original describes, with SHA-1 credentials:
 *   save_exchange_token: cred.token = sha1hex(password + exchangeToken)
 *   save_auth_info:      cred.token = sha1hex(password + user_sign of the end user)
 * It keeps no user_sign: the patient app holds it and hands it over at the next login, so a
 * compromised authorization server leaks only the user_signs of users who log in meanwhile.
 * With each exchange token it sends the phone it verified (authInfo.phone): ehr-gateway then
 * links the user only to a patient with that phone.
 *
 *   tsx examples/auth-server/server.ts --help
 */
import { createHash, randomBytes, randomInt } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { createEhrClient, EhrRpcError } from '../../generated/ehr-client.js';

const HELP = `usage: tsx examples/auth-server/server.ts [options]

A stand-in authorization server for ehr-gateway's interface A (development only).

options:
  --port N                 listen on N (default 8090; 0: a free port, printed when it listens)
  --ehr-internal-url URL   ehr-gateway's internal listener (default http://127.0.0.1:8081)
  --user NAME              its internal account on ehr-gateway (default demo-auth)
  --password PW            that account's password (default demo-auth-password; ehr-gateway's
                           INTERNAL_USERS must list NAME:PW)
  --token-ttl SECONDS      lifetime of the tokens it issues (default 3600)
  -h, --help               this text

endpoints (JSON bodies):
  POST /login/start   {phone}                       sends a one-time password (printed here); phone in
                                                    E.164 (+79161234567)
  POST /login/verify  {phone, otp, userSign?}        -> {user, token, ttl, ehrSession}
                      with userSign, also stores the new token on ehr-gateway (save_auth_info)
  POST /exchange-token {user, token}                 -> {exchangeToken}, stored on ehr-gateway with the
                                                    phone verified at login
  POST /link          {user, token, internalUserId}  records the user's match to a patient
  GET  /dev/last-otp?phone=...                       the last one-time password (simulation only)
  GET  /healthz                                      up`;

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '8090' },
    'ehr-internal-url': { type: 'string', default: 'http://127.0.0.1:8081' },
    user: { type: 'string', default: 'demo-auth' },
    password: { type: 'string', default: 'demo-auth-password' },
    'token-ttl': { type: 'string', default: '3600' },
    help: { type: 'boolean', short: 'h' },
  },
  strict: true,
});
if (values.help) {
  console.log(HELP);
  process.exit(0);
}
const port = Number(values.port);
const tokenTtl = Number(values['token-ttl']);
if (!Number.isInteger(port) || !Number.isInteger(tokenTtl) || tokenTtl <= 0) {
  console.error('auth-server: --port and --token-ttl take whole numbers');
  process.exit(2);
}

const internalAccount = { user: values.user!, password: values.password! };
const ehr = createEhrClient({ internalUrl: values['ehr-internal-url'] });
const sha1hex = (text: string) => createHash('sha1').update(text, 'utf8').digest('hex');

interface Account {
  user: string;
  /** Verified by one-time password at login; E.164. */
  phone: string;
  tokens: Map<string, number>; // token → expiry (ms since epoch)
  internalUserId?: string;
}
const accountsByPhone = new Map<string, Account>();
const accountsByUser = new Map<string, Account>();
const otpByPhone = new Map<string, string>();

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function requireString(body: Record<string, unknown>, field: string): string {
  const value = body[field];
  if (typeof value !== 'string' || value === '') throw new HttpError(400, `${field} is required`);
  return value;
}

function authenticatedAccount(body: Record<string, unknown>): Account {
  const account = accountsByUser.get(requireString(body, 'user'));
  const expiry = account?.tokens.get(requireString(body, 'token'));
  if (!account || expiry === undefined || expiry < Date.now()) throw new HttpError(401, 'unknown or expired token');
  return account;
}

const routes: Record<string, (body: Record<string, unknown>, url: URL) => Promise<unknown>> = {
  'POST /login/start': async (body) => {
    const phone = requireString(body, 'phone');
    if (!/^\+[1-9]\d{6,14}$/.test(phone)) throw new HttpError(400, 'phone must be in E.164, e.g. +79161234567');
    const otp = String(randomInt(0, 1_000_000)).padStart(6, '0');
    otpByPhone.set(phone, otp);
    console.log(`[auth-server] one-time password sent to …${phone.slice(-2)}: ${otp}`);
    return { otpSent: true };
  },
  'POST /login/verify': async (body) => {
    const phone = requireString(body, 'phone');
    if (otpByPhone.get(phone) !== requireString(body, 'otp')) throw new HttpError(401, 'wrong one-time password');
    otpByPhone.delete(phone);
    let account = accountsByPhone.get(phone);
    if (!account) {
      account = { user: `user-${randomBytes(6).toString('hex')}`, phone, tokens: new Map() };
      accountsByPhone.set(phone, account);
      accountsByUser.set(account.user, account);
    }
    const token = randomBytes(24).toString('base64url');
    account.tokens.set(token, Date.now() + tokenTtl * 1000);
    let ehrSession = 'not requested';
    if (typeof body.userSign === 'string') {
      // The user was matched to a patient before: store the new pair on the EHR side directly.
      await ehr.embeddedStorageSaveAuthInfo(
        { authInfo: { user: account.user, token, ttl: tokenTtl } },
        { user: internalAccount.user, token: sha1hex(internalAccount.password + body.userSign) },
      );
      ehrSession = 'saved';
    }
    return { user: account.user, token, ttl: tokenTtl, ehrSession };
  },
  'POST /exchange-token': async (body) => {
    const account = authenticatedAccount(body);
    const token = body.token as string;
    const exchangeToken = randomBytes(24).toString('base64url');
    await ehr.embeddedStorageSaveExchangeToken(
      { exchangeToken, authInfo: { user: account.user, token, ttl: tokenTtl, phone: account.phone } },
      { user: internalAccount.user, token: sha1hex(internalAccount.password + exchangeToken) },
    );
    return { exchangeToken };
  },
  'POST /link': async (body) => {
    const account = authenticatedAccount(body);
    account.internalUserId = requireString(body, 'internalUserId');
    return { linked: true };
  },
  'GET /healthz': async () => ({ status: 'ok' }),
  'GET /dev/last-otp': async (_body, url) => {
    const otp = otpByPhone.get(url.searchParams.get('phone') ?? '');
    if (!otp) throw new HttpError(404, 'no pending one-time password for that phone');
    return { otp };
  },
};

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const route = routes[`${req.method} ${url.pathname}`];
  const send = (status: number, payload: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(payload));
  };
  if (!route) return send(404, { error: 'not found' });
  try {
    let text = '';
    for await (const chunk of req) text += chunk;
    const body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    send(200, await route(body, url));
  } catch (error) {
    if (error instanceof HttpError) return send(error.status, { error: error.message });
    if (error instanceof EhrRpcError)
      return send(502, {
        error: `ehr-gateway answered ${error.code} ${error.message}`,
        ehrError: { code: error.code, message: error.message, data: error.data },
      });
    if (error instanceof SyntaxError) return send(400, { error: 'body is not JSON' });
    console.error('[auth-server]', error);
    send(500, { error: 'internal error' });
  }
});

// The port bound, which --port 0 leaves to the OS.
server.listen(port, '127.0.0.1', () =>
  console.log(
    `[auth-server] listening on http://127.0.0.1:${(server.address() as AddressInfo).port}, ehr-gateway internal channel ${values['ehr-internal-url']}`,
  ),
);
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => server.close(() => process.exit(0)));
