import { Option, type Command } from 'commander';
import { printJson, UsageError, type CommandKit } from '../cli/kit.js';
import { parseDuration } from '../config/config.js';

const AUDIT_HELP = `
Prints the audit trail, oldest first: every access to patient data on interface A (authenticate,
get_patient, remove_auth_info, remove_authentication), every registry request on interface B
(RegisterDocument, DemandContent, SearchRegistryItem, refusals by the handler), and every callback's
final outcome (delivered or failed; the file callback of DemandContent says whether the document
was another organization's), and every call of the authorization server (save_exchange_token,
save_auth_info). Each row: when, the request id (the gateway's own), who (internal account,
internalUserId, businessId, the client's address and its own x-request-id), what (method, operation
or callback; emdrId, queueMessageId) and the outcome (ok, a JSON-RPC error code, an interface B
error code, delivered or failed). Refused interface A calls that touched nobody's data are counted
per client address, method and outcome: the first of a minute has a row of its own, the rest of the
minute share one, whose outcome shows their number (-33000 ×299). No personal data is stored in it.
Rows are kept AUDIT_RETENTION (default 365d).

Columns of the text form, tab-separated: at, request id, who, action, object, outcome.
--json prints one JSON object per line instead.`;

interface AuditRow {
  at: Date;
  request_id: string | null;
  internal_account: string | null;
  internal_user_id: string | null;
  business_id: string | null;
  action: string;
  emdr_id: string | null;
  queue_message_id: string | null;
  cross_organization: boolean | null;
  outcome: string;
  client_address: string | null;
  client_request_id: string | null;
  occurrences: number;
}

function who(row: AuditRow): string {
  return (
    [
      row.internal_account === null ? '' : `account:${row.internal_account}`,
      row.internal_user_id === null ? '' : `user:${row.internal_user_id}`,
      row.business_id === null ? '' : `business:${row.business_id}`,
      row.client_address === null ? '' : `address:${row.client_address}`,
      row.client_request_id === null ? '' : `client-request:${row.client_request_id}`,
    ]
      .filter(Boolean)
      .join(' ') || '-'
  );
}

function object(row: AuditRow): string {
  return (
    [
      row.emdr_id === null ? '' : `emdrId:${row.emdr_id}`,
      row.queue_message_id === null ? '' : `queueMessageId:${row.queue_message_id}`,
      row.cross_organization ? 'cross-organization' : '',
    ]
      .filter(Boolean)
      .join(' ') || '-'
  );
}

function limitArgument(value: string): number {
  const limit = Number(value);
  if (!/^\d+$/.test(value) || limit < 1 || limit > 1_000_000) throw new UsageError(`--limit: "${value}" is not a number of rows (1 to 1000000)`);
  return limit;
}

function sinceArgument(value: string): number {
  const ms = parseDuration(value);
  if (ms === undefined || ms <= 0) throw new UsageError(`--since: "${value}" is not a duration (use e.g. 15m, 1h, 7d)`);
  return ms;
}

/** `ehr-gateway audit`: the audit trail, filtered. */
export function registerAuditCommand(program: Command, { withDatabase }: CommandKit): void {
  program
    .command('audit')
    .description('print the audit trail: who accessed which patient data or document, when, with what outcome')
    .addOption(new Option('--since <duration>', 'rows of this last period (e.g. 15m, 1h, 7d)').argParser(sinceArgument).default(24 * 3_600_000, '24h'))
    .option('--user <id>', 'only rows of this internalUserId (the patient id of interface A)')
    .option('--business-id <id>', 'only rows of this clinic (businessId)')
    .option('--limit <n>', 'at most this many rows, the newest', limitArgument, 10_000)
    .option('--json', 'one JSON object per line')
    .addHelpText('after', AUDIT_HELP)
    .action(async (options: { since: number; user?: string; businessId?: string; limit: number; json?: boolean }) => {
      const rows = await withDatabase(async (database) => {
        const query = database
          .knex<AuditRow>('audit_events')
          .select(
            'at',
            'request_id',
            'internal_account',
            'internal_user_id',
            'business_id',
            'action',
            'emdr_id',
            'queue_message_id',
            'cross_organization',
            'outcome',
            'client_address',
            'client_request_id',
            'occurrences',
          )
          .where('at', '>=', database.knex.raw(`now() - ? * interval '1 millisecond'`, [options.since]))
          .orderBy([
            { column: 'at', order: 'desc' },
            { column: 'id', order: 'desc' },
          ])
          .limit(options.limit);
        if (options.user !== undefined) query.where('internal_user_id', options.user);
        if (options.businessId !== undefined) query.where('business_id', options.businessId);
        return (await query).reverse();
      });
      for (const row of rows) {
        if (options.json) {
          printJson({
            at: row.at.toISOString(),
            requestId: row.request_id,
            internalAccount: row.internal_account,
            internalUserId: row.internal_user_id,
            businessId: row.business_id,
            action: row.action,
            emdrId: row.emdr_id,
            queueMessageId: row.queue_message_id,
            crossOrganization: row.cross_organization,
            outcome: row.outcome,
            clientAddress: row.client_address,
            clientRequestId: row.client_request_id,
            occurrences: row.occurrences,
          });
        } else {
          const outcome = row.occurrences > 1 ? `${row.outcome} ×${row.occurrences}` : row.outcome;
          process.stdout.write(`${[row.at.toISOString(), row.request_id ?? '-', who(row), row.action, object(row), outcome].join('\t')}\n`);
        }
      }
    });
}
