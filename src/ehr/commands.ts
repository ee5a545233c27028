import fs from 'node:fs/promises';
import type { Command } from 'commander';
import { printJson, UsageError, type CommandKit } from '../cli/kit.js';
import { IMPORT_FIELDS, readImportRecords, validateImportRecords } from './patients/patient-import.js';
import { upsertPatients } from './patients/patients.js';

const IMPORT_HELP = `
FILE is a JSON array of patients or a CSV file with a header row (told apart by the first
character: "[" means JSON). Fields: ${IMPORT_FIELDS.join(', ')}.
Required: id (the МИС's patient id), surname, name, birthDate (YYYY-MM-DD, years 0001-9999),
gender (the peer SDK's enum: 1 male, 2 female, 3 other, 4 unknown). phone is stored as E.164
(8XXXXXXXXXX = +7XXXXXXXXXX); snils as XXX-XXX-XXX YY; active defaults to true. Text must not
hold NUL characters or lone surrogates. A patient whose id exists is updated.

All or nothing: when any row is rejected, nothing is imported; the report on stdout lists each
rejected row's number (1 = first record), field and reason, never the values; exit code 1.
On success prints {"imported":N}.`;

/** Interface A's commands: `patients import FILE`. */
export function registerEhrCommands(program: Command, { withDatabase }: CommandKit): void {
  const patients = program.command('patients').description('the built-in patient source (the МИС) of interface A');
  patients
    .command('import')
    .description('import patients from a JSON or CSV file, all or nothing')
    .argument('<FILE>', 'JSON array or CSV with a header row')
    .addHelpText('after', IMPORT_HELP)
    .action(async (file: string) => {
      let content: string;
      try {
        content = await fs.readFile(file, 'utf8');
      } catch (error) {
        throw new UsageError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
      }
      let records: Array<Record<string, unknown>>;
      try {
        records = readImportRecords(content);
      } catch (error) {
        // The parser's message names positions and columns, never cell values.
        throw new UsageError(`${file}: ${error instanceof SyntaxError ? 'not valid JSON' : (error as Error).message}`);
      }
      const { patients: valid, rejected } = validateImportRecords(records);
      if (rejected.length > 0) {
        printJson({ imported: 0, rejected });
        process.stderr.write(`ehr-gateway: ${new Set(rejected.map((problem) => problem.row)).size} of ${records.length} rows rejected; nothing imported\n`);
        process.exitCode = 1;
        return;
      }
      const imported = await withDatabase(async (database) => database.knex.transaction((trx) => upsertPatients(trx, valid)));
      printJson({ imported });
    });
}
