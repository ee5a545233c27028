import type { Knex } from 'knex';
import { createClinicAccount, DuplicateClinicAccountError } from './clients.js';

/**
 * The demo clinic account: fixed, documented credentials for trying interface B locally (README,
 * "Interface B"). Never use these outside a demo: anybody can read them here.
 */
export const DEMO_CLINIC = {
  businessId: '4000125',
  user: 'demo-clinic',
  token: 'demo-clinic-token',
  callbackUrls: ['http://127.0.0.1:9090'],
  callbackToken: 'demo-callback-token',
  signingSecret: 'whsec_ZGVtby1zaWduaW5nLXNlY3JldC1ub3QtZm9yLXByb2R1Y3Rpb24=',
} as const;

/** Creates the demo clinic account unless it exists; returns whether it was created. */
export async function seedDemoClinic(knex: Knex, dataKey: Buffer): Promise<boolean> {
  try {
    await createClinicAccount(knex, dataKey, { ...DEMO_CLINIC, callbackUrls: [...DEMO_CLINIC.callbackUrls], organizations: null });
    return true;
  } catch (error) {
    if (error instanceof DuplicateClinicAccountError) return false;
    throw error;
  }
}
