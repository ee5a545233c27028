import type { Command } from 'commander';
import { printJson, type CommandKit } from './cli/kit.js';
import { previousKeyOf } from './db/encryption.js';
import { checkSealedColumns, resealSealedColumns, type SealedColumn, type SealedColumnReport } from './db/sealed-columns.js';
import { ehrSealedColumns } from './ehr/credentials/secrets.js';
import { emdrSealedColumns } from './emdr/accounts/clients.js';

/** Every column of sealed secrets, assembled here above the domains (as src/migrations.ts assembles their tables). */
export const SEALED_COLUMNS: readonly SealedColumn[] = [...ehrSealedColumns, ...emdrSealedColumns];

const ROTATE_HELP = `
A rotation of DATA_KEY without downtime (docs/operations.md, section 4):
  1. with several processes: every process gets DATA_KEY=old, DATA_KEY_PREVIOUS=new (a rolling restart);
  2. every process gets DATA_KEY=new, DATA_KEY_PREVIOUS=old (a rolling restart);
  3. ehr-gateway data-key rotate (this command, with the variables of step 2) re-seals every secret under DATA_KEY;
  4. ehr-gateway data-key check answers "previous": 0 and "unreadable": 0 for every column;
  5. DATA_KEY_PREVIOUS is removed everywhere (a rolling restart).
It may run again at any time: values already under DATA_KEY are left as they are.`;

function totals(reports: readonly SealedColumnReport[]) {
  const sum = (field: 'sealed' | 'current' | 'previous' | 'resealed' | 'unreadable') => reports.reduce((total, report) => total + report[field], 0);
  return { sealed: sum('sealed'), current: sum('current'), previous: sum('previous'), resealed: sum('resealed'), unreadable: sum('unreadable') };
}

/** `data-key check` and `data-key rotate`; exit 1 when a secret opens with neither key (or, for check, needs the previous one). */
export function registerDataKeyCommands(program: Command, { withDatabase }: CommandKit): void {
  const dataKey = program.command('data-key').description('the data key (DATA_KEY) that seals the secrets kept at rest');

  dataKey
    .command('check')
    .description(
      'open every sealed secret and count, per column, those under DATA_KEY, those that need DATA_KEY_PREVIOUS and those neither opens; exit 1 unless all are under DATA_KEY',
    )
    .action(async () => {
      const reports = await withDatabase(async (database) => checkSealedColumns(database.knex, await database.dataKey(), SEALED_COLUMNS));
      const total = totals(reports);
      printJson({ columns: reports, total });
      if (total.previous > 0 || total.unreadable > 0) process.exitCode = 1;
    });

  dataKey
    .command('rotate')
    .description('re-seal under DATA_KEY every secret that only DATA_KEY_PREVIOUS opens, while the service runs; exit 1 when a secret opens with neither')
    .addHelpText('after', ROTATE_HELP)
    .action(async () => {
      const reports = await withDatabase(async (database) => {
        const key = await database.dataKey();
        if (!previousKeyOf(key)) process.stderr.write('ehr-gateway: DATA_KEY_PREVIOUS is not set: only values already under DATA_KEY can be opened\n');
        return resealSealedColumns(database.knex, key, SEALED_COLUMNS);
      });
      const total = totals(reports);
      printJson({ columns: reports, total });
      if (total.unreadable > 0) process.exitCode = 1;
    });
}
