import fs from 'node:fs/promises';
import path from 'node:path';
import type { Command } from 'commander';
import { printJson, UsageError, type CommandKit } from './cli/kit.js';
import { loadConfig } from './config/config.js';
import { createFileOnce } from './db/encryption.js';
import type { Database } from './db/database.js';
import { createApiKey } from './ehr/credentials/api-keys.js';
import { seedDemoPatients, upsertPatients } from './ehr/patients/patients.js';
import { checkCallbackUrls } from './emdr/accounts/client-options.js';
import { newSigningSecret } from './emdr/accounts/clients.js';
import { DEMO_CLINIC, DEMO_SIGNING_SECRET_FILE, seedDemoClinic } from './emdr/demo/demo-clinic.js';
import type { PatientWriter } from './record/mapping/patient.js';

/** The record's imports write their patients into interface A's patient source (ehr_patients). */
export function patientWriter(database: Database): PatientWriter {
  return async (patients) => {
    await database.knex.transaction((trx) => upsertPatients(trx, patients));
  };
}

/** The demo back-office api key of the demo organization: public (README), like the demo clinic's token. */
export const DEMO_API_KEY = 'demo-api-key-not-for-production';

const SEED_HELP = `
The demo clinic (businessId ${DEMO_CLINIC.businessId}, user ${DEMO_CLINIC.user}, token ${DEMO_CLINIC.token}, callback token
${DEMO_CLINIC.callbackToken}) calls back ${DEMO_CLINIC.callbackUrls[0]} unless --callback-url says otherwise; a later
--callback-url changes an existing demo clinic's (undelivered callbacks follow). Its signing secret is
made once per data directory into DATA_DIR/${DEMO_SIGNING_SECRET_FILE} (mode 0600) and reused; with
DATABASE_URL, or with --signing-secret, the one given or a fresh one each run. The output names it.
The demo patient demo-1 gets a medical record (imported from FHIR), and the demo organization the
back-office api key ${DEMO_API_KEY}.`;

/**
 * The demo clinic's signing secret: the one given, else (on the embedded PostgreSQL) the one of the
 * data directory, made once; with DATABASE_URL there is no data directory of the database, so a fresh one.
 */
export async function demoSigningSecret(
  given: string | undefined,
  dataDir: string | undefined,
): Promise<{ signingSecret: string; signingSecretFile?: string }> {
  if (given !== undefined) return { signingSecret: given };
  if (dataDir === undefined) return { signingSecret: newSigningSecret() };
  const file = path.join(dataDir, DEMO_SIGNING_SECRET_FILE);
  await createFileOnce(file, () => `${newSigningSecret()}\n`);
  return { signingSecret: (await fs.readFile(file, 'utf8')).trim(), signingSecretFile: file };
}

/**
 * `seed-demo`: idempotent demo data for local runs. Each domain adds its seeding here and
 * reports what it wrote under its own key. The demo clinic's token is public (README), so on a
 * database of DATABASE_URL, which may be a shared or production one, it takes `--force`.
 */
export function registerSeedDemoCommand(program: Command, { withDatabase }: CommandKit): void {
  program
    .command('seed-demo')
    .description("write demo data (idempotent): demo patients of interface A with demo-1's medical record and a demo api key, the demo clinic of interface B")
    .option('--force', "seed the database of DATABASE_URL too (the demo clinic's token is public: never on a real database)")
    .option('--callback-url <url>', `the demo clinic's callback URL (default ${DEMO_CLINIC.callbackUrls[0]} for a new one)`)
    .option('--signing-secret <whsec>', "the demo clinic's signing secret, instead of the data directory's")
    .addHelpText('after', SEED_HELP)
    .action(async (options: { force?: boolean; callbackUrl?: string; signingSecret?: string }) => {
      const config = loadConfig();
      // Refused before the database is opened (and migrated).
      if (config.databaseUrl && !options.force) {
        throw new UsageError(
          `seed-demo: refusing to write the demo clinic (public token "${DEMO_CLINIC.token}") and the demo api key to the database of DATABASE_URL; add --force if it is a demo database`,
        );
      }
      if (options.callbackUrl !== undefined) await checkCallbackUrls([options.callbackUrl]);
      if (options.signingSecret !== undefined && !/^whsec_[A-Za-z0-9+/]{32,}={0,2}$/.test(options.signingSecret)) {
        throw new UsageError('--signing-secret is a Standard Webhooks secret: whsec_ and at least 24 bytes in base64');
      }
      const secret = await demoSigningSecret(options.signingSecret, config.databaseUrl ? undefined : config.dataDir);
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
          clinic: {
            businessId: DEMO_CLINIC.businessId,
            ...(await seedDemoClinic(database.knex, await database.dataKey(), {
              signingSecret: secret.signingSecret,
              ...(options.callbackUrl === undefined ? {} : { callbackUrl: options.callbackUrl }),
            })),
            ...secret,
          },
        };
      });
      printJson(seeded);
    });
}
