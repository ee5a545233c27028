import { Option, type Command } from 'commander';
import { overlapArgument, printJson, UsageError, type CommandKit } from '../../cli/kit.js';
import { rotateClinicToken, rotateSigningSecret, type Account } from './rotation.js';
import { endSigningOverlapNow, listAccounts, setAccountDisabled, showAccount } from './store.js';

function accountOptions(command: Command): Command {
  return command.requiredOption('--business-id <id>', "the account's businessId").requiredOption('--user <name>', "the account's user name");
}

/** The account the options name (commander hands every option in one object). */
function accountOf(options: Account): Account {
  return { businessId: options.businessId, user: options.user };
}

function noSuchAccount(account: Account): UsageError {
  return new UsageError(`no clinic account ${account.businessId}/${account.user}`);
}

const ROTATION_HELP = `
Run it while the service runs: nothing restarts, and no request or callback fails in between.`;

/**
 * The operator's commands on clinic accounts, beside `clients add`: `list`, `show`, `disable`,
 * `enable`, `rotate-token` and `rotate-signing-secret` (each self-contained, so other subcommands
 * of the group can come and go beside them).
 */
export function registerAccountCommands(clients: Command, { withDatabase }: CommandKit): void {
  clients
    .command('list')
    .description('the clinic accounts (no secrets): state, organizations, callback URLs, rotations under way')
    .addOption(new Option('--state <state>', 'only active or only disabled accounts').choices(['active', 'disabled']))
    .option('--business-id <id>', 'only the accounts of this businessId')
    .action(async (options: { state?: 'active' | 'disabled'; businessId?: string }) => {
      printJson({ clients: await withDatabase((database) => listAccounts(database.knex, options)) });
    });

  accountOptions(clients.command('show'))
    .description('one clinic account (no secrets), with its requests by state and its pending and failed callbacks')
    .action(async (options: Account) => {
      const account = accountOf(options);
      const shown = await withDatabase((database) => showAccount(database.knex, account.businessId, account.user));
      if (!shown) throw noSuchAccount(account);
      printJson(shown);
    });

  for (const [name, disabled] of [
    ['disable', true],
    ['enable', false],
  ] as const) {
    accountOptions(clients.command(name))
      .description(
        disabled
          ? 'refuse every request of the account (401, as a wrong token) until enable; its callbacks already due still go out'
          : 'accept the account again after disable (same token, same secrets)',
      )
      .action(async (options: Account) => {
        const account = accountOf(options);
        if (!(await withDatabase((database) => setAccountDisabled(database.knex, account.businessId, account.user, disabled)))) throw noSuchAccount(account);
        printJson({ ...account, state: disabled ? 'disabled' : 'active' });
      });
  }

  accountOptions(clients.command('rotate-token'))
    .description("give the account a new token (printed once); the old one stays valid for --grace, so the clinic's МИС switches without a refused request")
    .addOption(
      new Option('--grace <duration>', 'how long the old token stays valid too (0: refused at once, e.g. when it leaked; at most 30d)')
        .argParser(overlapArgument('--grace'))
        .default(86_400_000, '24h'),
    )
    .addHelpText('after', ROTATION_HELP)
    .action(async (options: Account & { grace: number }) => {
      const account = accountOf(options);
      const rotated = await withDatabase((database) => rotateClinicToken(database.knex, account, options.grace));
      if (!rotated) throw noSuchAccount(account);
      printJson(rotated);
    });

  accountOptions(clients.command('rotate-signing-secret'))
    .description(
      'give the account a new callback signing secret (printed once); during --overlap each callback is signed with the new and the old secret, so the receiver switches at any moment',
    )
    .addOption(
      new Option('--overlap <duration>', 'how long callbacks carry both signatures (0: the new one alone at once; at most 30d)')
        .argParser(overlapArgument('--overlap'))
        .default(86_400_000, '24h'),
    )
    .option('--finish', 'end the overlap under way now: the new secret alone signs (no new secret is made)')
    .addHelpText('after', ROTATION_HELP)
    .action(async (options: Account & { overlap: number; finish?: boolean }) => {
      const account = accountOf(options);
      if (options.finish) {
        if (!(await withDatabase((database) => endSigningOverlapNow(database.knex, account.businessId, account.user)))) {
          throw new UsageError(`no signing secret overlap under way for ${account.businessId}/${account.user}`);
        }
        printJson({ ...account, overlapEndsAt: null });
        return;
      }
      const rotated = await withDatabase(async (database) => rotateSigningSecret(database.knex, await database.dataKey(), account, options.overlap));
      if (!rotated) throw noSuchAccount(account);
      printJson(rotated);
    });
}
