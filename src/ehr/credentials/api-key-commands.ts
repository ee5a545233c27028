import { Option, type Command } from 'commander';
import { overlapArgument, printJson, UsageError, type CommandKit } from '../../cli/kit.js';
import { createApiKey, listApiKeys, revokeApiKey, rotateApiKey } from './api-keys.js';

const OID = /^[0-2](\.(0|[1-9][0-9]*))+$/;

function keyId(id: string): string {
  if (!/^[1-9][0-9]{0,17}$/.test(id)) throw new UsageError(`"${id}" is not an api key id`);
  return id;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** `apikeys add|list|revoke`: the back-office keys of interface A's medical record. */
export function registerApiKeyCommands(program: Command, { withDatabase }: CommandKit): void {
  const apikeys = program.command('apikeys').description("back-office api keys of interface A (the envelope's apiKey), scoped to organizations");
  apikeys
    .command('add')
    .description('make an api key for the patients of the organizations; prints it once (only its hash is kept)')
    .addOption(
      new Option('--organization <oid>', 'OID of an organization whose patients the key sees (repeatable, at least one)').argParser(collect).default([]),
    )
    .option('--name <text>', 'what the key is for (shown by list)', '')
    .action(async (options: { organization: string[]; name: string }) => {
      if (options.organization.length === 0) throw new UsageError('give at least one --organization OID');
      for (const oid of options.organization) if (!OID.test(oid)) throw new UsageError(`--organization "${oid}" is not an OID`);
      if (options.name.length > 200) throw new UsageError('--name is longer than 200 characters');
      printJson(await withDatabase(async (database) => createApiKey(database.sql, { name: options.name, organizations: options.organization })));
    });
  apikeys
    .command('list')
    .description('the api keys (id, name, organizations, created, revoked: when it stopped or stops being accepted), never the keys themselves')
    .action(async () => printJson(await withDatabase((database) => listApiKeys(database.sql))));
  apikeys
    .command('revoke')
    .description('revoke an api key by its id: every later call with it answers -33000')
    .argument('<id>', 'the id that add and list print')
    .action(async (id: string) => {
      const revoked = await withDatabase((database) => revokeApiKey(database.sql, keyId(id)));
      if (!revoked) throw new UsageError(`no api key ${id}`);
      printJson({ id, revoked: true });
    });
  apikeys
    .command('rotate')
    .description(
      'give a live api key a successor (same name and organizations, printed once); the old key stays valid for --grace, so the back office switches without a refused call',
    )
    .argument('<id>', 'the id that add and list print')
    .addOption(
      new Option('--grace <duration>', 'how long the old key stays valid too (0: refused at once, e.g. when it leaked; at most 30d)')
        .argParser(overlapArgument('--grace'))
        .default(86_400_000, '24h'),
    )
    .action(async (id: string, options: { grace: number }) => {
      const rotated = await withDatabase((database) => rotateApiKey(database.sql, keyId(id), options.grace));
      if (!rotated) throw new UsageError(`no live api key ${id}`);
      printJson(rotated);
    });
}
