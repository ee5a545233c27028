import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { startCallbackReceiver, type CallbackReceiver } from '../support/callback-receiver.js';
import { repoRoot } from '../support/cli.js';
import { addClinic, FIXTURE_SIGNATURE, FIXTURE_XML } from '../support/emdr.js';
import { runVenvProgram } from '../support/python.js';
import { startTestService, type TestService } from '../support/service.js';

/**
 * A partner in another language: the pytest suite of test/partner/python drives the live service
 * through the Python client `make clients` generates from specs/openapi.yaml.
 */
describe('a clinic integrating in Python through the generated client', () => {
  let service: TestService;
  let receiver: CallbackReceiver;
  let clinic: CreatedClinicAccount;

  beforeAll(async () => {
    receiver = await startCallbackReceiver();
    service = await startTestService();
    clinic = await addClinic(service, receiver.url);
    receiver.signingSecret = clinic.signingSecret;
  });

  afterAll(async () => {
    await service?.stop();
    await receiver?.close();
  });

  it('registers, finds, reads, inspects and demands a document: every pytest case passes', async () => {
    const result = await runVenvProgram('pytest', ['-q'], {
      cwd: path.join(repoRoot, 'test/partner/python'),
      env: {
        EHR_GATEWAY_URL: service.publicUrl,
        CLINIC_BUSINESS_ID: clinic.businessId,
        CLINIC_USER: clinic.user,
        CLINIC_TOKEN: clinic.token,
        DOCUMENT_BASE64: FIXTURE_XML.toString('base64'),
        SIGNATURE_BASE64: FIXTURE_SIGNATURE.toString('base64'),
      },
      timeoutMs: 50_000,
    });
    expect(result.stdout + result.stderr).toMatch(/^6 passed in /m);
    expect(result.code).toBe(0);
  });

  it('had every callback of those requests verified and matching its schema', async () => {
    // Registration (acceptance + result) and the demand's acceptance + file.
    await receiver.waitFor((received) => received.length >= 4);
    expect(receiver.received.map((callback) => callback.signatureValid)).toEqual([true, true, true, true]);
    expect(receiver.schemaViolations).toEqual([]);
  });
});
