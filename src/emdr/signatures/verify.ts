/**
 * Verification of a document's detached CMS signatures: each signer's messageDigest against the
 * document's digest, its signature value over the signed attributes (or over the document when it
 * has none), its certificate's validity at the signing time, and, given trust anchors, the chain
 * to one of them. The document is fed in slices (`update`), hashed once per digest algorithm.
 *
 * Beside them, the registry's own signature rules (classifier 1.2.643.5.1.13.13.99.2.305), checked
 * first so that a clinic does not wait days for the refusal: one signer per container
 * (MULTIPLE_SIGNERS), no certificate signing twice (SIGNATURE_DUPLICATION), one document digest per
 * digest algorithm (INCONSISTENT_DIGESTS), keyUsage naming digitalSignature (INVALID_CERT_KEY_USAGE),
 * the certificate valid at the document's creation (DOC_DATE_MISMATCH_CERT_NOT_BEFORE/NOT_AFTER for
 * the organization's, PERSONAL_SIG_CERT_NOT_ACTUAL_ON_DOC_CREATION_DT for a personal one) and a
 * personal one also at the check (PERSONAL_SIG_CERT_NOT_ACTUAL_ON_CHECK_DT), and the signer block
 * against the certificate's subject (VALUE_MISMATCH_METADATA_AND_CERTIFICATE).
 *
 * Runs in a worker thread (worker.ts) and in the CLI, so it imports nothing but its siblings and
 * Node, with `.ts` specifiers (Node runs it with types stripped under the tests).
 */
import type { ErrorCode } from '../errors/codes.ts';
import {
  certificateSignatureDigest,
  createDigest,
  digestOf,
  signatureVerifies,
  UnsupportedAlgorithm,
  type Digest,
  type SignedBytes,
} from './crypto/algorithms.ts';
import { KEY_USAGE, readSignature, SignatureFormatError, type Certificate, type SignerInfo } from './cms/cms.ts';

export interface SignatureFinding {
  code: ErrorCode;
  message: string;
}

/** What the request says of a personal signature's signer (the registry's signer block), as far as a certificate can confirm it. */
export interface SignerBlock {
  snils: string;
  /** The worker's id in the МИС (compared with the document's, prechecks/document-parties.ts). */
  localId?: string;
  lastName?: string;
  firstName?: string;
  middleName?: string;
}

export interface NamedSignature {
  /** How the request names it: `signature`, `personalSignatures/1/signature`. */
  name: string;
  bytes: Uint8Array;
  /** A medical worker's signature (not the organization's), and its signer block when the request gives one. */
  personal?: boolean;
  signer?: SignerBlock;
}

export interface VerificationPolicy {
  /** Trusted roots and intermediates; without them, chains are not checked. */
  trustAnchors?: readonly Certificate[];
  /** Intake time (epoch ms): the validity check's time when a signer gives no signingTime, and the check time of personal certificates. */
  now: number;
  /** The document's creation (epoch ms, creationDateTime): every certificate must be valid at it. */
  documentCreatedAt?: number;
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

/**
 * Certificates the signatures of one document carry together, counted from their structure before
 * any is parsed: the largest request (21 signatures) with chains of three certificates carries 63.
 * Each carried certificate costs a parse whether or not it is used (0.4 to 3 ms on a busy machine),
 * and a request of 21 containers of 32 cost as much as the 16-signer containers of issue 21, M2.
 * Signatures past it fail with DOCUMENT_CHECK_LIMIT, unparsed.
 */
export const MAX_DOCUMENT_CERTIFICATES = 128;

/** Thrown when a document's verifications are spent: its signer fails, unverified. */
class BudgetSpent extends Error {}

interface PendingSigner {
  /** Position of its signature in the request: findings are reported in that order. */
  order: number;
  name: string;
  signature: NamedSignature;
  signer: SignerInfo;
  certificates: Certificate[];
  /** The signer's certificate, once found. */
  certificate?: Certificate;
}

const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

export class DocumentSignatureCheck {
  private readonly findings: Array<{ order: number; finding: SignatureFinding }> = [];
  private readonly pending: PendingSigner[] = [];
  private readonly digests = new Map<string, Digest>();
  private readonly policy: VerificationPolicy;
  /** Verifications left for this document (MAX_SIGNATURE_VERIFICATIONS). */
  private budget = MAX_SIGNATURE_VERIFICATIONS;
  /** Certificates its signatures may still carry (MAX_DOCUMENT_CERTIFICATES). */
  private certificatesLeft = MAX_DOCUMENT_CERTIFICATES;

