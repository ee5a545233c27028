import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { TestPki, type Issued } from '../support/signing.js';

/** `ehr-gateway document verify`: a clinic checks a pair before sending it. */
let pki: TestPki;
let root: Issued;
let signer: Issued;
let documentPath: string;
let signaturePath: string;

beforeAll(() => {
  pki = new TestPki({ gost: true });
  root = pki.issue({ algorithm: 'gost2012_512', commonName: 'CLI Root', ca: true });
  signer = pki.issue({ algorithm: 'gost2012_256', commonName: 'CLI Signer', issuer: root });
  documentPath = path.join(pki.dir, 'protocol.xml');
  fs.writeFileSync(documentPath, '<ClinicalDocument xmlns="urn:hl7-org:v3"><title>Протокол</title></ClinicalDocument>');
  signaturePath = `${documentPath}.sig`;
  fs.writeFileSync(signaturePath, pki.sign(fs.readFileSync(documentPath), signer));
});
afterAll(() => pki?.remove());

describe('document verify', () => {
  it('exits 0 for a valid pair and warns that the chain was not checked', async () => {
    const result = await runCli(['document', 'verify', documentPath, signaturePath]);
    expect(result).toMatchObject({ code: 0, stdout: 'valid: protocol.xml.sig verifies over protocol.xml\nwarning: the certificate chain was not checked (no --trust-store)\n' });
  });

  it('exits 1 with one line per failure for a changed document, and for a chain the trust store does not hold', async () => {
    const changed = path.join(pki.dir, 'changed.xml');
    fs.writeFileSync(changed, `${fs.readFileSync(documentPath, 'utf8')}\n`);
    const tampered = await runCli(['document', 'verify', changed, signaturePath]);
    expect(tampered).toMatchObject({ code: 1, stdout: "SIGNATURE_VERIFICATION_ERROR: protocol.xml.sig: the document's digest does not match the signed messageDigest (the signature was made over other bytes)\n" });

    const stranger = pki.issue({ algorithm: 'gost2012_256', commonName: 'Stranger', ca: true });
    const untrusted = await runCli(['document', 'verify', documentPath, signaturePath, '--trust-store', pki.trustStore([stranger])]);
    expect(untrusted).toMatchObject({ code: 1, stdout: "CANT_BUILD_CERT_CHAIN_TO_ACCREDITED_CA_CERT: protocol.xml.sig: the signer's certificate does not chain to a certificate this gateway trusts\n" });
    const trusted = await runCli(['document', 'verify', documentPath, signaturePath, '--trust-store', pki.trustStore([root])]);
    expect(trusted).toMatchObject({ code: 0, stdout: 'valid: protocol.xml.sig verifies over protocol.xml\n' });
  });

  it('exits 2 on bad arguments, and 0 with its help', async () => {
    expect((await runCli(['document', 'verify', documentPath])).code).toBe(2);
    expect(await runCli(['document', 'verify', path.join(pki.dir, 'missing.xml'), signaturePath])).toMatchObject({ code: 2, stderr: `ehr-gateway: ${path.join(pki.dir, 'missing.xml')}: no such file\n` });
    expect(await runCli(['document', 'verify', documentPath, signaturePath, '--trust-store', path.join(pki.dir, 'nowhere')])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^ehr-gateway: --trust-store: cannot read the folder .* \(ENOENT\)\n$/),
    });
    const help = await runCli(['document', 'verify', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--trust-store <dir>');
  });
});
