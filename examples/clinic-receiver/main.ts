/**
 * Runs the reference clinic receiver: tsx examples/clinic-receiver/main.ts --help
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startClinicReceiver } from './receiver.js';

const HELP = `usage: tsx examples/clinic-receiver/main.ts --secret whsec_... [options]

Receives ehr-gateway's callbacks as a clinic's system: verifies the Standard Webhooks signature and
the three headers, deduplicates on webhook-id, answers {"status":"Success"}, and saves received
documents as NAME.xml + NAME.xml.sig. Register http://HOST:PORT as the clinic's callback URL.
The demo clinic of \`make run\` calls back http://127.0.0.1:9090 with --secret-file
.data/demo-signing-secret --business-id 4000125 --user ehr-gateway --token demo-callback-token;
the mock of \`make mock\` too, with the --secret it prints when it starts.
Each callback is printed with its status, emdrId, and every error and warning code.

options:
  --secret whsec_...     the signing secret printed by \`ehr-gateway clients add\` (one of these
                         two is required; also read from RECEIVER_SIGNING_SECRET)
  --secret-file FILE     a file holding it, e.g. .data/demo-signing-secret (the demo clinic's)
  --business-id ID       expected businessId header (with --user and --token: check all three)
  --user NAME            expected user header (the callback credentials of \`clients add\`)
  --token TOKEN          expected token header (also read from RECEIVER_TOKEN)
  --out DIR              where to save documents (default ./received-documents)
  --port N               listen on N (default 9090, the demo clinic's callback URL)
  --host ADDRESS         listen on ADDRESS (default 127.0.0.1)
  -h, --help             this text`;

function fail(message: string): never {
  console.error(`clinic-receiver: ${message}`);
  process.exit(2);
}

let values;
try {
  ({ values } = parseArgs({
    options: {
      secret: { type: 'string' },
      'secret-file': { type: 'string' },
      'business-id': { type: 'string' },
      user: { type: 'string' },
      token: { type: 'string' },
      out: { type: 'string', default: './received-documents' },
      port: { type: 'string', default: '9090' },
      host: { type: 'string', default: '127.0.0.1' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  }));
} catch (error) {
  fail((error as Error).message);
}
if (values.help) {
  console.log(HELP);
  process.exit(0);
}
function secretFromFile(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (error) {
    fail(
      `--secret-file ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message} (the demo clinic's is written by \`make run\`, i.e. ehr-gateway seed-demo)`,
    );
  }
}
if (values.secret !== undefined && values['secret-file'] !== undefined) fail('give --secret or --secret-file, not both');
const secret = values['secret-file'] !== undefined ? secretFromFile(values['secret-file']) : (values.secret ?? process.env.RECEIVER_SIGNING_SECRET);
if (!secret?.startsWith('whsec_')) fail('--secret whsec_... or --secret-file FILE is required');
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) fail('--port takes a TCP port');
const token = values.token ?? process.env.RECEIVER_TOKEN;
const headerFlags = [values['business-id'], values.user, token];
if (headerFlags.some(Boolean) && !headerFlags.every(Boolean)) fail('--business-id, --user and --token go together');

const receiver = await startClinicReceiver({
  signingSecret: secret,
  expectedHeaders: values['business-id'] ? { businessId: values['business-id'], user: values.user!, token: token! } : undefined,
  documentsDir: values.out,
  onSaved: (xmlPath) => console.log(`${new Date().toISOString()} saved ${xmlPath} and ${xmlPath}.sig`),
  port,
  host: values.host,
});
/** `errors` or `warnings` of a callback body as `CODE: message; CODE: message`. */
function codes(items: unknown): string | undefined {
  if (!Array.isArray(items) || items.length === 0) return undefined;
  return items
    .map((item: { code?: unknown; message?: unknown }) => `${String(item.code)}${typeof item.message === 'string' ? `: ${item.message}` : ''}`)
    .join('; ');
}

/** What a callback says: its status, emdrId, and every error and warning with its code. */
function summary(body: Record<string, unknown>): string {
  const { status, emdrId } = body;
  if (typeof status !== 'string') return '';
  const errors = codes(body.errors);
  const warnings = codes(body.warnings);
  return ` (status ${status}${typeof emdrId === 'string' ? `, emdrId ${emdrId}` : ''})${errors ? ` errors: ${errors}` : ''}${warnings ? ` warnings: ${warnings}` : ''}`;
}

const defaultReply = receiver.reply;
receiver.reply = (callback) => {
  const reply = defaultReply(callback);
  const outcome =
    reply === 'hang'
      ? 'no answer'
      : reply.status === 200
        ? callback.duplicate
          ? 'duplicate, acknowledged'
          : 'accepted'
        : 'rejected: bad signature or headers';
  console.log(`${new Date().toISOString()} ${callback.name} ${String(callback.headers['webhook-id'] ?? '')} ${outcome}${summary(callback.body)}`);
  return reply;
};
console.log(`clinic-receiver: listening on ${receiver.url}, saving documents to ${values.out}`);
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => void receiver.close().then(() => process.exit(0)));
