/**
 * Verification of a document's detached CMS signatures: each signer's messageDigest against the
 * document's digest, its signature value over the signed attributes (or over the document when it
 * has none), its certificate's validity at the signing time, and, given trust anchors, the chain
 * to one of them. The document is fed in slices (`update`), hashed once per digest algorithm.
 *
 * Runs in a worker thread (worker.ts) and in the CLI, so it imports nothing but its siblings and
 * Node, with `.ts` specifiers (Node runs it with types stripped under the tests).
 */
import type { ErrorCode } from '../codes.ts';
import { certificateSignatureDigest, createDigest, digestOf, signatureVerifies, UnsupportedAlgorithm, type Digest, type SignedBytes } from './crypto/algorithms.ts';
import { KEY_USAGE, parseSignedData, SignatureFormatError, type Certificate, type SignerInfo } from './cms/cms.ts';

export interface SignatureFinding {
  code: ErrorCode;
  message: string;
}

export interface NamedSignature {
  /** How the request names it: `signature`, `personalSignatures/1/signature`. */
  name: string;
  bytes: Uint8Array;
}

export interface VerificationPolicy {
  /** Trusted roots and intermediates; without them, chains are not checked. */
  trustAnchors?: readonly Certificate[];
  /** Intake time (epoch ms): the validity check's time when a signer gives no signingTime. */
  now: number;
}

/** Longest chain from a signer to a trust anchor. */
const MAX_CHAIN = 8;

/**
 * Signature values verified for one document at most: its signers' and their chains' candidate
 * issuers together. The largest request (21 signatures) with chains of two links needs 63; more
 * signers per signature, or many candidates of one issuer name (each is tried), are what a hostile
 * request sends to hold a worker (21 × 16 signers × 31 candidates took the whole XML_CHECK_TIMEOUT).
 * Signers left when it is spent fail with SIGNATURE_VERIFICATION_ERROR, unverified.
 */
export const MAX_SIGNATURE_VERIFICATIONS = 64;

/** Thrown when a document's verifications are spent: its signer fails, unverified. */
class BudgetSpent extends Error {}

interface PendingSigner {
  /** Position of its signature in the request: findings are reported in that order. */
  order: number;
  name: string;
  signer: SignerInfo;
  certificates: Certificate[];
}

const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

export class DocumentSignatureCheck {
  private readonly findings: Array<{ order: number; finding: SignatureFinding }> = [];
  private readonly pending: PendingSigner[] = [];
  private readonly digests = new Map<string, Digest>();
  private readonly policy: VerificationPolicy;
  /** Verifications left for this document (MAX_SIGNATURE_VERIFICATIONS). */
  private budget = MAX_SIGNATURE_VERIFICATIONS;

  constructor(signatures: readonly NamedSignature[], policy: VerificationPolicy) {
    this.policy = policy;
    signatures.forEach(({ name, bytes }, order) => this.accept(order, name, bytes));
  }

  /** Whether any signature is left whose verification needs the document. */
  get needsDocument(): boolean {
    return this.pending.length > 0;
  }

  update(chunk: Uint8Array): void {
    for (const digest of this.digests.values()) digest.update(chunk);
  }

  /** Every failure, in the order of the signatures; empty when all verify. */
  finish(): SignatureFinding[] {
    const documentDigests = new Map([...this.digests].map(([oid, digest]) => [oid, digest.digest()]));
    for (const pending of this.pending) {
      const finding = guarded(pending.name, () => this.verifySigner(pending, documentDigests.get(pending.signer.digestAlgorithm.oid)!));
      if (finding) this.findings.push({ order: pending.order, finding });
    }
    return this.findings.sort((left, right) => left.order - right.order).map(({ finding }) => finding);
  }

  private accept(order: number, name: string, bytes: Uint8Array): void {
    const finding = guarded(name, () => {
      const signedData = parseSignedData(bytes);
      if (signedData.attached) return { code: 'WRONG_SIGNATURE_FORMAT', message: `${name} carries the signed content: send a detached signature` };
      if (signedData.signers.length === 0) return { code: 'NO_SIGNATURE', message: `${name} has no signer` };
      signedData.signers.forEach((signer, index) => {
        const signerName = signedData.signers.length === 1 ? name : `${name} (signer ${index + 1})`;
        const oid = signer.digestAlgorithm.oid;
        if (!this.digests.has(oid)) {
          const digest = createDigest(oid);
          if (!digest) throw new UnsupportedAlgorithm(`digest algorithm ${oid}`);
          this.digests.set(oid, digest);
        }
        this.pending.push({ order, name: signerName, signer, certificates: signedData.certificates });
      });
      return undefined;
    });
    if (finding) this.findings.push({ order, finding });
  }

