import { Option, type Command } from 'commander';
import { printJson, UsageError, type CommandKit } from '../../cli/kit.js';
import { checkCallbackUrls, checkOrganizations, collect } from './client-options.js';
import { ClinicAccountChoiceError, updateClinicAccount } from './update.js';

const UPDATE_HELP = `
Each list given replaces the account's: --callback-url URL (repeatable; the first is the default),
--organization OID (repeatable) or --all-organizations. Callbacks not yet delivered to a URL the
account no longer lists, and requests that will still call back, move to the new default URL (a
request a worker holds at that moment may still call back the old one once). Prints the account
as it now is, without its secrets, and how many callbacks and requests moved.`;

/** `clients update`: an existing clinic account's callback URLs and organizations. */
export function registerClientsUpdateCommand(clients: Command, withDatabase: CommandKit['withDatabase']): void {
  clients
    .command('update')
    .description("change an existing clinic account's callback URLs or organizations")
    .requiredOption('--business-id <id>', 'businessId of the account')
    .option('--user <name>', 'user name of the account (needed when the businessId has several)')
    .addOption(
      new Option('--callback-url <url>', 'base URL of the clinic system for callbacks (repeatable; the first is the default)').argParser(collect).default([]),
    )
    .addOption(new Option('--organization <oid>', 'OID of an organization the clinic acts for (repeatable)').argParser(collect).default([]))
    .option('--all-organizations', 'the clinic may act for every organization')
    .addHelpText('after', UPDATE_HELP)
    .action(async (options: { businessId: string; user?: string; callbackUrl: string[]; organization: string[]; allOrganizations?: boolean }) => {
      await checkCallbackUrls(options.callbackUrl);
      checkOrganizations(options.organization, options.allOrganizations);
      const organizations = options.allOrganizations ? null : options.organization.length > 0 ? options.organization : undefined;
      if (options.callbackUrl.length === 0 && organizations === undefined)
        throw new UsageError('nothing to change: give --callback-url, --organization or --all-organizations');
      const updated = await withDatabase(async (database) => {
        try {
          return await updateClinicAccount(database.knex, {
            businessId: options.businessId,
            ...(options.user === undefined ? {} : { user: options.user }),
            ...(options.callbackUrl.length > 0 ? { callbackUrls: options.callbackUrl } : {}),
            ...(organizations === undefined ? {} : { organizations }),
          });
        } catch (error) {
          if (error instanceof ClinicAccountChoiceError) throw new UsageError(error.message);
          throw error;
        }
      });
      printJson(updated);
    });
}
