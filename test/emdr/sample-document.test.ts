import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { openApiSpecPath } from '../../src/config/paths.js';
import { DEMO_CLINIC } from '../../src/emdr/demo/demo-clinic.js';
import { generateGostKeyPair, gostSign } from '../../src/emdr/signatures/crypto/reference/gost-sign.js';
import { CURVES } from '../../src/emdr/signatures/crypto/curves.js';
import { gostVerify } from '../../src/emdr/signatures/crypto/reference/gost3410.js';
import { streebog } from '../../src/emdr/signatures/crypto/reference/streebog.js';
import { certificatePem, createTestSigner } from '../../src/emdr/signatures/test-signer.js';
import { DocumentSignatureCheck } from '../../src/emdr/signatures/verify.js';
import { parseCertificate } from '../../src/emdr/signatures/cms/cms.js';
import { startCallbackReceiver, type CallbackReceiver } from '../support/callback-receiver.js';
import { runCli } from '../support/cli.js';
import { addClinic, authHeaders, post } from '../support/emdr.js';
import { startTestService, type TestService } from '../support/service.js';
import { TestPki } from '../support/signing.js';

/**
 * GOST signing (our own, for test documents), `document sample`, and the spec's RegisterDocument
 * example: every signature checked by our verifier and by `openssl cms -verify` with the gost engine,
 * and accepted by a live gateway with status success.
 */
let pki: TestPki;
let workDir: string;
beforeAll(async () => {
  pki = new TestPki({ gost: true });
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ehr-gateway-sample-'));
});
afterAll(async () => {
  pki?.remove();
  await fs.rm(workDir, { recursive: true, force: true });
});

/** Our verifier's findings for a detached signature of `document` (none: valid). */
function findings(document: Uint8Array, signature: Uint8Array, trusted?: Uint8Array[]) {
  const check = new DocumentSignatureCheck([{ name: 'signature', bytes: signature }], {
    now: Date.now(),
    ...(trusted ? { trustAnchors: trusted.map(parseCertificate) } : {}),
  });
  check.update(document);
  return check.finish();
}

/** `openssl cms -verify` with the gost engine, the certificates given as its trusted ones; throws when it does not verify. */
async function opensslVerifies(document: Uint8Array, signature: Uint8Array, certificates: string): Promise<string> {
  const dir = await fs.mkdtemp(path.join(workDir, 'openssl-'));
  await fs.writeFile(path.join(dir, 'doc.xml'), document);
  await fs.writeFile(path.join(dir, 'doc.xml.sig'), signature);
  await fs.writeFile(path.join(dir, 'ca.pem'), certificates);
  return pki
    .openssl([
      'cms',
      '-verify',
      '-binary',
      '-inform',
      'DER',
      '-in',
      path.join(dir, 'doc.xml.sig'),
      '-content',
      path.join(dir, 'doc.xml'),
      '-CAfile',
      path.join(dir, 'ca.pem'),
      '-out',
      path.join(dir, 'out'),
    ])
    .toString();
}

describe('GOST R 34.10-2012 signing', () => {
  it('signs digests that our verifier accepts, and only those', () => {
    const curve = CURVES.get('1.2.643.2.2.35.1')!;
    for (let round = 0; round < 20; round += 1) {
      const key = generateGostKeyPair(curve);
      const digest = streebog(256, randomBytes(1 + round * 37));
      const signature = gostSign(key, digest);
      expect(gostVerify(curve, key.publicKey, digest, signature)).toBe(true);
      const otherDigest = Buffer.from(digest);
      otherDigest[round % 32]! ^= 1;
      expect(gostVerify(curve, key.publicKey, otherDigest, signature)).toBe(false);
      expect(gostVerify(curve, generateGostKeyPair(curve).publicKey, digest, signature)).toBe(false);
    }
  });

  it('makes a self-signed certificate and a detached CMS that our verifier and openssl with the gost engine both accept', async () => {
    const signer = createTestSigner({ commonName: 'Тестовая клиника', organization: 'ehr-gateway tests' });
    const document = Buffer.from('<?xml version="1.0" encoding="UTF-8"?><doc>Проверка</doc>');
    const signature = signer.sign(document);
    expect(findings(document, signature)).toEqual([]);
    expect(findings(document, signature, [signer.certificate])).toEqual([]);
    await expect(opensslVerifies(document, signature, certificatePem(signer.certificate))).resolves.toBeDefined();
    const text = pki.openssl(['x509', '-noout', '-text'], Buffer.from(certificatePem(signer.certificate))).toString();
    expect(text).toContain('GOST R 34.10-2012 with GOST R 34.11-2012 (256 bit)');
    expect(text).toContain('id-GostR3410-2001-CryptoPro-A-ParamSet');
    const cms = pki.openssl(['cms', '-cmsout', '-print', '-inform', 'DER'], signature).toString();
    for (const attribute of ['contentType', 'signingTime', 'messageDigest']) expect(cms).toContain(attribute);

    const tampered = Buffer.from(document);
    tampered[tampered.length - 3]! ^= 1;
    expect(findings(tampered, signature).map((finding) => finding.code)).toEqual(['SIGNATURE_VERIFICATION_ERROR']);
    await expect(opensslVerifies(tampered, signature, certificatePem(signer.certificate))).rejects.toThrow();
  });
});