  constructor(signatures: readonly NamedSignature[], policy: VerificationPolicy) {
    this.policy = policy;
    signatures.forEach((signature, order) => {
      this.accept(order, signature);
    });
  }

  /** Whether any signature is left whose verification needs the document. */
  get needsDocument(): boolean {
    return this.pending.length > 0;
  }

  update(chunk: Uint8Array): void {
    for (const digest of this.digests.values()) digest.update(chunk);
  }

  /** Each signature the check read, with the certificate that made it once verification found it (after finish). */
  signedBy(): Array<{ signature: NamedSignature; certificate?: Certificate }> {
    return this.pending.map(({ signature, certificate }) => (certificate ? { signature, certificate } : { signature }));
  }

  /** Every failure, in the order of the signatures; empty when all verify. */
  finish(): SignatureFinding[] {
    const documentDigests = new Map([...this.digests].map(([oid, digest]) => [oid, digest.digest()]));
    for (const pending of this.pending) {
      const finding = guarded(pending.name, () => this.verifySigner(pending, documentDigests.get(pending.signer.digestAlgorithm.oid)!));
      if (finding) this.findings.push({ order: pending.order, finding });
    }
    for (const { order, finding } of acrossSignatures(this.pending)) this.findings.push({ order, finding });
    return this.findings.sort((left, right) => left.order - right.order).map(({ finding }) => finding);
  }

  private accept(order: number, signature: NamedSignature): void {
    const { name, bytes } = signature;
    const finding = guarded(name, () => {
      // Read from the encoding's structure, before any certificate or signer is parsed: a refusal for them costs a walk over the bytes.
      const reading = readSignature(bytes);
      const shape = reading.shape;
      if (shape.attached) return { code: 'WRONG_SIGNATURE_FORMAT', message: `${name} carries the signed content: send a detached signature` };
      if (shape.signers === 0) return { code: 'NO_SIGNATURE', message: `${name} has no signer` };
      // The registry takes one signer per container: each signer signs in a container of its own.
      if (shape.signers > 1)
        return { code: 'MULTIPLE_SIGNERS', message: `${name} holds ${shape.signers} signers: send each signature in a container of its own` };
      if (shape.certificates > this.certificatesLeft) {
        return {
          code: 'DOCUMENT_CHECK_LIMIT',
          message: `${name}: not checked: the document's signatures carry more than ${MAX_DOCUMENT_CERTIFICATES} certificates, the limit`,
        };
      }
      this.certificatesLeft -= shape.certificates;
      const signedData = reading.parse();
      const signer = signedData.signers[0]!;
      const oid = signer.digestAlgorithm.oid;
      if (!this.digests.has(oid)) {
        const digest = createDigest(oid);
        if (!digest) throw new UnsupportedAlgorithm(`digest algorithm ${oid}`);
        this.digests.set(oid, digest);
      }
      this.pending.push({ order, name, signature, signer, certificates: signedData.certificates });
      return undefined;
    });
    if (finding) this.findings.push({ order, finding });
  }

