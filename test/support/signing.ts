import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * A throw-away PKI for tests, made with the openssl CLI: keys (GOST R 34.10-2012 through Debian's
 * gost engine, `make gost-engine`; RSA), a CA hierarchy with chosen validity dates (`openssl ca`)
 * and detached CMS signatures. Nothing here is committed: every run makes its own keys.
 */

export type KeyAlgorithm = 'gost2012_256' | 'gost2012_512' | 'rsa';

export interface Issued {
  certificate: string;
  key: string;
  algorithm: KeyAlgorithm;
}

const DIGEST: Record<KeyAlgorithm, string> = { gost2012_256: 'streebog256', gost2012_512: 'streebog512', rsa: 'sha256' };

/** The folder the system's OpenSSL loads engines from. */
function enginesDirectory(): string {
  const line = execFileSync('openssl', ['version', '-e'], { encoding: 'utf8' });
  const match = /ENGINESDIR: "(.*)"/.exec(line);
  if (!match) throw new Error(`openssl version -e: unexpected answer ${line.trim()}`);
  return match[1]!;
}

/** YYYYMMDDHHMMSSZ for `openssl ca -startdate/-enddate`. */
const caDate = (date: Date) => `${date.toISOString().replace(/[-:T]/g, '').slice(0, 14)}Z`;

export class TestPki {
  readonly dir: string;
  private readonly env: NodeJS.ProcessEnv;
  private serial = 0;

  constructor(options: { gost: boolean }) {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ehr-gateway-pki-'));
    let engine = '';
    if (options.gost) {
      const library = path.join(enginesDirectory(), 'gost.so');
      if (!fs.existsSync(library)) throw new Error(`${library} is missing: run make gost-engine (Debian's libengine-gost-openssl)`);
      engine = [
        'openssl_conf = openssl_init',
        '[openssl_init]',
        'engines = engines',
        '[engines]',
        'gost = gost',
        '[gost]',
        'engine_id = gost',
        `dynamic_path = ${library}`,
        'default_algorithms = ALL',
      ].join('\n');
    }
    fs.mkdirSync(path.join(this.dir, 'issued'));
    fs.writeFileSync(path.join(this.dir, 'index.txt'), '');
    fs.writeFileSync(path.join(this.dir, 'serial'), '1000\n');
    // Two files: OPENSSL_CONF loads the engine once per command; `openssl ca -config` reads its
    // own sections (a second load of the engine from the same file fails).
    fs.writeFileSync(path.join(this.dir, 'engine.cnf'), `${[engine, '[req]', 'distinguished_name = dn', '[dn]'].join('\n')}\n`);
    const config = [
      '[ca]',
      'default_ca = test_ca',
      '[test_ca]',
      `database = ${this.dir}/index.txt`,
      `new_certs_dir = ${this.dir}/issued`,
      `serial = ${this.dir}/serial`,
      'policy = any_name',
      'unique_subject = no',
      'copy_extensions = none',
      '[any_name]',
      'commonName = supplied',
      'organizationName = optional',
      '[ca_cert]',
      'basicConstraints = critical, CA:true',
      'keyUsage = critical, keyCertSign, cRLSign',
      'subjectKeyIdentifier = hash',
      '[signer_cert]',
      'basicConstraints = CA:false',
      'keyUsage = critical, digitalSignature, nonRepudiation',
      'subjectKeyIdentifier = hash',
      // A certificate for encryption only: the registry refuses its signatures (INVALID_CERT_KEY_USAGE).
      '[encipherment_cert]',
      'basicConstraints = CA:false',
      'keyUsage = critical, keyEncipherment',
      'subjectKeyIdentifier = hash',
    ].join('\n');
    fs.writeFileSync(path.join(this.dir, 'ca.cnf'), `${config}\n`);
    this.env = { ...process.env, OPENSSL_CONF: path.join(this.dir, 'engine.cnf') };
  }

  openssl(args: string[], input?: Buffer): Buffer {
    return execFileSync('openssl', args, { env: this.env, input, stdio: ['pipe', 'pipe', 'pipe'], maxBuffer: 256 * 1024 * 1024 });
  }

  private file(name: string): string {
    return path.join(this.dir, name);
  }

