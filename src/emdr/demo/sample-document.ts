/**
 * A sample ЭМД a clinic can send to a test gateway: a small CDA-like consultation protocol, a
 * detached GOST R 34.10-2012 signature of the organization and one personal signature (each by a
 * freshly generated test key with a self-signed certificate), and the ready RegisterDocument body.
 * `ehr-gateway document sample --out DIR` writes them; scripts/spec-examples.ts puts one into the spec.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Command } from 'commander';
import type { components } from '../../../generated/emdr-api.js';
import { printJson, UsageError } from '../../cli/kit.js';
import { isCallbackUrl } from '../accounts/callback-url.js';
import { DEMO_CLINIC } from './demo-clinic.js';
import type { TestCertificateOptions } from '../signatures/test-signer.js';

type RegisterDocumentRequest = components['schemas']['RegisterDocumentRequest'];

/** The organization of the spec's examples (the demo clinic acts for every organization). */
export const SAMPLE_ORGANIZATION = '1.2.643.5.1.13.13.12.2.77.7973';
/** demo-1 of `seed-demo`, Иванова Мария Петровна. */
const SAMPLE_PATIENT = { snils: '112-233-445 95', surname: 'Иванова', name: 'Мария', middleName: 'Петровна', birthDate: '19900517', gender: 2 };
/** The doctor of the personal signature (a SNILS with a valid check number). */
const SAMPLE_DOCTOR = { snils: '087-654-321 02', surname: 'Петров', name: 'Сергей', middleName: 'Иванович', localId: '4' };

export interface SampleOptions {
  localUid?: string;
  callbackUrl?: string;
  organization?: string;
  documentNumber?: string;
  /** When the document was made and signed (default: a minute ago). */
  createdAt?: Date;
  /** Validity of the test certificates (default: a day before `createdAt` to a year after it). */
  certificateValidity?: { notBefore: Date; notAfter: Date };
}

export interface Sample {
  xml: Buffer;
  /** The organization's detached signature (`.xml.sig`). */
  signature: Buffer;
  request: RegisterDocumentRequest;
  /** The self-signed certificates: the organization's, then the doctor's. */
  certificates: Buffer[];
}

const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** HL7 CDA time: YYYYMMDDHHMMSS+0300 (Moscow). */
function cdaTime(at: Date): string {
  const moscow = new Date(at.getTime() + 3 * 3_600_000);
  return `${moscow
    .toISOString()
    .replace(/\.\d+Z$/, '')
    .replace(/[-:T]/g, '')}+0300`;
}

/** RFC 3339 in Moscow time, seconds precision: how a МИС in Moscow would write creationDateTime. */
function moscowDateTime(at: Date): string {
  const moscow = new Date(at.getTime() + 3 * 3_600_000);
  return `${moscow.toISOString().replace(/\.\d+Z$/, '')}+03:00`;
}

function sampleXml(localUid: string, organization: string, createdAt: Date): Buffer {
  const patient = SAMPLE_PATIENT;
  return Buffer.from(`<?xml version="1.0" encoding="UTF-8"?>
<ClinicalDocument xmlns="urn:hl7-org:v3">
  <realmCode code="RU"/>
  <typeId root="2.16.840.1.113883.1.3" extension="POCD_MT000040"/>
  <id root="${organization}.100.1.1.51" extension="${localUid}"/>
  <code code="6" codeSystem="1.2.643.5.1.13.13.11.1522" displayName="Протокол консультации"/>
  <title>Протокол консультации (пример ehr-gateway, не медицинский документ)</title>
  <effectiveTime value="${cdaTime(createdAt)}"/>
  <recordTarget>
    <patientRole>
      <id root="1.2.643.100.3" extension="${patient.snils}"/>
      <patient>
        <name><family>${escapeXml(patient.surname)}</family><given>${escapeXml(patient.name)}</given><given>${escapeXml(patient.middleName)}</given></name>
        <administrativeGenderCode code="${patient.gender}" codeSystem="1.2.643.5.1.13.13.11.1040"/>
        <birthTime value="${patient.birthDate}"/>
      </patient>
    </patientRole>
  </recordTarget>
  <author>
    <time value="${cdaTime(createdAt)}"/>
    <assignedAuthor>
      <id root="1.2.643.100.3" extension="${SAMPLE_DOCTOR.snils}"/>
      <assignedPerson><name><family>${escapeXml(SAMPLE_DOCTOR.surname)}</family><given>${escapeXml(SAMPLE_DOCTOR.name)}</given></name></assignedPerson>
    </assignedAuthor>
  </author>
  <custodian><assignedCustodian><representedCustodianOrganization><id root="${organization}"/></representedCustodianOrganization></assignedCustodian></custodian>
  <component>
    <structuredBody>
      <component>
        <section>
          <title>Заключение</title>
          <text>Здорова. Документ создан командой ehr-gateway document sample для проверки интеграции.</text>
        </section>
      </component>
    </structuredBody>
  </component>
</ClinicalDocument>
`);
}

