import fs from 'node:fs/promises';
import path from 'node:path';
import { Option, type Command } from 'commander';
import { printJson, UsageError, withDatabase } from '../cli/program.js';
import { statement } from '../db/sql.js';
import { decodeBase64Strict } from './pipeline/acceptance.js';
import { replayFailedCallbacks } from './pipeline/callbacks.js';
import { isCallbackUrl } from './callback-url.js';
import { createClinicAccount, DuplicateClinicAccountError } from './clients.js';
import { messageState } from './messages.js';
import { refetchDroppedFile } from './pipeline/fulfil.js';
import { WORK, WORK_CHANNEL } from './pipeline/workers.js';
import { BuiltInRegistry } from './registry/built-in.js';

const REQUEST_EXISTS = statement('emdr_request_exists', 'select 1 from emdr_requests where queue_message_id = $1');
const ANNOUNCE_WORK = statement('emdr_announce_work', 'select pg_notify($1, $2)');

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const OID = /^[0-2](\.(0|[1-9][0-9]*))+$/;

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function queueMessageIdArgument(value: string): string {
  if (!UUID.test(value)) throw new UsageError(`"${value}" is not a queueMessageId (a UUID)`);
  return value;
}

/** `clients add`, `messages show`, `callbacks replay`, `document save`: interface B's commands. */
export function registerEmdrCommands(program: Command): void {
  const clients = program.command('clients').description('clinic accounts of interface B');
  clients
    .command('add')
    .description('create a clinic account; prints its token, callback credentials and signing secret (shown once)')
    .requiredOption('--business-id <id>', 'businessId of the clinic in the booking system')
    .requiredOption('--user <name>', 'user name of the account')
    .addOption(new Option('--callback-url <url>', 'base URL of the clinic system for callbacks (repeatable; the first is the default)').argParser(collect).default([]))
    .addOption(new Option('--organization <oid>', 'OID of an organization the clinic acts for (repeatable); this or --all-organizations is required').argParser(collect).default([]))
    .option('--all-organizations', 'the clinic may act for every organization, and demand any document without the patient\'s SNILS')
    .action(async (options: { businessId: string; user: string; callbackUrl: string[]; organization: string[]; allOrganizations?: boolean }) => {
      if (options.callbackUrl.length === 0) throw new UsageError('give at least one --callback-url');
      for (const url of options.callbackUrl) {
        if (!isCallbackUrl(url)) throw new UsageError(`--callback-url "${url}" is not an http(s) base URL (host, optional port and path; no query or fragment)`);
      }
      if (options.organization.length === 0 && !options.allOrganizations) throw new UsageError('give --organization OID (repeatable), or --all-organizations for an account that acts for every organization');
      if (options.organization.length > 0 && options.allOrganizations) throw new UsageError('give either --organization or --all-organizations, not both');
      for (const oid of options.organization) if (!OID.test(oid)) throw new UsageError(`--organization "${oid}" is not an OID`);
      const created = await withDatabase(async (database) => {
        try {
          return await createClinicAccount(database.knex, await database.dataKey(), {
            businessId: options.businessId,
            user: options.user,
            callbackUrls: options.callbackUrl,
            organizations: options.allOrganizations ? null : options.organization,
          });
        } catch (error) {
          if (error instanceof DuplicateClinicAccountError) throw new UsageError(error.message);
          throw error;
        }
      });
      printJson(created);
    });

  program
    .command('messages')
    .description('requests of interface B')
    .command('show')
    .description('state of a request and of each of its callbacks (attempts, last error)')
    .argument('<queueMessageId>', 'the queueMessageId of the acknowledgement', queueMessageIdArgument)
    .action(async (queueMessageId: string) => {
      const state = await withDatabase((database) => messageState(database.sql, queueMessageId));
      if (!state) throw new UsageError(`no request ${queueMessageId}`);
      printJson(state);
    });

  program
    .command('callbacks')
    .description('callback delivery of interface B')
    .command('replay')
    .description('send the failed callbacks of a request again, on a fresh retry schedule')
    .argument('<queueMessageId>', 'the queueMessageId of the acknowledgement', queueMessageIdArgument)
    .action(async (queueMessageId: string) => {
      const replayed = await withDatabase(async (database, context) => {
        if (!(await database.sql.row(REQUEST_EXISTS, [queueMessageId]))) throw new UsageError(`no request ${queueMessageId}`);
        // The request's copy of a document goes once its callbacks fail for good (retention.ts): fetch it again.
        const registry = new BuiltInRegistry(database.sql, { latencyMs: context.config.registryLatencyMs, fail: context.config.registryFail });
        await refetchDroppedFile(database.sql, registry, queueMessageId);
        const ids = await replayFailedCallbacks(database.sql, queueMessageId);
        // The running workers send them at once.
        if (ids.length > 0) await database.sql.row(ANNOUNCE_WORK, [WORK_CHANNEL, WORK.callbacks]);
        return ids;
      });
      printJson({ queueMessageId, replayed });
    });

  program
    .command('document')
    .description('document files of interface B')
    .command('save')
    .description('write NAME.xml and NAME.xml.sig from the body of a SendDocumentFileResultResponse callback')
    .argument('<callbackJson>', 'file holding the callback body')
    .requiredOption('--out <dir>', 'directory to write into (created when missing)')
    .action(async (callbackJson: string, options: { out: string }) => {
      let body: { document?: { fileName?: unknown; content?: unknown; signature?: unknown } };
      try {
        body = JSON.parse(await fs.readFile(callbackJson, 'utf8'));
      } catch (error) {
        throw new UsageError(`${callbackJson}: ${(error as Error).message.split('\n')[0]}`);
      }
      const document = body.document;
      if (!document || typeof document.fileName !== 'string' || typeof document.content !== 'string' || typeof document.signature !== 'string') {
        throw new UsageError(`${callbackJson}: not a SendDocumentFileResultResponse body with a document`);
      }
      const fileName = path.basename(document.fileName);
      if (fileName !== document.fileName || fileName.startsWith('.')) throw new UsageError(`${callbackJson}: fileName "${document.fileName}" is not a plain file name`);
      const content = decodeBase64Strict(document.content);
      const signature = decodeBase64Strict(document.signature);
      if (!content || !signature) throw new UsageError(`${callbackJson}: content or signature is not base64`);
      const base = fileName.endsWith('.xml') ? fileName.slice(0, -'.xml'.length) : fileName;
      await fs.mkdir(options.out, { recursive: true });
      const xmlPath = path.join(options.out, `${base}.xml`);
      const sigPath = path.join(options.out, `${base}.xml.sig`);
      await fs.writeFile(xmlPath, content);
      await fs.writeFile(sigPath, signature);
      printJson({ xml: xmlPath, signature: sigPath, bytes: content.length });
    });
}