  private verifySigner(pending: PendingSigner, documentDigest: Buffer): SignatureFinding | undefined {
    const { name, signer, certificates } = pending;
    const certificate = certificates.find((candidate) => identifies(signer, candidate));
    if (!certificate) return { code: 'NO_END_ENTITY_CERTIFICATE', message: `${name}: the signer's certificate is not in the signature` };
    pending.certificate = certificate;
    const digestOid = signer.digestAlgorithm.oid;
    const attributes = signer.signedAttributes;
    let signed: SignedBytes = { digest: documentDigest, digestOid };
    if (attributes) {
      if (!attributes.messageDigest) return { code: 'SIGNATURE_VERIFICATION_ERROR', message: `${name}: the signed attributes have no messageDigest` };
      if (!documentDigest.equals(attributes.messageDigest)) {
        return {
          code: 'SIGNATURE_VERIFICATION_ERROR',
          message: `${name}: the document's digest does not match the signed messageDigest (the signature was made over other bytes)`,
        };
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
      return {
        code: 'SIGNATURE_VERIFICATION_ERROR',
        message: `${name}: the signer's certificate is not valid ${when}, ${iso(at)} (valid from ${iso(certificate.notBefore)} to ${iso(certificate.notAfter)})`,
      };
    }
    const anchors = this.policy.trustAnchors;
    if (anchors && !chainsToAnchor(certificate, certificates, anchors, at, this.verifies)) {
      return {
        code: 'CANT_BUILD_CERT_CHAIN_TO_ACCREDITED_CA_CERT',
        message: `${name}: the signer's certificate does not chain to a certificate this gateway trusts`,
      };
    }
    return registryRules(pending.signature, certificate, this.policy);
  }

  /** One signature value verified, out of the document's budget. */
  private readonly verifies: Verify = (...args) => {
    if (this.budget <= 0) throw new BudgetSpent();
    this.budget -= 1;
    return signatureVerifies(...args);
  };
}

/** The registry's rules of one verified signature: key usage, validity at the document's creation (and, personal, at the check), the signer block against the certificate. */
function registryRules(signature: NamedSignature, certificate: Certificate, policy: VerificationPolicy): SignatureFinding | undefined {
  const { name } = signature;
  // A certificate without keyUsage restricts nothing (RFC 5280, 4.2.1.3); one that has it must allow signing.
  if (certificate.keyUsage !== undefined && (certificate.keyUsage & KEY_USAGE.digitalSignature) === 0) {
    return { code: 'INVALID_CERT_KEY_USAGE', message: `${name}: the certificate's keyUsage does not allow digitalSignature` };
  }
  const validity = `valid from ${iso(certificate.notBefore)} to ${iso(certificate.notAfter)}`;
  const created = policy.documentCreatedAt;
  if (created !== undefined && (created < certificate.notBefore || created > certificate.notAfter)) {
    const message = `${name}: the signer's certificate is not valid at the document's creation, ${iso(created)} (${validity})`;
    if (signature.personal) return { code: 'PERSONAL_SIG_CERT_NOT_ACTUAL_ON_DOC_CREATION_DT', message };
    return { code: created < certificate.notBefore ? 'DOC_DATE_MISMATCH_CERT_NOT_BEFORE' : 'DOC_DATE_MISMATCH_CERT_NOT_AFTER', message };
  }
  if (signature.personal && (policy.now < certificate.notBefore || policy.now > certificate.notAfter)) {
    return {
      code: 'PERSONAL_SIG_CERT_NOT_ACTUAL_ON_CHECK_DT',
      message: `${name}: the signer's certificate is not valid at the check, ${iso(policy.now)} (${validity})`,
    };
  }
  const mismatch = signature.signer ? signerMismatch(signature.signer, certificate) : undefined;
  if (mismatch) return { code: 'VALUE_MISMATCH_METADATA_AND_CERTIFICATE', message: `${name}: the signer block's ${mismatch} differs from the certificate's` };
  return undefined;
}

/** Names compare trimmed, case-insensitive, with ё as е (the certificate and the МИС may spell them either way). */
const nameKey = (text: string) => text.trim().toLocaleLowerCase('ru').replaceAll('ё', 'е').replace(/\s+/g, ' ');

/** Which part of the signer block the certificate's subject contradicts; a part the certificate lacks is not compared. */
function signerMismatch(signer: SignerBlock, certificate: Certificate): string | undefined {
  const subject = certificate.subjectText;
  if (subject.snils !== undefined && subject.snils.replace(/\D/g, '') !== signer.snils.replace(/\D/g, '')) return 'snils';
  if (subject.surname !== undefined && signer.lastName !== undefined && nameKey(subject.surname) !== nameKey(signer.lastName)) return 'lastName';
  // Russian qualified certificates write the given name and the patronymic together in givenName (Приказ ФСБ № 795).
  if (
    subject.givenName !== undefined &&
    signer.firstName !== undefined &&
    nameKey(subject.givenName) !== nameKey(`${signer.firstName} ${signer.middleName ?? ''}`)
  )
    return 'firstName and middleName';
  return undefined;
}

/** The rules across the signatures of one document: no certificate twice, one document digest per digest algorithm. */
function acrossSignatures(pending: readonly PendingSigner[]): Array<{ order: number; finding: SignatureFinding }> {
  const findings: Array<{ order: number; finding: SignatureFinding }> = [];
  pending.forEach((current, index) => {
    const earlier = pending.slice(0, index);
    const certificate = current.certificate;
    const twin = certificate && earlier.find((other) => other.certificate !== undefined && Buffer.from(other.certificate.der).equals(certificate.der));
    if (twin)
      findings.push({
        order: current.order,
        finding: { code: 'SIGNATURE_DUPLICATION', message: `${current.name} is made with the same certificate as ${twin.name}` },
      });
    const digest = current.signer.signedAttributes?.messageDigest;
    const other =
      digest &&
      earlier.find((candidate) => {
        const theirs = candidate.signer.signedAttributes?.messageDigest;
        return candidate.signer.digestAlgorithm.oid === current.signer.digestAlgorithm.oid && theirs !== undefined && !Buffer.from(theirs).equals(digest);
      });
    if (other) {
      findings.push({
        order: current.order,
        finding: {
          code: 'INCONSISTENT_DIGESTS',
          message: `${current.name} signs another document digest than ${other.name} with the same digest algorithm: signatures of different documents`,
        },
      });
    }
  });
  return findings;
}

type Verify = typeof signatureVerifies;

/** Runs one signature's step; a malformed or unsupported signature becomes its finding, never an exception. */
function guarded(name: string, step: () => SignatureFinding | undefined): SignatureFinding | undefined {
  try {
    return step();
  } catch (error) {
    if (error instanceof BudgetSpent) {
      return {
        code: 'DOCUMENT_CHECK_LIMIT',
        message: `${name}: not verified: the document's signatures and their chains need more than ${MAX_SIGNATURE_VERIFICATIONS} verifications, the limit`,
      };
    }
    if (error instanceof UnsupportedAlgorithm) return { code: 'UNKNOWN_ALGORITHM', message: `${name}: unsupported ${error.message}` };
    if (error instanceof SignatureFormatError) return { code: 'SIGNATURE_DECODING_ERROR', message: `${name} is not a CMS SignedData: ${error.message}` };
    return { code: 'SIGNATURE_DECODING_ERROR', message: `${name} could not be decoded` };
  }
}

function identifies(signer: SignerInfo, certificate: Certificate): boolean {
  const sid = signer.sid;
  if ('subjectKeyIdentifier' in sid)
    return certificate.subjectKeyIdentifier !== undefined && Buffer.from(sid.subjectKeyIdentifier).equals(certificate.subjectKeyIdentifier);
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
    return verifies(
      issuer.publicKey,
      subject.signatureAlgorithm,
      { digest: digestOf(digestOid, subject.tbs)!, digestOid, data: subject.tbs },
      subject.signature,
    );
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
