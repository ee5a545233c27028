import fs from 'node:fs/promises';
import path from 'node:path';
import { Option, type Command } from 'commander';
import { printJson, UsageError, type CommandKit } from '../cli/kit.js';
import { decodeBase64Strict, isUuid } from './values/values.js';
import { checkCallbackUrls, checkOrganizations, collect } from './accounts/client-options.js';
import { registerClientsUpdateCommand } from './accounts/update-command.js';
import { registerAccountCommands } from './accounts/commands.js';
import { createClinicAccount, DuplicateClinicAccountError } from './accounts/clients.js';
import { messageState } from './pipeline/lifecycle/messages.js';
import { registerSampleCommand } from './demo/sample-document.js';
import type { VerifyOptions } from './verify-files.js';

function queueMessageIdArgument(value: string): string {
  if (!isUuid(value)) throw new UsageError(`"${value}" is not a queueMessageId (a UUID)`);
  return value;
}

/** `clients add`, `messages show`, `callbacks replay`, `document sample`, `document save`, `document verify`: interface B's commands. */
export function registerEmdrCommands(program: Command, kit: CommandKit): void {
  const { withDatabase } = kit;
  const clients = program.command('clients').description('clinic accounts of interface B');
  clients
    .command('add')
    .description('create a clinic account; prints its token, callback credentials and signing secret (shown once)')
    .requiredOption('--business-id <id>', 'businessId of the clinic in the booking system')
    .requiredOption('--user <name>', 'user name of the account')
    .addOption(
      new Option('--callback-url <url>', 'base URL of the clinic system for callbacks (repeatable; the first is the default)').argParser(collect).default([]),
    )
    .addOption(
      new Option('--organization <oid>', 'OID of an organization the clinic acts for (repeatable); this or --all-organizations is required')
        .argParser(collect)
        .default([]),
    )
    .option('--all-organizations', "the clinic may act for every organization, and demand any document without the patient's SNILS")
    .action(async (options: { businessId: string; user: string; callbackUrl: string[]; organization: string[]; allOrganizations?: boolean }) => {
      if (options.callbackUrl.length === 0) throw new UsageError('give at least one --callback-url');
      await checkCallbackUrls(options.callbackUrl);
      if (options.organization.length === 0 && !options.allOrganizations)
        throw new UsageError('give --organization OID (repeatable), or --all-organizations for an account that acts for every organization');
      checkOrganizations(options.organization, options.allOrganizations);
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
  registerAccountCommands(clients, kit);

  registerClientsUpdateCommand(clients, withDatabase);

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
      const replayed = await withDatabase(async (database) => {
        // Loaded here: the delivery stage (its HTTP client) is this command's alone among the commands.
        const { replayRequestCallbacks } = await import('./clinic-messages.js');
        const replayed = await replayRequestCallbacks({ sql: database.sql }, queueMessageId);
        if (replayed === undefined) throw new UsageError(`no request ${queueMessageId}`);
        return replayed;
      });
      printJson({ queueMessageId, replayed });
    });

  const document = program.command('document').description('document files of interface B');
  registerSampleCommand(document);
  document
    .command('verify')
    .description(
      "check a document and its detached signatures as the gateway's acceptance stage does, the registry's signature rules included: exit 0 valid, 1 invalid (one line per failure)",
    )
    .argument('<document>', 'the XML file')
    .argument('<signatures...>', "the organization's detached CMS signature (.xml.sig, DER or BER), then the personal ones")
    .option('--trust-store <dir>', 'folder of PEM roots and intermediates the signer must chain to (without it, the chain is not checked)')
    .option('--creation-date-time <instant>', "the document's creationDateTime (RFC 3339): the certificates must be valid at it")
    .option('--kind <code>', 'the kind (NSI 1.2.643.5.1.13.13.11.1520), checked against the kinds table on the creation date')
    .addOption(
      new Option(
        '--signer <block>',
        "a personal signature's signer block, SNILS[,LAST,FIRST[,MIDDLE[,LOCAL_ID]]], in the order of the personal signatures (repeatable): checked against its certificate and the document's medical workers",
      )
        .argParser(collect)
        .default([]),
    )
    // Loaded here: the signature checks are this command's alone, not every command's start.
    .action(async (documentPath: string, signaturePaths: string[], options: VerifyOptions) => {
      const { verifyDocumentPair } = await import('./verify-files.js');
      await verifyDocumentPair(documentPath, signaturePaths, options);
    });
  document
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
      if (fileName !== document.fileName || fileName.startsWith('.'))
        throw new UsageError(`${callbackJson}: fileName "${document.fileName}" is not a plain file name`);
      const content = decodeBase64Strict(document.content);
      const signature = decodeBase64Strict(document.signature);
      if (!content || !signature) throw new UsageError(`${callbackJson}: content or signature is not base64`);
      const base = fileName.endsWith('.xml') ? fileName.slice(0, -'.xml'.length) : fileName;
      // A medical document: readable by its owner only (a folder made here, 0700; the files, 0600, also when they existed).
      await fs.mkdir(options.out, { recursive: true, mode: 0o700 });
      const xmlPath = path.join(options.out, `${base}.xml`);
      const sigPath = path.join(options.out, `${base}.xml.sig`);
      for (const [file, bytes] of [
        [xmlPath, content],
        [sigPath, signature],
      ] as const) {
        await fs.writeFile(file, bytes, { mode: 0o600 });
        await fs.chmod(file, 0o600);
      }
      printJson({ xml: xmlPath, signature: sigPath, bytes: content.length });
    });
}
