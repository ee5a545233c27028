import { loadConfig, parseDuration, type Config } from '../config/config.js';
import type { Database } from '../db/database.js';
import type { NamedMigration } from '../db/migrations/index.js';
import { createLogger, type Logger } from '../logging/logger.js';

/**
 * What every command of the CLI shares: its errors, its output, and the database it opens. The
 * domains' commands import this module only; the program that assembles them (src/program.ts)
 * sits above the domains and hands them the migrated database through `CommandKit`.
 */

/** Exit code for bad arguments or bad configuration. */
export const USAGE_EXIT_CODE = 2;

/** Thrown by commands for an input problem the user can fix: one line, exit code 2. */
export class UsageError extends Error {}

export interface CommandContext {
  config: Config;
  /** Logs go to stderr so that a command's stdout carries only its JSON answer. */
  logger: Logger;
}

export function commandContext(): CommandContext {
  const config = loadConfig();
  return { config, logger: createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel, process.stderr) };
}

/** A grace or overlap longer than this keeps an old credential alive too long to call it rotated. */
const LONGEST_OVERLAP_MS = 30 * 86_400_000;

/** Parses a rotation's grace or overlap option (0 to 30d) in ms, or a usage error naming the option. */
export function overlapArgument(option: string) {
  return (value: string): number => {
    const ms = parseDuration(value);
    if (ms === undefined || ms > LONGEST_OVERLAP_MS) throw new UsageError(`${option} "${value}" is not a duration from 0 to 30d (e.g. 0, 12h, 7d)`);
    return ms;
  };
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/** What the program gives each domain's commands. */
export interface CommandKit {
  /** Runs `work` against the service database (migrated), then closes it. */
  withDatabase<T>(work: (database: Database, context: CommandContext) => Promise<T>): Promise<T>;
}

/**
 * `loadMigrations`: the migration list, loaded with the database driver when a command first needs
 * the database, so that `--help` and a command's usage errors start without either.
 */
export function commandKit(loadMigrations: () => Promise<readonly NamedMigration[]>): CommandKit {
  return {
    async withDatabase(work) {
      const context = commandContext();
      const [{ migrateToLatest, openDatabase }, migrations] = await Promise.all([import('../db/database.js'), loadMigrations()]);
      const database = await openDatabase(context.config, context.logger, { adopt: false });
      try {
        await migrateToLatest(database, migrations);
        return await work(database, context);
      } finally {
        await database.close();
      }
    },
  };
}
