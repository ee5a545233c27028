/**
 * Who a document says it is by: the medical workers its header names (author, legalAuthenticator,
 * authenticator: SNILS, local id, names) and its custodian organization's OGRN, read from the
 * parser's events as the document streams past (the document-check worker's parser, or one of its
 * own for `document verify`); and the registry's rules that compare them with the request's signer
 * blocks and the signatures' certificates, each with its classifier-305 code:
 * INVALID_DOCTOR_FAMILY (106), INVALID_DOCTOR_NAME (107), INVALID_DOCTOR_PATRONYMIC (108),
 * LEGAL_AUTHENTICATOR_NOT_FOUND (109), INVALID_DOCTOR_INFO (110), INVALID_DOCTOR_ID (111) and
 * SIGNER_ORG_MISMATCH (43).
 *
 * Where the document writes these, per the registry's Schematron modules and the СЭМД guides (public
 * copies: `identity:Props/identity:Ogrn`, `identity:Patronymic`, the SNILS root 1.2.643.100.3, the
 * worker's id root `<organization OID>.100.<n>.<n>.70`): the OGRN also as an `id` with root
 * 1.2.643.100.1, as some МИС write it (UNVERIFIED that the registry reads it there). A correction is
 * a change to this file.
 *
 * Imported by the worker thread, so only types from its siblings, with `.ts` specifiers.
 */
import type { SaxesParser, SaxesTagNS } from 'saxes';
import type { Certificate } from '../signatures/cms/cms.ts';
import type { NamedSignature, SignatureFinding } from '../signatures/verify.ts';

const HL7 = 'urn:hl7-org:v3';
const IDENTITY = 'urn:hl7-ru:identity';
const SNILS_ROOT = '1.2.643.100.3';
const OGRN_ROOT = '1.2.643.100.1';
/** The worker's id in the МИС: `<organization OID>.100.<n>.<n>.70` (the spec's Signer.localId). */
const LOCAL_ID_ROOT = /\.70$/;
const PERSON_ROLES = { author: 'assignedAuthor', legalAuthenticator: 'assignedEntity', authenticator: 'assignedEntity' } as const;
/** A header names a few workers; a document naming more is read up to this many. */
const MAX_PERSONS = 64;
const MAX_TEXT = 256;

export type PersonRole = keyof typeof PERSON_ROLES;

/** A medical worker of the document's header. */
export interface DocumentPerson {
  role: PersonRole;
  /** 11 digits. */
  snils?: string;
  localId?: string;
  family?: string;
  given?: string;
  patronymic?: string;
}

export interface DocumentParties {
  persons: DocumentPerson[];
  /** 13 digits, as the custodian organization's identity:Props/identity:Ogrn (or id root 1.2.643.100.1) writes it. */
  custodianOgrn?: string;
}

type NamePart = 'family' | 'given' | 'patronymic';

const digits = (text: string) => text.replace(/\D/g, '');

/**
 * Reads the header's parties from a namespace-aware parser's events: call open, text and close
 * from its handlers (saxes keeps one handler per event, so the owner forwards them).
 */
export class DocumentPartiesReader {
  private readonly path: string[] = [];
  private person: DocumentPerson | undefined;
  private capture: { into: 'person'; part: NamePart } | { into: 'ogrn' } | undefined;
  private captured = '';
  private readonly parties: DocumentParties = { persons: [] };

  open(tag: SaxesTagNS): void {
    const name = tag.uri === HL7 ? tag.local : tag.uri === IDENTITY ? `identity:${tag.local}` : `{${tag.uri}}${tag.local}`;
    this.path.push(name);
    const [root, header, second, third, fourth] = this.path;
    if (root !== 'ClinicalDocument' || header === undefined) return;
    const depth = this.path.length;
    if (header in PERSON_ROLES) this.openPerson(header as PersonRole, depth, name, tag, [second, third, fourth]);
    else if (header === 'custodian' && second === 'assignedCustodian' && third === 'representedCustodianOrganization')
      this.openCustodian(depth, name, tag, fourth);
  }

  private openPerson(role: PersonRole, depth: number, name: string, tag: SaxesTagNS, [entity, child, grandchild]: Array<string | undefined>): void {
    if (entity !== PERSON_ROLES[role]) return;
    if (depth === 3) {
      if (this.parties.persons.length < MAX_PERSONS) {
        this.person = { role };
        this.parties.persons.push(this.person);
      }
      return;
    }
    const person = this.person;
    if (!person) return;
    if (depth === 4 && name === 'id') {
      const root = attribute(tag, 'root');
      const extension = attribute(tag, 'extension');
      if (root === SNILS_ROOT && extension !== undefined) person.snils ??= digits(extension);
      else if (root !== undefined && LOCAL_ID_ROOT.test(root) && extension !== undefined) person.localId ??= extension.slice(0, MAX_TEXT);
    }
    if (depth === 6 && child === 'assignedPerson' && grandchild === 'name') {
      // The patronymic is identity:Patronymic; a second given name stands for it in documents that write it so.
      const part: NamePart | undefined =
        name === 'family'
          ? 'family'
          : name === 'identity:Patronymic'
            ? 'patronymic'
            : name === 'given'
              ? person.given === undefined
                ? 'given'
                : 'patronymic'
              : undefined;
      if (part && person[part] === undefined) this.startCapture({ into: 'person', part });
    }
  }

