import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCertificate } from '../../src/emdr/signatures/cms/cms.js';
import { loadTrustStore } from '../../src/emdr/signatures/trust-store.js';
import { DocumentSignatureCheck, MAX_DOCUMENT_CERTIFICATES, MAX_SIGNATURE_VERIFICATIONS, type NamedSignature } from '../../src/emdr/signatures/verify.js';
import { TestPki, type Issued } from '../support/signing.js';

/**
 * Issue 21, M2's bound on a request's work: the signature values verified for one document, its
 * signers' and their chains' candidate issuers together, stop at MAX_SIGNATURE_VERIFICATIONS; the
 * signers left fail unverified, instead of holding a worker for the whole XML_CHECK_TIMEOUT.
 */

const document = Buffer.from('<?xml version="1.0" encoding="UTF-8"?><ClinicalDocument xmlns="urn:hl7-org:v3"><title>budget</title></ClinicalDocument>');

function check(signatures: NamedSignature[], trustAnchors?: Uint8Array[]) {
  const verification = new DocumentSignatureCheck(signatures, {
    now: Date.now(),
    ...(trustAnchors ? { trustAnchors: trustAnchors.map(parseCertificate) } : {}),
  });
  verification.update(document);
  return verification.finish();
}

const BUDGET_SPENT = `not verified: the document's signatures and their chains need more than ${MAX_SIGNATURE_VERIFICATIONS} verifications, the limit`;

describe('the signature verification budget of a document', () => {
  let pki: TestPki;
  let root: Issued;
  let intermediate: Issued;
  let signer: Issued;
  let decoys: Issued[];

  beforeAll(() => {
    pki = new TestPki({ gost: true });
    root = pki.issue({ algorithm: 'gost2012_512', commonName: 'Budget Root CA', ca: true });
    intermediate = pki.issue({ algorithm: 'gost2012_256', commonName: 'Budget Intermediate CA', ca: true, issuer: root });
    signer = pki.issue({ algorithm: 'gost2012_256', commonName: 'Budget Signer', issuer: intermediate });
    // CAs named like the intermediate, with keys of their own: each is a candidate issuer that must be tried.
    decoys = Array.from({ length: 3 }, () => pki.issue({ algorithm: 'gost2012_256', commonName: 'Budget Intermediate CA', ca: true }));
  });

  afterAll(() => pki?.remove());

  it(`verifies ${MAX_SIGNATURE_VERIFICATIONS} signatures of a document and fails the rest unverified`, () => {
    const signature = pki.sign(document, signer);
    const signatures = Array.from({ length: MAX_SIGNATURE_VERIFICATIONS + 6 }, (_, index) => ({
      name: `personalSignatures/${index}/signature`,
      bytes: signature,
    }));
    const findings = check(signatures);
    // One certificate signing many times is also the registry's SIGNATURE_DUPLICATION, reported beside.
    expect(findings.filter((finding) => finding.code === 'SIGNATURE_DUPLICATION')).toHaveLength(MAX_SIGNATURE_VERIFICATIONS + 5);
    // Before: all 70 were verified.
    expect(findings.filter((finding) => finding.code !== 'SIGNATURE_DUPLICATION')).toEqual(
      Array.from({ length: 6 }, (_, index) => ({
        code: 'DOCUMENT_CHECK_LIMIT',
        message: `personalSignatures/${MAX_SIGNATURE_VERIFICATIONS + index}/signature: ${BUDGET_SPENT}`,
      })),
    );
  });

  it('counts the candidate issuers tried while building chains', () => {
    const anchors = loadTrustStore(pki.trustStore([root]));
    // Each signer costs 6: its value, 3 decoys tried before the intermediate, the intermediate, the root's signature on it.
    const honest = pki.sign(document, signer, [intermediate]);
    const notDuplication = (findings: Array<{ code: string; message: string }>) => findings.filter((finding) => finding.code !== 'SIGNATURE_DUPLICATION');
    expect(
      notDuplication(
        check(
          Array.from({ length: 12 }, (_, index) => ({ name: `s${index}`, bytes: honest })),
          anchors,
        ),
      ),
    ).toEqual([]);
    const crowded = pki.sign(document, signer, [...decoys, intermediate]);
    const findings = check(
      Array.from({ length: 12 }, (_, index) => ({ name: `s${index}`, bytes: crowded })),
      anchors,
    );
    expect(notDuplication(findings).map((finding) => finding.message)).toEqual([`s10: ${BUDGET_SPENT}`, `s11: ${BUDGET_SPENT}`]);
  });
  it(`parses at most ${MAX_DOCUMENT_CERTIFICATES} certificates of a document's signatures and fails the rest unparsed`, () => {
    // Six certificates each: the signer's, the intermediate, the root and three decoys.
    const carrying = pki.sign(document, signer, [...decoys, intermediate, root]);
    const fit = Math.floor(MAX_DOCUMENT_CERTIFICATES / 6);
    const findings = check(Array.from({ length: fit + 3 }, (_, index) => ({ name: `s${index}`, bytes: carrying })));
    // Before: every one parsed and verified (SIGNATURE_DUPLICATION alone).
    expect(findings.filter((finding) => finding.code !== 'SIGNATURE_DUPLICATION')).toEqual(
      [fit, fit + 1, fit + 2].map((index) => ({
        code: 'DOCUMENT_CHECK_LIMIT',
        message: `s${index}: not checked: the document's signatures carry more than ${MAX_DOCUMENT_CERTIFICATES} certificates, the limit`,
      })),
    );
  });
});