describe('ehr-gateway document sample', () => {
  let service: TestService;
  let receiver: CallbackReceiver;
  let clinicHeaders: Record<string, string>;

  beforeAll(async () => {
    receiver = await startCallbackReceiver();
    service = await startTestService({}, ['emdr', 'worker']);
    const clinic = await addClinic(service, receiver.url, { organizations: null });
    receiver.signingSecret = clinic.signingSecret;
    clinicHeaders = authHeaders(clinic);
  });
  afterAll(async () => {
    await service?.stop();
    await receiver?.close();
  });

  /** Sends a RegisterDocument body; its two callbacks. */
  async function registered(body: Record<string, unknown>) {
    const answer = await post(service.publicUrl, '/api/RegisterDocument', clinicHeaders, body);
    expect(answer.status).toBe(200);
    const ofRequest = () => receiver.received.filter((callback) => callback.body.queueMessageId === answer.body.queueMessageId);
    await receiver.waitFor(() => ofRequest().length >= 2);
    return ofRequest();
  }

  it('writes a document, its signature and the RegisterDocument body for the demo clinic, which the gateway accepts with status success', async () => {
    const out = path.join(workDir, 'sample');
    const result = await runCli(['document', 'sample', '--out', out]);
    expect(result.code, result.stderr).toBe(0);
    const printed = JSON.parse(result.stdout) as { xml: string; signature: string; request: string; certificates: string; localUid: string };
    const xml = await fs.readFile(printed.xml);
    const signature = await fs.readFile(printed.signature);
    const request = JSON.parse(await fs.readFile(printed.request, 'utf8')) as Record<string, any>;
    expect(request.callbackUrl).toBe(DEMO_CLINIC.callbackUrls[0]);
    expect(request.localUid).toBe(printed.localUid);
    expect(Buffer.from(request.document, 'base64').equals(xml)).toBe(true);
    expect(Buffer.from(request.signature, 'base64').equals(signature)).toBe(true);
    expect(xml.toString()).toContain('<ClinicalDocument xmlns="urn:hl7-org:v3">');

    const certificates = await fs.readFile(printed.certificates, 'utf8');
    expect(findings(xml, signature)).toEqual([]);
    await opensslVerifies(xml, signature, certificates);
    const personal = Buffer.from(request.personalSignatures[0].signature, 'base64');
    expect(findings(xml, personal)).toEqual([]);
    await opensslVerifies(xml, personal, certificates);
    const verified = await runCli(['document', 'verify', printed.xml, printed.signature]);
    expect(verified.code).toBe(0);
    expect(verified.stdout).toMatch(/^valid: sample\.xml\.sig verifies over sample\.xml/);

    // Each run a fresh key: a second sample's signature is another.
    const second = await runCli(['document', 'sample', '--out', path.join(workDir, 'second'), '--callback-url', receiver.url]);
    expect((await fs.readFile(path.join(workDir, 'second', 'sample.xml.sig'))).equals(signature)).toBe(false);

    const callbacks = await registered(JSON.parse(await fs.readFile(JSON.parse(second.stdout).request, 'utf8')));
    expect(callbacks.map((callback) => [callback.name, callback.body.status])).toEqual([
      ['SendRegisterDocumentResponse', 'success'],
      ['SendRegisterDocumentResultResponse', 'success'],
    ]);
    expect(callbacks[0]!.body.warnings).toEqual([{ code: 'CERTIFICATE_CHAIN_NOT_CHECKED', message: expect.any(String) }]);
  });

  it("keeps the spec's RegisterDocument example valid: signed for real, for the demo clinic's callback URL, accepted with status success", async () => {
    const spec = parseYaml(await fs.readFile(openApiSpecPath, 'utf8')) as { components: { schemas: Record<string, { examples: Array<Record<string, any>> }> } };
    const example = spec.components.schemas.RegisterDocumentRequest!.examples[0]!;
    expect(example.callbackUrl).toBe(DEMO_CLINIC.callbackUrls[0]);
    const xml = Buffer.from(example.document, 'base64');
    for (const signature of [example.signature, example.personalSignatures[0].signature]) {
      const der = Buffer.from(signature, 'base64');
      expect(findings(xml, der)).toEqual([]);
      const embedded = pki
        .openssl(['pkcs7', '-inform', 'DER', '-print_certs'], pki.openssl(['cms', '-cmsout', '-inform', 'DER', '-outform', 'DER'], der))
        .toString();
      await opensslVerifies(xml, der, embedded);
    }
    // The callbacks go to this test's receiver (the demo clinic's URL is for `make run`); everything else as in the spec.
    const callbacks = await registered({ ...example, callbackUrl: receiver.url });
    expect(callbacks.map((callback) => [callback.name, callback.body.status])).toEqual([
      ['SendRegisterDocumentResponse', 'success'],
      ['SendRegisterDocumentResultResponse', 'success'],
    ]);
    const file = spec.components.schemas.SendDocumentFileResultResponse!.examples[0]!.document;
    expect([file.content, file.signature]).toEqual([example.document, example.signature]);
  });
});