  private verifySigner({ name, signer, certificates }: PendingSigner, documentDigest: Buffer): SignatureFinding | undefined {
    const certificate = certificates.find((candidate) => identifies(signer, candidate));
    if (!certificate) return { code: 'NO_END_ENTITY_CERTIFICATE', message: `${name}: the signer's certificate is not in the signature` };
    const digestOid = signer.digestAlgorithm.oid;
    const attributes = signer.signedAttributes;
    let signed: SignedBytes = { digest: documentDigest, digestOid };
    if (attributes) {
      if (!attributes.messageDigest) return { code: 'SIGNATURE_VERIFICATION_ERROR', message: `${name}: the signed attributes have no messageDigest` };
      if (!documentDigest.equals(attributes.messageDigest)) {
        return { code: 'SIGNATURE_VERIFICATION_ERROR', message: `${name}: the document's digest does not match the signed messageDigest (the signature was made over other bytes)` };
      }
      signed = { digest: digestOf(digestOid, attributes.der)!, digestOid, data: attributes.der };
    }
    if (!this.verifies(certificate.publicKey, signer.signatureAlgorithm, signed, signer.signature)) {
      return { code: 'SIGNATURE_VERIFICATION_ERROR', message: `${name}: the signature value does not verify with the signer's certificate` };
    }
    const signingTime = attributes?.signingTime;
    const at = signingTime ?? this.policy.now;
    if (at < certificate.notBefore || at > certificate.notAfter) {
      const when = signingTime === undefined ? 'at intake' : 'at the signing time';
      return { code: 'SIGNATURE_VERIFICATION_ERROR', message: `${name}: the signer's certificate is not valid ${when}, ${iso(at)} (valid from ${iso(certificate.notBefore)} to ${iso(certificate.notAfter)})` };
    }
    const anchors = this.policy.trustAnchors;
    if (anchors && !chainsToAnchor(certificate, certificates, anchors, at, this.verifies)) {
      return { code: 'CANT_BUILD_CERT_CHAIN_TO_ACCREDITED_CA_CERT', message: `${name}: the signer's certificate does not chain to a certificate this gateway trusts` };
    }
    return undefined;
  }

  /** One signature value verified, out of the document's budget. */
  private readonly verifies: Verify = (...args) => {
    if (this.budget <= 0) throw new BudgetSpent();
    this.budget -= 1;
    return signatureVerifies(...args);
  };
}

type Verify = typeof signatureVerifies;

/** Runs one signature's step; a malformed or unsupported signature becomes its finding, never an exception. */
function guarded(name: string, step: () => SignatureFinding | undefined): SignatureFinding | undefined {
  try {
    return step();
  } catch (error) {
    if (error instanceof BudgetSpent) {
      return { code: 'SIGNATURE_VERIFICATION_ERROR', message: `${name}: not verified: the document's signatures and their chains need more than ${MAX_SIGNATURE_VERIFICATIONS} verifications, the limit` };
    }
    if (error instanceof UnsupportedAlgorithm) return { code: 'UNKNOWN_ALGORITHM', message: `${name}: unsupported ${error.message}` };
    if (error instanceof SignatureFormatError) return { code: 'SIGNATURE_DECODING_ERROR', message: `${name} is not a CMS SignedData: ${error.message}` };
    return { code: 'SIGNATURE_DECODING_ERROR', message: `${name} could not be decoded` };
  }
}

function identifies(signer: SignerInfo, certificate: Certificate): boolean {
  const sid = signer.sid;
  if ('subjectKeyIdentifier' in sid) return certificate.subjectKeyIdentifier !== undefined && Buffer.from(sid.subjectKeyIdentifier).equals(certificate.subjectKeyIdentifier);
  return Buffer.from(sid.issuer).equals(certificate.issuer) && Buffer.from(sid.serial).equals(certificate.serial);
}

/** Whether `issuer` signed `subject` and may issue certificates at `at`. */
function issued(issuer: Certificate, subject: Certificate, at: number, verifies: Verify): boolean {
  if (!Buffer.from(issuer.subject).equals(subject.issuer)) return false;
  if (issuer.isCa !== true || (issuer.keyUsage !== undefined && (issuer.keyUsage & KEY_USAGE.keyCertSign) === 0)) return false;
  if (at < issuer.notBefore || at > issuer.notAfter) return false;
  const digestOid = certificateSignatureDigest(subject.signatureAlgorithm);
  if (!digestOid) return false;
  try {
    return verifies(issuer.publicKey, subject.signatureAlgorithm, { digest: digestOf(digestOid, subject.tbs)!, digestOid, data: subject.tbs }, subject.signature);
  } catch (error) {
    if (error instanceof UnsupportedAlgorithm || error instanceof SignatureFormatError) return false;
    throw error;
  }
}

/** Whether a chain of issuers leads from `certificate` to one of `anchors` (which may be roots or intermediates). */
function chainsToAnchor(certificate: Certificate, carried: readonly Certificate[], anchors: readonly Certificate[], at: number, verifies: Verify): boolean {
  const isAnchor = (candidate: Certificate) => anchors.some((anchor) => Buffer.from(anchor.der).equals(candidate.der));
  let current = certificate;
  for (let depth = 0; depth <= MAX_CHAIN; depth += 1) {
    if (isAnchor(current)) return true;
    const issuer = [...anchors, ...carried].find((candidate) => candidate !== current && issued(candidate, current, at, verifies));
    if (!issuer) return false;
    current = issuer;
  }
  return false;
}
