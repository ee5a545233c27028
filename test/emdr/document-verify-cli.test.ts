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
  // Its author is the doctor whose personal signature the tests add (SNILS, the worker's id of root ….70, the names).
  fs.writeFileSync(
    documentPath,
    '<ClinicalDocument xmlns="urn:hl7-org:v3" xmlns:identity="urn:hl7-ru:identity"><title>Протокол</title><author><assignedAuthor>' +
      '<id root="1.2.643.100.3" extension="087-654-321 02"/><id root="1.2.643.5.1.13.13.12.2.77.7973.100.1.1.70" extension="4"/>' +
      '<assignedPerson><name><family>Петров</family><given>Сергей</given><identity:Patronymic>Иванович</identity:Patronymic></name></assignedPerson>' +
      '</assignedAuthor></author></ClinicalDocument>',
  );
  signaturePath = `${documentPath}.sig`;
  fs.writeFileSync(signaturePath, pki.sign(fs.readFileSync(documentPath), signer));
});
afterAll(() => pki?.remove());

describe('document verify', () => {
  it('exits 0 for a valid pair and warns that the chain was not checked', async () => {
    const result = await runCli(['document', 'verify', documentPath, signaturePath]);
    expect(result).toMatchObject({
      code: 0,
      stdout: 'valid: protocol.xml.sig verifies over protocol.xml\nwarning: the certificate chain was not checked (no --trust-store)\n',
    });
  });

  it('exits 1 with one line per failure for a changed document, and for a chain the trust store does not hold', async () => {
    const changed = path.join(pki.dir, 'changed.xml');
    fs.writeFileSync(changed, `${fs.readFileSync(documentPath, 'utf8')}\n`);
    const tampered = await runCli(['document', 'verify', changed, signaturePath]);
    expect(tampered).toMatchObject({
      code: 1,
      stdout:
        "SIGNATURE_VERIFICATION_ERROR: protocol.xml.sig: the document's digest does not match the signed messageDigest (the signature was made over other bytes)\n",
    });

    const stranger = pki.issue({ algorithm: 'gost2012_256', commonName: 'Stranger', ca: true });
    const untrusted = await runCli(['document', 'verify', documentPath, signaturePath, '--trust-store', pki.trustStore([stranger])]);
    expect(untrusted).toMatchObject({
      code: 1,
      stdout: "CANT_BUILD_CERT_CHAIN_TO_ACCREDITED_CA_CERT: protocol.xml.sig: the signer's certificate does not chain to a certificate this gateway trusts\n",
    });
    const trusted = await runCli(['document', 'verify', documentPath, signaturePath, '--trust-store', pki.trustStore([root])]);
    expect(trusted).toMatchObject({ code: 0, stdout: 'valid: protocol.xml.sig verifies over protocol.xml\n' });
  });

  it("reports the registry's rules the acceptance stage checks: the kind, the creation date, duplicated signers, the signer block", async () => {
    const doctor = pki.issue({
      algorithm: 'gost2012_256',
      commonName: 'CLI Doctor',
      issuer: root,
      person: { surname: 'Петров', givenName: 'Сергей Иванович', snils: '08765432102' },
    });
    const personalPath = path.join(pki.dir, 'protocol.xml.doctor.sig');
    fs.writeFileSync(personalPath, pki.sign(fs.readFileSync(documentPath), doctor));
    const passing = await runCli([
      'document',
      'verify',
      documentPath,
      signaturePath,
      personalPath,
      '--kind',
      '119',
      '--creation-date-time',
      '2026-01-15T09:30:00+03:00',
      '--signer',
      '087-654-321 02,Петров,Сергей,Иванович',
    ]);
    expect(passing).toMatchObject({
      code: 0,
      stdout: 'valid: protocol.xml.sig, protocol.xml.doctor.sig verify over protocol.xml\nwarning: the certificate chain was not checked (no --trust-store)\n',
    });
    const refused = await runCli([
      'document',
      'verify',
      documentPath,
      signaturePath,
      personalPath,
      signaturePath,
      '--kind',
      '6',
      '--creation-date-time',
      '2026-01-15T09:30:00+03:00',
      '--signer',
      '11223344595',
    ]);
    expect(refused.code).toBe(1);
    expect(
      refused.stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => line.split(':')[0]),
    ).toEqual(['NO_DOCUMENT_KIND_ON_DATE', 'VALUE_MISMATCH_METADATA_AND_CERTIFICATE', 'SIGNATURE_DUPLICATION', 'INVALID_DOCTOR_INFO']);
    // The signer block against the document's author, as the acceptance stage checks it.
    const otherwise = await runCli(['document', 'verify', documentPath, signaturePath, personalPath, '--signer', '087-654-321 02,Петров,Сергей,Иванович,5']);
    expect(otherwise).toMatchObject({ code: 1, stdout: "INVALID_DOCTOR_ID: protocol.xml.doctor.sig: localId differs from the worker's id in the document\n" });
    const early = await runCli(['document', 'verify', documentPath, signaturePath, personalPath, '--creation-date-time', '2024-06-01T09:30:00+03:00']);
    expect(
      early.stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => line.split(':')[0]),
    ).toEqual(['DOC_DATE_MISMATCH_CERT_NOT_BEFORE', 'PERSONAL_SIG_CERT_NOT_ACTUAL_ON_DOC_CREATION_DT']);
    expect(await runCli(['document', 'verify', documentPath, signaturePath, '--kind', '119'])).toMatchObject({
      code: 2,
      stderr: 'ehr-gateway: --kind needs --creation-date-time (a kind is checked on the creation date)\n',
    });
  });

  it('exits 2 on bad arguments, and 0 with its help', async () => {
    expect((await runCli(['document', 'verify', documentPath])).code).toBe(2);
    expect(await runCli(['document', 'verify', path.join(pki.dir, 'missing.xml'), signaturePath])).toMatchObject({
      code: 2,
      stderr: `ehr-gateway: ${path.join(pki.dir, 'missing.xml')}: no such file\n`,
    });
    expect(await runCli(['document', 'verify', documentPath, signaturePath, '--trust-store', path.join(pki.dir, 'nowhere')])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^ehr-gateway: --trust-store: cannot read the folder .* \(ENOENT\)\n$/),
    });
    const help = await runCli(['document', 'verify', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--trust-store <dir>');
  });
});
