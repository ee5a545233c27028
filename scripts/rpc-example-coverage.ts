/**
 * Runs every example of specs/openrpc.json, in document order, against a live interface A with
 * open-rpc-test-coverage and its console reporter; exits non-zero on any failure.
 *   tsx scripts/rpc-example-coverage.ts --help
 *
 * The library's HTTP transport sends no `cred`, so this one adds what an example's `x-cred` names
 * (and its `x-api-key` as the envelope's apiKey: the back office's examples use the demo api key of
 * seed-demo) and computes the internal SHA-1 credentials as the authorization server would. A result that
 * differs from its example (a fresh expiresAt, a random user_sign) must still match the method's
 * result schema (JSON Schema 2020-12 with formats).
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { parseOpenRPCDocument } from '@open-rpc/schema-utils-js';
import coverageModule from '@open-rpc/test-coverage';
import ExamplesRuleModule from '@open-rpc/test-coverage/build/rules/examples-rule.js';
import type { Call } from '@open-rpc/test-coverage/build/coverage.js';
import { createJsonSchemaAjv } from '../src/validation/json-schema.js';
import { commandLine } from './lib/command-line.ts';

// CommonJS modules with default exports.
const runCoverage = (coverageModule as unknown as { default: (options: object) => Promise<Call[]> }).default;
const ExamplesRule = (
  ExamplesRuleModule as unknown as { default: new () => { getCalls(document: unknown, method: unknown): Call[]; validateCall(call: Call): Call } }
).default;

const HELP = `usage: tsx scripts/rpc-example-coverage.ts [options]

Runs the examples of specs/openrpc.json against a live interface A (open-rpc-test-coverage, console
reporter). The server must hold the demo data (ehr-gateway seed-demo: the demo patients, demo-1's
medical record, the demo api key) and list the internal
account in INTERNAL_USERS; the examples then succeed in document order on a fresh database.

options:
  --public-url URL          public listener (default http://127.0.0.1:8080)
  --internal-url URL        internal listener (default http://127.0.0.1:8081)
  --internal-user NAME      the authorization server's account (default demo-auth)
  --internal-password PW    its password (default demo-auth-password)
  -h, --help                this text

example: tsx scripts/rpc-example-coverage.ts --public-url http://127.0.0.1:8080`;

const { values } = commandLine('rpc-example-coverage', HELP, {
  options: {
    'public-url': { type: 'string', default: 'http://127.0.0.1:8080' },
    'internal-url': { type: 'string', default: 'http://127.0.0.1:8081' },
    'internal-user': { type: 'string', default: 'demo-auth' },
    'internal-password': { type: 'string', default: 'demo-auth-password' },
  },
});

interface ExampleCall extends Call {
  cred?: { user: string; token: string };
  apiKey?: string;
}
interface ExampleMethod {
  name: string;
  tags?: Array<{ name: string }>;
  examples?: Array<{ 'x-cred'?: ExampleCall['cred']; 'x-api-key'?: string }>;
}

const sha1hex = (text: string) => createHash('sha1').update(text, 'utf8').digest('hex');
const root = path.resolve(import.meta.dirname, '..');
const document = await parseOpenRPCDocument(JSON.parse(await fs.readFile(path.join(root, 'specs/openrpc.json'), 'utf8')), { dereference: true });
const endpoint = (base: string) => `${base.replace(/\/$/, '')}/${document.info.version}/`;

class LiveExamplesRule extends ExamplesRule {
  /** The call about to be sent: the transport reads its cred. */
  pending: ExampleCall | undefined;
  private readonly ajv = createJsonSchemaAjv();

  override getCalls(openrpcDocument: unknown, method: ExampleMethod): ExampleCall[] {
    const internal = (method.tags ?? []).some((tag) => tag.name === 'internal-channel');
    return super.getCalls(openrpcDocument, method).map((call, index) => ({
      ...call,
      url: endpoint(internal ? values['internal-url']! : values['public-url']!),
      cred: method.examples?.[index]?.['x-cred'],
      apiKey: method.examples?.[index]?.['x-api-key'],
    }));
  }

  beforeRequest(_options: unknown, call: ExampleCall): void {
    this.pending = call;
  }

  override validateCall(call: ExampleCall): ExampleCall {
    super.validateCall(call);
    if (!call.valid && call.result !== undefined && call.error === undefined) {
      // The library's own fallback is a draft-07 Ajv without formats; the spec is JSON Schema 2020-12.
      const validate = this.ajv.compile(call.resultSchema as object);
      call.valid = validate(call.result);
      call.reason = call.valid ? undefined : `result breaks its schema: ${JSON.stringify(validate.errors)}`;
    }
    return call;
  }
}

const rule = new LiveExamplesRule();
const internalAccount = { user: values['internal-user']!, password: values['internal-password']! };
const userSigns = new Map<string, string>();
const exchangeTokenUsers = new Map<string, string>();

function credFor(method: string, params: Record<string, unknown>) {
  if (method === 'embedded_storage.save_exchange_token')
    return { user: internalAccount.user, token: sha1hex(internalAccount.password + String(params.exchangeToken)) };
  if (method === 'embedded_storage.save_auth_info') {
    const user = (params.authInfo as { user: string }).user;
    return { user: internalAccount.user, token: sha1hex(internalAccount.password + (userSigns.get(user) ?? '')) };
  }
  return rule.pending?.cred;
}

async function transport(url: string, method: string, params: Record<string, unknown>): Promise<unknown> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params, cred: credFor(method, params), apiKey: rule.pending?.apiKey }),
  });
  const answer = (await response.json()) as { result?: { user_sign?: string } };
  // Keep what the authorization server and the app would know: whose exchange token, and the user_sign.
  if (method === 'embedded_storage.save_exchange_token') exchangeTokenUsers.set(String(params.exchangeToken), (params.authInfo as { user: string }).user);
  if (method === 'embedded_storage.authenticate' && answer.result?.user_sign)
    userSigns.set(exchangeTokenUsers.get(String(params.exchangeToken))!, answer.result.user_sign);
  return answer;
}

// The console reporter prints the report and exits: 0 when every call passed.
await runCoverage({ openrpcDocument: document, reporters: ['console'], rules: [rule], transport });
