import fs from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { startCallbackReceiver, type CallbackReceiver } from '../support/callback-receiver.js';
import { addClinic, authHeaders, FIXTURE_SIGNATURE, FIXTURE_XML, post, registerBody } from '../support/emdr.js';
import { startTestService, type TestService } from '../support/service.js';
import { TestPki, type Issued } from '../support/signing.js';

/**
 * RegisterDocument's signatures verified for real, through the live service and a real callback
 * receiver: GOST R 34.10-2012 signatures made by the openssl gost engine (and the RSA fixture).
 */

/** What the signer's certificate says about a person: it must never reach a log line. */
const SIGNER_NAME = 'Иванова Мария 08765432110';
/** A marker inside the document: nor must the document. */
const DOCUMENT_MARKER = 'Диагноз-маркер-7731';

let pki: TestPki;
let root: Issued;
let intermediate: Issued;
let signer256: Issued;
let signer512: Issued;
let expired: Issued;
let strangerRoot: Issued;
let strangerSigner: Issued;

const documentXml = (n: number) =>
  Buffer.from(
    `<?xml version="1.0" encoding="UTF-8"?><ClinicalDocument xmlns="urn:hl7-org:v3"><title>${DOCUMENT_MARKER} ${n}</title><author><assignedAuthor><id root="1.2.643.100.3" extension="08765432110"/></assignedAuthor></author></ClinicalDocument>`,
  );

interface Gateway {
  service: TestService;
  receiver: CallbackReceiver;
  clinic: CreatedClinicAccount;
}

async function startGateway(env: Record<string, string>, logs?: NodeJS.WritableStream): Promise<Gateway> {
  const receiver = await startCallbackReceiver();
  const service = await startTestService(env, undefined, logs);
  const clinic = await addClinic(service, receiver.url);
  receiver.signingSecret = clinic.signingSecret;
  return { service, receiver, clinic };
}

async function stopGateway(gateway: Gateway | undefined): Promise<void> {
  await gateway?.service.stop();
  await gateway?.receiver.close();
}

/** The acceptance callback's body for a RegisterDocument of `document` signed with `signature`. */
async function acceptance(gateway: Gateway, document: Buffer, signature: Buffer, extra: Record<string, unknown> = {}): Promise<Record<string, any>> {
  const body = registerBody({ document: document.toString('base64'), signature: signature.toString('base64'), ...extra });
  const { body: ack } = await post(gateway.service.publicUrl, '/api/RegisterDocument', authHeaders(gateway.clinic), body);
  const received = await gateway.receiver.waitFor((callbacks) => callbacks.some((callback) => callback.body.queueMessageId === ack.queueMessageId));
  const callback = received.find((candidate) => candidate.body.queueMessageId === ack.queueMessageId)!;
  expect(callback.name).toBe('SendRegisterDocumentResponse');
  return callback.body;
}

const NO_CHAIN_WARNING = [
  {
    code: 'CERTIFICATE_CHAIN_NOT_CHECKED',
    message: 'the signatures were verified, but their certificate chains were not checked: this gateway has no trust store configured',
  },
];

beforeAll(() => {
  pki = new TestPki({ gost: true });
  root = pki.issue({ algorithm: 'gost2012_512', commonName: 'Test Root CA', ca: true });
  intermediate = pki.issue({ algorithm: 'gost2012_256', commonName: 'Test Intermediate CA', ca: true, issuer: root });
  signer256 = pki.issue({ algorithm: 'gost2012_256', commonName: SIGNER_NAME, issuer: intermediate });
  signer512 = pki.issue({ algorithm: 'gost2012_512', commonName: SIGNER_NAME, issuer: intermediate, paramset: 'C' });
  expired = pki.issue({
    algorithm: 'gost2012_256',
    commonName: SIGNER_NAME,
    issuer: intermediate,
    notBefore: new Date('2023-01-01T00:00:00Z'),
    notAfter: new Date('2024-01-01T00:00:00Z'),
  });
  strangerRoot = pki.issue({ algorithm: 'gost2012_256', commonName: 'Stranger Root CA', ca: true });
  strangerSigner = pki.issue({ algorithm: 'gost2012_256', commonName: SIGNER_NAME, issuer: strangerRoot });
});

