import type { Command } from 'commander';
import { printJson, UsageError, type CommandKit } from './cli/kit.js';
import { loadConfig } from './config/config.js';
import { seedDemoPatients } from './ehr/patients.js';
import { DEMO_CLINIC, seedDemoClinic } from './emdr/demo.js';

/**
 * `seed-demo`: idempotent demo data for local runs. Each domain adds its seeding here and
 * reports what it wrote under its own key. The demo clinic's token is public (README), so on a
 * database of DATABASE_URL, which may be a shared or production one, it takes `--force`.
 */
export function registerSeedDemoCommand(program: Command, { withDatabase }: CommandKit): void {
  program
    .command('seed-demo')
    .description('write demo data (idempotent): demo patients of interface A, the demo clinic of interface B')
    .option('--force', 'seed the database of DATABASE_URL too (the demo clinic\'s token is public: never on a real database)')
    .action(async (options: { force?: boolean }) => {
      // Refused before the database is opened (and migrated).
      if (loadConfig().databaseUrl && !options.force) {
        throw new UsageError(`seed-demo: refusing to write the demo clinic (public token "${DEMO_CLINIC.token}") to the database of DATABASE_URL; add --force if it is a demo database`);
      }
      const seeded = await withDatabase(async (database) => ({
        patients: await seedDemoPatients(database.knex),
        clinic: { businessId: DEMO_CLINIC.businessId, created: await seedDemoClinic(database.knex, await database.dataKey()) },
      }));
      printJson(seeded);
    });
}
