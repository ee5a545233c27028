import type { Command } from 'commander';
import { seedDemoPatients } from '../ehr/patients.js';
import { DEMO_CLINIC, seedDemoClinic } from '../emdr/demo.js';
import { printJson, withDatabase } from './program.js';

/**
 * `seed-demo`: idempotent demo data for local runs. Each domain adds its seeding here and
 * reports what it wrote under its own key.
 */
export function registerSeedDemoCommand(program: Command): void {
  program
    .command('seed-demo')
    .description('write demo data (idempotent): demo patients of interface A, the demo clinic of interface B')
    .action(async () => {
      const seeded = await withDatabase(async (database) => ({
        patients: await seedDemoPatients(database.knex),
        clinic: { businessId: DEMO_CLINIC.businessId, created: await seedDemoClinic(database.knex) },
      }));
      printJson(seeded);
    });
}
