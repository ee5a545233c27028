import type { Knex } from 'knex';
import { replaceSigningSecret } from '../accounts/store.js';
import { updateClinicAccount } from '../accounts/update.js';
import { createClinicAccount, DuplicateClinicAccountError, sealClinicSecret } from '../accounts/clients.js';

/**
 * The demo clinic account: documented credentials for trying interface B locally (README,
 * "Interface B"). Never use these outside a demo: anybody can read them here. Its signing secret is
 * not among them: each data directory gets a fresh one (DEMO_SIGNING_SECRET_FILE), so a receiver of
 * one local gateway rejects the callbacks of another.
 */
export const DEMO_CLINIC = {
  businessId: '4000125',
  user: 'demo-clinic',
  token: 'demo-clinic-token',
  callbackUrls: ['http://127.0.0.1:9090'],
  callbackToken: 'demo-callback-token',
} as const;

/** Where `seed-demo` keeps the demo clinic's signing secret on the embedded PostgreSQL: DATA_DIR/demo-signing-secret (mode 0600). */
export const DEMO_SIGNING_SECRET_FILE = 'demo-signing-secret';

/**
 * The mock's signing secret (`make mock`, scripts/mock-relay.ts; MOCK_SIGNING_SECRET overrides it).
 * Public on purpose: the mock serves a developer's own receiver, and has no data directory.
 */
export const MOCK_SIGNING_SECRET = 'whsec_bW9jay1zaWduaW5nLXNlY3JldC1ub3QtZm9yLXByb2R1Y3Rpb24=';

export interface DemoClinicSettings {
  signingSecret: string;
  /** The demo clinic's callback URL; an existing clinic keeps its own when absent. */
  callbackUrl?: string;
}

/**
 * Creates the demo clinic with `settings`, or brings an existing one to them (its signing secret
 * always, its callback URL when one is given). Returns whether it was created and its callback URLs.
 */
export async function seedDemoClinic(knex: Knex, dataKey: Buffer, settings: DemoClinicSettings): Promise<{ created: boolean; callbackUrls: string[] }> {
  const callbackUrls = settings.callbackUrl === undefined ? [...DEMO_CLINIC.callbackUrls] : [settings.callbackUrl];
  try {
    await createClinicAccount(knex, dataKey, { ...DEMO_CLINIC, callbackUrls, organizations: null, signingSecret: settings.signingSecret });
    return { created: true, callbackUrls };
  } catch (error) {
    if (!(error instanceof DuplicateClinicAccountError)) throw error;
  }
  // The data directory's secret alone (a rotation's overlap, if one ran, ends).
  const sealed = sealClinicSecret(dataKey, 'signing_secret', DEMO_CLINIC.businessId, DEMO_CLINIC.user, settings.signingSecret);
  await knex.transaction((trx) => replaceSigningSecret(trx, DEMO_CLINIC.businessId, DEMO_CLINIC.user, sealed, undefined));
  const updated = await updateClinicAccount(knex, {
    businessId: DEMO_CLINIC.businessId,
    user: DEMO_CLINIC.user,
    ...(settings.callbackUrl === undefined ? {} : { callbackUrls }),
  });
  return { created: false, callbackUrls: updated.callbackUrls };
}
