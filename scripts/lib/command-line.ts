import { parseArgs, type ParseArgsConfig } from 'node:util';

/**
 * A script's command line, parsed strictly by node:util's parseArgs with -h/--help added: help prints
 * `usage` and exits 0, before the script starts anything; an unknown option, a missing value or an
 * unexpected argument prints one line naming it and exits 2, rather than a stack trace.
 */
export function commandLine<T extends ParseArgsConfig>(name: string, usage: string, config: T): ReturnType<typeof parseArgs<T>> {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ ...config, options: { ...config.options, help: { type: 'boolean', short: 'h' } } });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (typeof code !== 'string' || !code.startsWith('ERR_PARSE_ARGS_')) throw error;
    // The first sentence names the option; the rest is parseArgs' advice about `--`.
    console.error(`${name}: ${(error as Error).message.split('. ')[0]} (--help for the usage)`);
    process.exit(2);
  }
  if (parsed.values.help) {
    console.log(usage);
    process.exit(0);
  }
  // The config parsed is T's with help added: its values are T's and `help`, which was false here.
  return parsed as ReturnType<typeof parseArgs<T>>;
}