afterAll(() => pki?.remove());

describe('without SIGNATURE_TRUST_STORE', () => {
  let gateway: Gateway;
  const logs: string[] = [];

  beforeAll(async () => {
    const destination = new PassThrough();
    destination.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
    gateway = await startGateway({ LOG_LEVEL: 'debug' }, destination);
  });
  afterAll(() => stopGateway(gateway));

  it('accepts a GOST R 34.10-2012 256-bit signature (Streebog-256), saying the chain was not checked', async () => {
    const document = documentXml(1);
    expect(await acceptance(gateway, document, pki.sign(document, signer256, [intermediate]))).toMatchObject({ status: 'success', warnings: NO_CHAIN_WARNING });
  });

  it('accepts a 512-bit one (Streebog-512, parameter set C)', async () => {
    const document = documentXml(2);
    const body = await acceptance(gateway, document, pki.sign(document, signer512));
    expect(body).toMatchObject({ status: 'success', warnings: NO_CHAIN_WARNING });
    expect(body.errors).toBeUndefined();
  });

  it('rejects a document changed after signing', async () => {
    const document = documentXml(3);
    const signature = pki.sign(document, signer256);
    const tampered = Buffer.from(document.toString('utf8').replace('</title>', ' </title>'));
    expect(await acceptance(gateway, tampered, signature)).toMatchObject({
      status: 'error',
      errors: [
        {
          code: 'SIGNATURE_VERIFICATION_ERROR',
          message: "signature: the document's digest does not match the signed messageDigest (the signature was made over other bytes)",
        },
      ],
    });
  });

  it('rejects a signature made over another document', async () => {
    const body = await acceptance(gateway, documentXml(4), pki.sign(documentXml(5), signer512));
    expect(body.status).toBe('error');
    expect(body.errors).toEqual([{ code: 'SIGNATURE_VERIFICATION_ERROR', message: expect.stringMatching(/^signature: the document's digest does not match/) }]);
  });

  it('rejects a signature whose certificate had expired at the signing time', async () => {
    const document = documentXml(6);
    const body = await acceptance(gateway, document, pki.sign(document, expired));
    expect(body.status).toBe('error');
    expect(body.errors).toEqual([
      {
        code: 'SIGNATURE_VERIFICATION_ERROR',
        message: expect.stringMatching(
          /^signature: the signer's certificate is not valid at the signing time, .* \(valid from 2023-01-01T00:00:00Z to 2024-01-01T00:00:00Z\)$/,
        ),
      },
    ]);
  });

  it('still accepts the RSA fixture (openssl, SHA-256)', async () => {
    expect(await acceptance(gateway, FIXTURE_XML, FIXTURE_SIGNATURE)).toMatchObject({ status: 'success', warnings: NO_CHAIN_WARNING });
  });

  it("names the personal signature that fails while the organization's passes", async () => {
    const document = documentXml(7);
    const personalSignatures = [
      { signer: { snils: '08765432110' }, signature: pki.sign(document, signer256).toString('base64') },
      { signer: { snils: '08765432110' }, signature: pki.sign(documentXml(8), signer256).toString('base64') },
    ];
    const body = await acceptance(gateway, document, pki.sign(document, signer512), { personalSignatures });
    expect(body.status).toBe('error');
    expect(body.errors).toEqual([
      { code: 'SIGNATURE_VERIFICATION_ERROR', message: expect.stringMatching(/^personalSignatures\/1\/signature: the document's digest does not match/) },
      // One certificate signing twice, over two documents: the registry's rules 51 and 10 too.
      { code: 'SIGNATURE_DUPLICATION', message: 'personalSignatures/1/signature is made with the same certificate as personalSignatures/0/signature' },
      {
        code: 'INCONSISTENT_DIGESTS',
        message: expect.stringMatching(/^personalSignatures\/1\/signature signs another document digest than personalSignatures\/0\/signature/),
      },
    ]);
  });

  it('answers a signature that is not a CMS with SIGNATURE_DECODING_ERROR and one with a broken value with SIGNATURE_VERIFICATION_ERROR', async () => {
    const document = documentXml(9);
    const broken = Buffer.from(pki.sign(document, signer256));
    broken[broken.length - 5]! ^= 0x01;
    const body = await acceptance(gateway, document, broken, {
      personalSignatures: [{ signer: { snils: '08765432110' }, signature: Buffer.from('not a CMS').toString('base64') }],
    });
    expect(body.errors).toEqual([
      { code: 'SIGNATURE_VERIFICATION_ERROR', message: "signature: the signature value does not verify with the signer's certificate" },
      { code: 'SIGNATURE_DECODING_ERROR', message: expect.stringMatching(/^personalSignatures\/0\/signature is not a CMS SignedData: /) },
    ]);
  });

  it("keeps the document and the certificate's personal fields out of the logs, and every callback on its schema", async () => {
    expect(logs.length).toBeGreaterThan(0);
    const text = logs.join('');
    expect(text).not.toContain(DOCUMENT_MARKER);
    expect(text).not.toContain('Иванова');
    expect(text).not.toContain('08765432110');
    expect(gateway.receiver.schemaViolations).toEqual([]);
  });
});

describe('with SIGNATURE_TRUST_STORE', () => {
  let gateway: Gateway;

  beforeAll(async () => {
    gateway = await startGateway({ SIGNATURE_TRUST_STORE: pki.trustStore([root]) });
  });
  afterAll(() => stopGateway(gateway));

  it('accepts a chain root → intermediate → signer, with no warning', async () => {
    const document = documentXml(10);
    const body = await acceptance(gateway, document, pki.sign(document, signer256, [intermediate]));
    expect(body).toMatchObject({ status: 'success' });
    expect(body.warnings).toBeUndefined();
  });

  it('rejects a signer whose chain leads elsewhere, or misses its intermediate', async () => {
    const document = documentXml(11);
    const untrusted = {
      code: 'CANT_BUILD_CERT_CHAIN_TO_ACCREDITED_CA_CERT',
      message: "signature: the signer's certificate does not chain to a certificate this gateway trusts",
    };
    expect(await acceptance(gateway, document, pki.sign(document, strangerSigner, [strangerRoot]))).toMatchObject({ status: 'error', errors: [untrusted] });
    expect(await acceptance(gateway, document, pki.sign(document, signer256))).toMatchObject({ status: 'error', errors: [untrusted] });
  });

  it('fails start with a message naming the variable when the folder holds no certificate or a broken one', async () => {
    const empty = fs.mkdtempSync(path.join(pki.dir, 'empty-'));
    await expect(startTestService({ SIGNATURE_TRUST_STORE: empty })).rejects.toThrow(/^SIGNATURE_TRUST_STORE: no PEM certificate in /);
    fs.writeFileSync(path.join(empty, 'broken.pem'), '-----BEGIN CERTIFICATE-----\nMIIBAAAA\n-----END CERTIFICATE-----\n');
    await expect(startTestService({ SIGNATURE_TRUST_STORE: empty })).rejects.toThrow(/^SIGNATURE_TRUST_STORE: broken.pem: a certificate that does not parse/);
    await expect(startTestService({ SIGNATURE_TRUST_STORE: path.join(empty, 'missing') })).rejects.toThrow(
      /^SIGNATURE_TRUST_STORE: cannot read the folder .* \(ENOENT\)$/,
    );
  });
});
