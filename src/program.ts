import { Command, CommanderError, Option } from 'commander';
import { registerAuditCommand } from './audit/commands.js';
import { commandContext, commandKit, printJson, USAGE_EXIT_CODE, UsageError } from './cli/kit.js';
import { CONFIG_VARIABLES, ConfigError, loadConfig } from './config/config.js';
import { registerDataKeyCommands } from './data-key.js';
import { registerApiKeyCommands } from './ehr/credentials/api-key-commands.js';
import { registerEhrCommands } from './ehr/commands.js';
import { registerEmdrCommands } from './emdr/commands.js';
import { createLogger } from './logging/logger.js';
import { registerRecordCommands } from './record/commands.js';
import { patientWriter, registerSeedDemoCommand } from './seed-demo.js';
import { ROLES, type Role } from './roles.js';

const ENVIRONMENT_HELP = [
  '',
  'Environment:',
  ...CONFIG_VARIABLES.map((variable) => `  ${variable.name.padEnd(24)} ${variable.meaning} (default ${variable.fallback})`),
].join('\n');

/** Signals closer together than this are one request to stop. */
const REPEATED_SIGNAL_WINDOW_MS = 2000;

async function serve(options: { only?: Role }): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  const roles = new Set<Role>(options.only ? [options.only] : ROLES);
  const { startService } = await import('./service.js');
  const service = await startService(config, logger, roles);
  await new Promise<void>((resolve) => {
    let stoppingSince: number | undefined;
    const shutdown = (signal: NodeJS.Signals) => {
      if (stoppingSince !== undefined) {
        // make and terminals pass one Ctrl-C or SIGTERM on to the whole group: a repeat that close
        // is the same request. A later one is a deliberate second Ctrl-C: stop waiting.
        if (Date.now() - stoppingSince < REPEATED_SIGNAL_WINDOW_MS) return;
        logger.warn({ signal }, 'second signal: exiting without waiting');
        process.exit(1);
      }
      stoppingSince = Date.now();
      logger.info({ signal }, 'shutting down');
      service.stop().then(resolve, (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exitCode = 1;
        resolve();
      });
    };
    process.on('SIGTERM', shutdown);
    process.on('SIGINT', shutdown);
  });
}

/**
 * The migration list, and with it every domain's tables; like the service (`serve`) and the database
 * driver, loaded by the command that needs it: `--help`, usage errors and the lighter commands start
 * without them, and a command's process (e.g. records import's bounded heap) holds only what it runs.
 */
async function loadMigrations() {
  return (await import('./migrations.js')).MIGRATIONS;
}

export function buildProgram(): Command {
  const program = new Command('ehr-gateway')
    .description('EHR JSON-RPC server (interface A) and ЭМД registry gateway (interface B)')
    .showHelpAfterError(false)
    .exitOverride()
    .configureOutput({ outputError: (text, write) => write(`${text.split('\n')[0]!.trim()}\n`) });

  program
    .command('serve')
    .description('run the service: interface A, interface B and the callback workers')
    .addOption(new Option('--only <role>', 'run one role, so roles scale out separately over one database').choices(ROLES))
    .addHelpText('after', ENVIRONMENT_HELP)
    .action(serve);

  program
    .command('migrate')
    .description('apply pending database migrations and print the ones applied')
    .addHelpText('after', ENVIRONMENT_HELP)
    .action(async () => {
      const context = commandContext();
      const [{ migrateToLatest, openDatabase }, migrations] = await Promise.all([import('./db/database.js'), loadMigrations()]);
      const database = await openDatabase(context.config, context.logger, { adopt: false });
      try {
        printJson({ applied: await migrateToLatest(database, migrations) });
      } finally {
        await database.close();
      }
    });

  const kit = commandKit(loadMigrations);
  registerSeedDemoCommand(program, kit);
  registerEhrCommands(program, kit);
  registerApiKeyCommands(program, kit);
  registerRecordCommands(program, kit, patientWriter);
  registerEmdrCommands(program, kit);
  registerAuditCommand(program, kit);
  registerDataKeyCommands(program, kit);

  for (const command of program.commands) {
    command.exitOverride().configureOutput(program.configureOutput());
    if (command.commands.length > 0) {
      // A group without its subcommand: one line, not the whole help.
      const subcommands = command.commands.map((subcommand) => subcommand.name()).join(', ');
      command.action(() => {
        throw new UsageError(`${command.name()}: name a subcommand (${subcommands}); see 'ehr-gateway ${command.name()} --help'`);
      });
    }
  }
  return program;
}

/** Parses argv and runs the command; returns the process exit code. */
export async function runCli(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
  try {
    if (argv.length === 0) {
      process.stderr.write(program.helpInformation());
      return USAGE_EXIT_CODE;
    }
    await program.parseAsync([...argv], { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help exits 0; help shown because a subcommand is missing counts as bad arguments.
      return error.exitCode === 0 ? 0 : USAGE_EXIT_CODE;
    }
    if (error instanceof ConfigError || error instanceof UsageError) {
      process.stderr.write(`ehr-gateway: ${error.message}\n`);
      return USAGE_EXIT_CODE;
    }
    process.stderr.write(`ehr-gateway: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}