  private openCustodian(depth: number, name: string, tag: SaxesTagNS, child: string | undefined): void {
    if (depth === 5 && name === 'id' && attribute(tag, 'root') === OGRN_ROOT) {
      const extension = attribute(tag, 'extension');
      if (extension !== undefined) this.parties.custodianOgrn ??= digits(extension);
    }
    if (depth === 6 && child === 'identity:Props' && name === 'identity:Ogrn' && this.parties.custodianOgrn === undefined) this.startCapture({ into: 'ogrn' });
  }

  private startCapture(capture: NonNullable<DocumentPartiesReader['capture']>): void {
    this.capture = capture;
    this.captured = '';
  }

  text(text: string): void {
    if (this.capture && this.captured.length < MAX_TEXT) this.captured += text.slice(0, MAX_TEXT - this.captured.length);
  }

  close(): void {
    if (this.capture) {
      const value = this.captured.trim();
      if (this.capture.into === 'ogrn') {
        if (value) this.parties.custodianOgrn = digits(value);
      } else if (this.person && value) this.person[this.capture.part] = value;
      this.capture = undefined;
    }
    if (this.path.length === 3) this.person = undefined;
    this.path.pop();
  }

  result(): DocumentParties {
    return this.parties;
  }
}

function attribute(tag: SaxesTagNS, name: string): string | undefined {
  const found = tag.attributes[name];
  return typeof found === 'object' && found !== null && found.uri === '' ? found.value : undefined;
}

/** Reads a whole document's parties with a parser of its own (`document verify`); undefined when it is not well-formed XML. */
export class DocumentPartiesParser {
  private readonly reader = new DocumentPartiesReader();
  private readonly parser: SaxesParser<{ xmlns: true }>;
  private failed = false;

  // No parameter properties: Node runs this file with its types stripped (the worker imports it).
  constructor(parser: SaxesParser<{ xmlns: true }>) {
    this.parser = parser;
    parser.on('opentag', (tag) => this.reader.open(tag));
    parser.on('text', (text) => this.reader.text(text));
    parser.on('closetag', () => this.reader.close());
    parser.on('error', () => {
      this.failed = true;
    });
  }

  write(text: string): void {
    if (!this.failed) this.parser.write(text);
  }

  finish(): DocumentParties | undefined {
    if (!this.failed) this.parser.close();
    return this.failed ? undefined : this.reader.result();
  }
}

/** Names compare trimmed, case-insensitive, with ё as е (the document and the МИС may spell them either way). */
const nameKey = (text: string) => text.trim().toLocaleLowerCase('ru').replaceAll('ё', 'е').replace(/\s+/g, ' ');

/** A signature with the certificate that made it, when verification found one. */
export interface SignedBy {
  signature: NamedSignature;
  certificate?: Certificate;
}

/** The registry's rules between the document's parties, the request's signer blocks and the certificates. */
export function partyFindings(parties: DocumentParties, signed: readonly SignedBy[]): SignatureFinding[] {
  const findings: SignatureFinding[] = [];
  for (const { signature, certificate } of signed) {
    const ogrn = certificate?.subjectText.ogrn;
    if (ogrn !== undefined && parties.custodianOgrn !== undefined && digits(ogrn) !== parties.custodianOgrn) {
      findings.push({
        code: 'SIGNER_ORG_MISMATCH',
        message: `${signature.name}: the certificate's organization (OGRN) is not the document's custodian organization`,
      });
    }
    if (signature.signer) findings.push(...signerAgainstDocument(signature, parties));
  }
  const signers = new Set(signed.flatMap(({ signature }) => (signature.signer ? [digits(signature.signer.snils)] : [])));
  for (const person of parties.persons) {
    if (person.role === 'legalAuthenticator' && person.snils !== undefined && !signers.has(person.snils)) {
      findings.push({
        code: 'LEGAL_AUTHENTICATOR_NOT_FOUND',
        message: 'personalSignatures: no signer block names the medical worker who gives the document legal force (its legalAuthenticator)',
      });
    }
  }
  return findings;
}

/** A signer block against the document's worker of the same SNILS. */
function signerAgainstDocument(signature: NamedSignature, parties: DocumentParties): SignatureFinding[] {
  const signer = signature.signer!;
  const person = parties.persons.find((candidate) => candidate.snils === digits(signer.snils));
  const name = signature.name.replace(/\/signature$/, '/signer');
  if (!person) return [{ code: 'INVALID_DOCTOR_INFO', message: `${name}: the signer's SNILS is not among the medical workers the document names` }];
  const findings: SignatureFinding[] = [];
  const differs = (given: string | undefined, written: string | undefined) =>
    given !== undefined && written !== undefined && nameKey(given) !== nameKey(written);
  if (differs(signer.lastName, person.family))
    findings.push({ code: 'INVALID_DOCTOR_FAMILY', message: `${name}: lastName differs from the document's family name of the worker` });
  if (differs(signer.firstName, person.given))
    findings.push({ code: 'INVALID_DOCTOR_NAME', message: `${name}: firstName differs from the document's given name of the worker` });
  if (differs(signer.middleName, person.patronymic))
    findings.push({ code: 'INVALID_DOCTOR_PATRONYMIC', message: `${name}: middleName differs from the document's patronymic of the worker` });
  if (signer.localId !== undefined && person.localId !== undefined && signer.localId.trim() !== person.localId.trim())
    findings.push({ code: 'INVALID_DOCTOR_ID', message: `${name}: localId differs from the worker's id in the document` });
  return findings;
}
