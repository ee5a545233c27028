import fs from 'node:fs';
import path from 'node:path';
import { parseCertificate, SignatureFormatError } from './cms/cms.ts';

/** More than any real trust store (the accredited CAs' roots and intermediates are a few hundred). */
const MAX_TRUST_STORE_CERTIFICATES = 5000;
const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\s]+)-----END CERTIFICATE-----/g;

export class TrustStoreError extends Error {}

/**
 * The certificates (DER) of every PEM file in `directory` (roots and intermediates alike), each
 * checked to parse as an X.509 certificate. Throws TrustStoreError naming the file at fault.
 */
export function loadTrustStore(directory: string): Uint8Array[] {
  let names: string[];
  try {
    names = fs.readdirSync(directory).sort();
  } catch (error) {
    throw new TrustStoreError(`cannot read the folder ${directory} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const certificates: Uint8Array[] = [];
  for (const name of names) {
    const file = path.join(directory, name);
    if (!fs.statSync(file).isFile()) continue;
    const text = fs.readFileSync(file, 'latin1');
    for (const match of text.matchAll(PEM_CERTIFICATE)) {
      const der = Buffer.from(match[1]!.replace(/\s/g, ''), 'base64');
      try {
        parseCertificate(der);
      } catch (error) {
        if (error instanceof SignatureFormatError) throw new TrustStoreError(`${name}: a certificate that does not parse (${error.message})`);
        throw error;
      }
      certificates.push(der);
      if (certificates.length > MAX_TRUST_STORE_CERTIFICATES) throw new TrustStoreError(`more than ${MAX_TRUST_STORE_CERTIFICATES} certificates`);
    }
  }
  if (certificates.length === 0) throw new TrustStoreError(`no PEM certificate in ${directory}`);
  return certificates;
}

/** What the metrics report of a loaded trust store: how many certificates, and when the first of them expires (ms since the epoch). */
export function trustStoreSummary(certificates: readonly Uint8Array[]): { certificates: number; earliestNotAfterMs: number } {
  return { certificates: certificates.length, earliestNotAfterMs: Math.min(...certificates.map((der) => parseCertificate(der).notAfter)) };
}
