import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, PORT_ATTEMPTS } from '../../src/db/embedded-postgres.js';
import { DEMO_CLINIC } from '../../src/emdr/demo/demo-clinic.js';
import { runCli } from '../support/cli.js';
import { FIXTURE_SIGNATURE, FIXTURE_XML } from '../support/emdr.js';
import { runJavaPartner } from '../support/java.js';
import { startTestService, type TestService } from '../support/service.js';

/**
 * A МИС vendor in Java: test/partner/java drives the live service as the demo clinic through the
 * client openapi-generator makes from specs/openapi.yaml (`make clients`), with its own callback
 * receiver (JDK HttpServer, signatures checked with the JDK's HMAC) on a port registered for the clinic.
 */
describe('a clinic integrating in Java through the generated client', () => {
  let service: TestService;
  let callbackUrl: string;
  let signingSecret: string;

  /** The demo clinic, calling back the Java program's receiver on `port`, with a fresh signing secret it prints. */
  async function seedDemoClinic(port: number): Promise<void> {
    callbackUrl = `http://127.0.0.1:${port}`;
    const seeded = await runCli(['seed-demo', '--force', '--callback-url', callbackUrl], service.env);
    expect(seeded.code, seeded.stderr).toBe(0);
    signingSecret = (JSON.parse(seeded.stdout) as { clinic: { signingSecret: string } }).clinic.signingSecret;
  }

  beforeAll(async () => {
    service = await startTestService();
    await seedDemoClinic(await freePort());
  });

  afterAll(async () => {
    await service?.stop();
  });

  it('calls every operation, reads an error body as ErrorResponse, verifies all four callbacks: every check of the Java program passes', {
    timeout: 120_000,
  }, async () => {
    const runPartner = () =>
      runJavaPartner(
        {
          EHR_GATEWAY_URL: service.publicUrl,
          CLINIC_BUSINESS_ID: DEMO_CLINIC.businessId,
          CLINIC_USER: DEMO_CLINIC.user,
          CLINIC_TOKEN: DEMO_CLINIC.token,
          CALLBACK_URL: callbackUrl,
          CALLBACK_TOKEN: DEMO_CLINIC.callbackToken,
          CLINIC_SIGNING_SECRET: signingSecret,
          DOCUMENT_BASE64: FIXTURE_XML.toString('base64'),
          SIGNATURE_BASE64: FIXTURE_SIGNATURE.toString('base64'),
        },
        110_000,
      );
    // The JDK's receiver binds the port of CALLBACK_URL, which the account must name before the program runs
    // (it cannot bind 0 and tell): when another process took the port first, the clinic is seeded again on another.
    let result = await runPartner();
    for (let attempt = 2; attempt <= PORT_ATTEMPTS && /java\.net\.BindException: Address already in use/.test(result.stderr); attempt += 1) {
      await seedDemoClinic(await freePort());
      result = await runPartner();
    }
    const output = result.stdout + result.stderr;
    process.stdout.write(`${output.match(/^(java partner: .*|FAILED: .*)$/m)?.[0] ?? 'java partner: no summary'}\n`);
    for (const operation of ['getHealth', 'getReadiness', 'registerDocument', 'searchRegistryItem', 'getRegistryItem', 'getMessage', 'demandContent'])
      expect(output).toMatch(new RegExp(`^ok  ${operation}: `, 'm'));
    for (const callback of [
      'SendRegisterDocumentResponse',
      'SendRegisterDocumentResultResponse',
      'SendDemandContentResponse',
      'SendDocumentFileResultResponse',
    ])
      expect(output).toMatch(new RegExp(`^ok  ${callback}: signed`, 'm'));
    expect(output).toMatch(/^java partner: 19 checks passed$/m);
    expect(result.code, output).toBe(0);
  });
});