  /**
   * A key and a certificate: self-signed without `issuer`, a CA certificate with `ca`, valid from
   * `notBefore` (default: 2025-01-01, before the creation dates of the tests' documents) to
   * `notAfter` (default: a year on). `person` adds a qualified certificate's subject attributes
   * (surname, given name with patronymic, SNILS as OID 1.2.643.100.3); `encipherment` gives it a
   * keyUsage without digitalSignature; `ogrn` the organization's OGRN (OID 1.2.643.100.1), as an
   * organization's certificate, or a worker's issued for one, carries it.
   */
  issue(options: {
    algorithm: KeyAlgorithm;
    commonName: string;
    issuer?: Issued;
    ca?: boolean;
    notBefore?: Date;
    notAfter?: Date;
    paramset?: string;
    person?: { surname: string; givenName: string; snils: string };
    ogrn?: string;
    encipherment?: boolean;
  }): Issued {
    this.serial += 1;
    const name = `${this.serial}-${options.algorithm}`;
    const key = this.file(`${name}.key`);
    const keyOptions =
      options.algorithm === 'rsa'
        ? ['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048']
        : ['-algorithm', options.algorithm, '-pkeyopt', `paramset:${options.paramset ?? 'A'}`];
    this.openssl(['genpkey', ...keyOptions, '-out', key]);
    const request = this.file(`${name}.csr`);
    const person = options.person ? `/SN=${options.person.surname}/GN=${options.person.givenName}/1.2.643.100.3=${options.person.snils}` : '';
    const ogrn = options.ogrn ? `/1.2.643.100.1=${options.ogrn}` : '';
    this.openssl(['req', '-new', '-utf8', '-key', key, '-subj', `/CN=${options.commonName}${person}${ogrn}/O=ehr-gateway tests`, '-out', request]);
    const certificate = this.file(`${name}.crt`);
    const notBefore = options.notBefore ?? new Date('2025-01-01T00:00:00Z');
    const notAfter = options.notAfter ?? new Date(Date.now() + 365 * 86_400_000);
    const signedBy = options.issuer ? ['-cert', options.issuer.certificate, '-keyfile', options.issuer.key] : ['-selfsign', '-keyfile', key];
    const digest = DIGEST[(options.issuer ?? { algorithm: options.algorithm }).algorithm];
    this.openssl([
      'ca',
      '-batch',
      '-notext',
      '-config',
      this.file('ca.cnf'),
      '-in',
      request,
      '-out',
      certificate,
      ...signedBy,
      '-md',
      digest,
      '-startdate',
      caDate(notBefore),
      '-enddate',
      caDate(notAfter),
      '-preserveDN',
      '-extensions',
      options.ca ? 'ca_cert' : options.encipherment ? 'encipherment_cert' : 'signer_cert',
    ]);
    return { certificate, key, algorithm: options.algorithm };
  }

  /**
   * A detached DER CMS signature of `document` by `signer`, carrying `chain` beside the signer's
   * certificate; `coSigners` sign in the same container.
   */
  sign(document: Buffer, signer: Issued, chain: Issued[] = [], options: { coSigners?: Issued[] } = {}): Buffer {
    const input = this.file(`document-${process.hrtime.bigint()}`);
    fs.writeFileSync(input, document);
    try {
      const extra = chain.length > 0 ? ['-certfile', this.bundle(chain)] : [];
      const more = (options.coSigners ?? []).flatMap((other) => ['-signer', other.certificate, '-inkey', other.key]);
      return this.openssl([
        'cms',
        '-sign',
        '-binary',
        '-in',
        input,
        '-signer',
        signer.certificate,
        '-inkey',
        signer.key,
        ...more,
        '-md',
        DIGEST[signer.algorithm],
        '-outform',
        'DER',
        ...extra,
      ]);
    } finally {
      fs.rmSync(input, { force: true });
    }
  }

  /** A detached DER CMS signature of `document` by every signer of `signers` (one SignerInfo each). */
  signByAll(document: Buffer, signers: Issued[]): Buffer {
    const input = this.file(`document-${process.hrtime.bigint()}`);
    fs.writeFileSync(input, document);
    try {
      const each = signers.flatMap((signer) => ['-signer', signer.certificate, '-inkey', signer.key]);
      return this.openssl(['cms', '-sign', '-binary', '-in', input, ...each, '-md', DIGEST[signers[0]!.algorithm], '-outform', 'DER']);
    } finally {
      fs.rmSync(input, { force: true });
    }
  }

  /** A folder holding the PEM certificates given (a trust store). */
  trustStore(certificates: Issued[]): string {
    const folder = fs.mkdtempSync(path.join(this.dir, 'trust-'));
    certificates.forEach((issued, index) => {
      fs.copyFileSync(issued.certificate, path.join(folder, `${index}.pem`));
    });
    return folder;
  }

  private bundle(certificates: Issued[]): string {
    const file = this.file(`bundle-${process.hrtime.bigint()}.pem`);
    fs.writeFileSync(file, certificates.map((issued) => fs.readFileSync(issued.certificate, 'utf8')).join(''));
    return file;
  }

  remove(): void {
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

let defaultSigners: { pki: TestPki; clinic: Issued; doctor: Issued } | undefined;

function signers(): { pki: TestPki; clinic: Issued; doctor: Issued } {
  if (!defaultSigners) {
    const pki = new TestPki({ gost: false });
    defaultSigners = {
      pki,
      clinic: pki.issue({ algorithm: 'rsa', commonName: 'Test Clinic' }),
      doctor: pki.issue({ algorithm: 'rsa', commonName: 'Test Doctor' }),
    };
    process.once('exit', () => pki.remove());
  }
  return defaultSigners;
}

/** A detached RSA signature of `document` by this process's test signer of the organization (no engine needed). */
export function testSignatureOf(document: Buffer): Buffer {
  const { pki, clinic } = signers();
  return pki.sign(document, clinic);
}

/** A personal one, by another certificate (one certificate signing twice is the registry's SIGNATURE_DUPLICATION). */
export function testPersonalSignatureOf(document: Buffer): Buffer {
  const { pki, doctor } = signers();
  return pki.sign(document, doctor);
}
