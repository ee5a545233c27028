import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { SaxesParser } from 'saxes';
import { UsageError } from '../cli/kit.js';
import { parseCertificate } from './signatures/cms/cms.js';
import { loadTrustStore, TrustStoreError } from './signatures/trust-store.js';
import { DocumentSignatureCheck, type NamedSignature, type SignerBlock } from './signatures/verify.js';
import { instantMs } from './values/instant.js';
import { kindFindings } from './prechecks/kinds.js';
import { DocumentPartiesParser, partyFindings } from './prechecks/document-parties.js';
import { FILE_SLICE_BYTES } from './pipeline/lifecycle/request-files.js';

// `document verify` of src/emdr/commands.ts, in a module of its own: the signature checks (ASN.1, the
// curves) load when the command runs, not at every command's start.

/** Signature files are a few kilobytes; a bigger one is not a signature a clinic meant to send. */
const MAX_SIGNATURE_FILE_BYTES = 1024 * 1024;

export interface VerifyOptions {
  trustStore?: string;
  creationDateTime?: string;
  kind?: string;
  signer: string[];
}

/** `--signer SNILS[,LAST,FIRST[,MIDDLE[,LOCAL_ID]]]`: a personal signature's signer block, as far as the certificate and the document show it. */
function signerBlockOf(value: string): SignerBlock {
  const [snils, lastName, firstName, middleName, localId] = value.split(',').map((part) => part.trim());
  if (!snils || !/^[0-9 -]{11,14}$/.test(snils)) throw new UsageError(`--signer "${value}": give SNILS[,LAST_NAME,FIRST_NAME[,MIDDLE_NAME[,LOCAL_ID]]]`);
  return {
    snils,
    ...(lastName ? { lastName } : {}),
    ...(firstName ? { firstName } : {}),
    ...(middleName ? { middleName } : {}),
    ...(localId ? { localId } : {}),
  };
}

/**
 * `document verify`: the acceptance stage's checks on local files: the signature checks and the
 * registry's signature rules, over the organization's signature and the personal ones after it
 * (as RegisterDocument's `signature` and `personalSignatures`), and with --kind the kinds table;
 * exit 0 valid, 1 invalid.
 */
export async function verifyDocumentPair(documentPath: string, signaturePaths: string[], options: VerifyOptions): Promise<void> {
  let documentCreatedAt: number | undefined;
  if (options.creationDateTime !== undefined) {
    try {
      documentCreatedAt = instantMs(options.creationDateTime);
    } catch {
      throw new UsageError(`--creation-date-time "${options.creationDateTime}" is not an RFC 3339 date-time`);
    }
  }
  if (options.kind !== undefined && options.creationDateTime === undefined)
    throw new UsageError('--kind needs --creation-date-time (a kind is checked on the creation date)');
  const signers = options.signer.map(signerBlockOf);
  if (signers.length > Math.max(0, signaturePaths.length - 1)) throw new UsageError('more --signer than personal signatures (the signatures after the first)');
  let trustAnchors;
  if (options.trustStore !== undefined) {
    try {
      trustAnchors = loadTrustStore(options.trustStore).map(parseCertificate);
    } catch (error) {
      if (error instanceof TrustStoreError) throw new UsageError(`--trust-store: ${error.message}`);
      throw error;
    }
  }
  const readable = async (file: string) => {
    const stat = await fs.stat(file).catch(() => undefined);
    if (!stat?.isFile()) throw new UsageError(`${file}: no such file`);
    return stat;
  };
  await readable(documentPath);
  const signatures: NamedSignature[] = [];
  for (const [index, signaturePath] of signaturePaths.entries()) {
    if ((await readable(signaturePath)).size > MAX_SIGNATURE_FILE_BYTES) throw new UsageError(`${signaturePath}: larger than 1 MiB, not a detached signature`);
    const signer = index > 0 ? signers[index - 1] : undefined;
    signatures.push({
      name: path.basename(signaturePath),
      bytes: await fs.readFile(signaturePath),
      ...(index > 0 ? { personal: true } : {}),
      ...(signer ? { signer } : {}),
    });
  }
  const check = new DocumentSignatureCheck(signatures, {
    now: Date.now(),
    ...(documentCreatedAt === undefined ? {} : { documentCreatedAt }),
    ...(trustAnchors ? { trustAnchors } : {}),
  });
  // The document's medical workers and custodian, read in the same pass (the acceptance stage's worker reads them so too).
  const parties = new DocumentPartiesParser(new SaxesParser({ xmlns: true }));
  const decoder = new TextDecoder('utf-8');
  for await (const chunk of createReadStream(documentPath, { highWaterMark: FILE_SLICE_BYTES })) {
    if (check.needsDocument) check.update(chunk as Buffer);
    parties.write(decoder.decode(chunk as Buffer, { stream: true }));
  }
  parties.write(decoder.decode());
  const signatureFindings = check.finish();
  const documentParties = parties.finish();
  const findings = [
    ...(options.kind === undefined ? [] : kindFindings(options.kind, options.creationDateTime!)),
    ...signatureFindings,
    ...(documentParties ? partyFindings(documentParties, check.signedBy()) : []),
  ];
  for (const finding of findings) process.stdout.write(`${finding.code}: ${finding.message}\n`);
  if (findings.length > 0) {
    process.exitCode = 1;
    return;
  }
  process.stdout.write(
    `valid: ${signaturePaths.map((file) => path.basename(file)).join(', ')} ${signaturePaths.length > 1 ? 'verify' : 'verifies'} over ${path.basename(documentPath)}\n`,
  );
  if (!trustAnchors) process.stdout.write('warning: the certificate chain was not checked (no --trust-store)\n');
}