export async function createSample(options: SampleOptions = {}): Promise<Sample> {
  // Loaded here: the test signer's GOST arithmetic is this command's alone, not every command's start.
  const { createTestSigner } = await import('../signatures/test-signer.js');
  const localUid = options.localUid ?? randomUUID();
  const organization = options.organization ?? SAMPLE_ORGANIZATION;
  const createdAt = options.createdAt ?? new Date(Date.now() - 60_000);
  const validity = options.certificateValidity ?? {
    notBefore: new Date(createdAt.getTime() - 86_400_000),
    notAfter: new Date(createdAt.getTime() + 365 * 86_400_000),
  };
  const certificate = (commonName: string): TestCertificateOptions => ({ commonName, organization: 'ehr-gateway test certificate', ...validity });
  const organizationSigner = createTestSigner(certificate(`Тестовая организация ${organization}`));
  const doctorSigner = createTestSigner(certificate(`${SAMPLE_DOCTOR.surname} ${SAMPLE_DOCTOR.name}, врач (тест)`));
  const xml = sampleXml(localUid, organization, createdAt);
  const signature = organizationSigner.sign(xml, createdAt);
  const request: RegisterDocumentRequest = {
    localUid,
    // «Протокол консультации (CDA) Редакция 4» of NSI 1.2.643.5.1.13.13.11.1520, in force since 2022-01-01.
    kind: '119',
    organization,
    patientSnils: SAMPLE_PATIENT.snils.replace(/[^0-9]/g, ''),
    creationDateTime: moscowDateTime(createdAt),
    documentNumber: options.documentNumber ?? `SAMPLE-${localUid.slice(0, 8)}`,
    document: xml.toString('base64'),
    signature: signature.toString('base64'),
    personalSignatures: [
      {
        signer: {
          localId: SAMPLE_DOCTOR.localId,
          lastName: SAMPLE_DOCTOR.surname,
          firstName: SAMPLE_DOCTOR.name,
          middleName: SAMPLE_DOCTOR.middleName,
          snils: SAMPLE_DOCTOR.snils.replace(/[^0-9]/g, ''),
          role: '1',
        },
        signature: doctorSigner.sign(xml, createdAt).toString('base64'),
      },
    ],
    callbackUrl: options.callbackUrl ?? DEMO_CLINIC.callbackUrls[0],
  };
  return { xml, signature, request, certificates: [organizationSigner.certificate, doctorSigner.certificate] };
}

/** `document sample`: writes sample.xml, sample.xml.sig, register-document.json and the test certificates. */
export function registerSampleCommand(document: Command): void {
  document
    .command('sample')
    .description('write a sample document signed with fresh GOST test keys, and the RegisterDocument body that sends it (for the demo clinic of `make run`)')
    .requiredOption('--out <dir>', 'directory to write into (created when missing)')
    .option('--callback-url <url>', "the request's callbackUrl (one the clinic registered)", DEMO_CLINIC.callbackUrls[0])
    .option('--organization <oid>', 'the organization that signs it (the clinic account must act for it)', SAMPLE_ORGANIZATION)
    .action(async (options: { out: string; callbackUrl: string; organization: string }) => {
      if (!(await isCallbackUrl(options.callbackUrl))) throw new UsageError(`--callback-url "${options.callbackUrl}" is not an http(s) base URL`);
      if (!/^[0-2](\.(0|[1-9][0-9]*))+$/.test(options.organization)) throw new UsageError(`--organization "${options.organization}" is not an OID`);
      const sample = await createSample({ callbackUrl: options.callbackUrl, organization: options.organization });
      await fs.mkdir(options.out, { recursive: true });
      const files = {
        xml: path.join(options.out, 'sample.xml'),
        signature: path.join(options.out, 'sample.xml.sig'),
        request: path.join(options.out, 'register-document.json'),
        certificates: path.join(options.out, 'test-certificates.pem'),
      };
      await fs.writeFile(files.xml, sample.xml);
      await fs.writeFile(files.signature, sample.signature);
      await fs.writeFile(files.request, `${JSON.stringify(sample.request, null, 2)}\n`);
      const { certificatePem } = await import('../signatures/test-signer.js');
      await fs.writeFile(files.certificates, sample.certificates.map(certificatePem).join(''));
      printJson({ ...files, localUid: sample.request.localUid });
    });
}
