import type { Command } from 'commander';
import { printJson, UsageError, type CommandKit } from './cli/kit.js';
import { loadConfig } from './config/config.js';
import type { Database } from './db/database.js';
import { createApiKey } from './ehr/api-keys.js';
import { seedDemoPatients, upsertPatients } from './ehr/patients.js';
import { DEMO_CLINIC, seedDemoClinic } from './emdr/demo.js';
import type { PatientWriter } from './record/fhir/patient.js';

/** The record's imports write their patients into interface A's patient source (ehr_patients). */
export function patientWriter(database: Database): PatientWriter {
  return async (patients) => {
    await database.knex.transaction((trx) => upsertPatients(trx, patients));
  };
}

/** The demo back-office api key of the demo organization: public (README), like the demo clinic's token. */
export const DEMO_API_KEY = 'demo-api-key-not-for-production';

/**
 * `seed-demo`: idempotent demo data for local runs. Each domain adds its seeding here and
 * reports what it wrote under its own key. The demo clinic's token is public (README), so on a
 * database of DATABASE_URL, which may be a shared or production one, it takes `--force`.
 */
export function registerSeedDemoCommand(program: Command, { withDatabase }: CommandKit): void {
  program
    .command('seed-demo')
    .description('write demo data (idempotent): demo patients of interface A with demo-1\'s medical record and a demo api key, the demo clinic of interface B')
    .option('--force', 'seed the database of DATABASE_URL too (the demo clinic\'s token is public: never on a real database)')
    .action(async (options: { force?: boolean }) => {
      // Refused before the database is opened (and migrated).
      if (loadConfig().databaseUrl && !options.force) {
        throw new UsageError(`seed-demo: refusing to write the demo clinic (public token "${DEMO_CLINIC.token}") and the demo api key to the database of DATABASE_URL; add --force if it is a demo database`);
      }
      const seeded = await withDatabase(async (database) => {
        const patients = await seedDemoPatients(database.knex);
        // Loaded here: the FHIR import is seed-demo's and records import's alone, not every command's start.
        const { DEMO_ORGANIZATION, seedDemoRecord } = await import('./record/demo.js');
        const record = await seedDemoRecord(database.sql, patientWriter(database));
        const apiKey = await createApiKey(database.sql, { name: 'demo', organizations: [DEMO_ORGANIZATION], key: DEMO_API_KEY });
        return {
          patients,
          record: { imported: record.imported, updated: record.updated, patients: record.patients },
          apiKey: { organization: DEMO_ORGANIZATION, created: apiKey !== undefined },
          clinic: { businessId: DEMO_CLINIC.businessId, created: await seedDemoClinic(database.knex, await database.dataKey()) },
        };
      });
      printJson(seeded);
    });
}
