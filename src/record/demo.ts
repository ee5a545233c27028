import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Sql } from '../db/sql.js';
import type { PatientWriter } from './mapping/patient.js';
import { importFhirFiles, type ImportSummary } from './import/import.js';

/**
 * The demo patient demo-1's medical record (seed-demo), as a МИС would export it: one FHIR R4
 * collection Bundle, imported like any other. A visit to a therapist with its diagnosis, a
 * temperature taken, a prescription and a blood count. Made up for the demo; the spec's examples
 * (specs/openrpc.json) show what interface A answers for it.
 */

/** The demo organization: the demo api key (seed-demo) sees its patients. */
export const DEMO_ORGANIZATION = '1.2.643.5.1.13.13.12.2.77.7991';
export const DEMO_SOURCE = 'demo';

const at = (text: string) => `${text}+03:00`;

export const DEMO_RECORD_BUNDLE = {
  resourceType: 'Bundle',
  type: 'collection',
  entry: [
    {
      fullUrl: 'urn:uuid:6f1c0f2e-0d5a-4e57-9d53-2f0a7c1d0001',
      resource: {
        resourceType: 'Patient',
        id: 'demo-1',
        identifier: [
          { system: 'urn:oid:1.2.643.100.3', value: '11223344595' },
          {
            type: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v2-0203', code: 'MR' }] },
            system: 'urn:oid:1.2.643.5.1.13.13.12.2.77.7991.100',
            value: 'MC-0001',
          },
        ],
        name: [{ use: 'official', family: 'Иванова', given: ['Мария', 'Петровна'] }],
        telecom: [
          { system: 'phone', value: '+7 916 123-45-67', use: 'mobile' },
          { system: 'email', value: 'maria@example.org' },
        ],
        gender: 'female',
        birthDate: '1990-05-17',
        address: [{ city: 'Москва', country: 'RU' }],
      },
    },
    {
      resource: {
        resourceType: 'Organization',
        id: 'demo-clinic-7',
        identifier: [{ system: 'urn:ietf:rfc:3986', value: `urn:oid:${DEMO_ORGANIZATION}` }],
        name: 'ГБУЗ «Городская поликлиника № 7»',
        address: [{ line: ['ул. Примерная, 7'], city: 'Москва' }],
      },
    },
    {
      resource: {
        resourceType: 'Location',
        id: 'demo-therapy',
        name: 'Терапевтическое отделение',
        address: { line: ['ул. Примерная, 7'], city: 'Москва' },
        managingOrganization: { reference: 'Organization/demo-clinic-7' },
      },
    },
    {
      resource: {
        resourceType: 'Practitioner',
        id: 'demo-practitioner-1',
        name: [{ family: 'Смирнов', given: ['Андрей'] }],
        qualification: [{ code: { coding: [{ system: 'urn:oid:1.2.643.5.1.13.13.11.1066', code: '27', display: 'Терапевт' }] } }],
      },
    },
    {
      fullUrl: 'urn:uuid:6f1c0f2e-0d5a-4e57-9d53-2f0a7c1d0002',
      resource: {
        resourceType: 'Encounter',
        id: 'demo-visit-1',
        status: 'finished',
        class: { system: 'http://terminology.hl7.org/CodeSystem/v3-ActCode', code: 'AMB' },
        type: [
          { coding: [{ system: 'urn:oid:1.2.643.5.1.13.13.11.1070', code: 'B01.047.001', display: 'Прием (осмотр, консультация) врача-терапевта первичный' }] },
        ],
        subject: { reference: 'urn:uuid:6f1c0f2e-0d5a-4e57-9d53-2f0a7c1d0001' },
        participant: [
          {
            type: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-ParticipationType', code: 'PPRF' }] }],
            individual: { reference: 'Practitioner/demo-practitioner-1' },
          },
        ],
        period: { start: at('2025-02-10T09:30:00'), end: at('2025-02-10T10:00:00') },
        reasonCode: [{ text: 'Боль в горле' }],
        diagnosis: [{ condition: { reference: 'Condition/demo-tonsillitis' }, rank: 1 }],
        location: [{ location: { reference: 'Location/demo-therapy' } }],
        serviceProvider: { reference: 'Organization?identifier=urn:ietf:rfc:3986|urn:oid:1.2.643.5.1.13.13.12.2.77.7991' },
      },
    },
    {
      resource: {
        resourceType: 'Condition',
        id: 'demo-tonsillitis',
        clinicalStatus: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/condition-clinical', code: 'active' }] },
        code: { coding: [{ system: 'urn:oid:1.2.643.5.1.13.13.11.1005', code: 'J03.9', display: 'Острый тонзиллит неуточненный' }], text: 'Острый тонзиллит' },
        subject: { reference: 'Patient/demo-1' },
        encounter: { reference: 'urn:uuid:6f1c0f2e-0d5a-4e57-9d53-2f0a7c1d0002' },
        onsetDateTime: at('2025-02-10T09:30:00'),
      },
    },
    {
      resource: {
        resourceType: 'Observation',
        id: 'demo-temperature',
        status: 'final',
        category: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'vital-signs' }] }],
        code: { coding: [{ system: 'http://loinc.org', code: '8310-5', display: 'Температура тела' }] },
        subject: { reference: 'Patient/demo-1' },
        encounter: { reference: 'Encounter/demo-visit-1' },
        effectiveDateTime: at('2025-02-10T09:40:00'),
        valueQuantity: { value: 37.8, unit: 'Cel', system: 'http://unitsofmeasure.org', code: 'Cel' },
      },
    },
    {
      resource: {
        resourceType: 'MedicationRequest',
        id: 'demo-amoxicillin',
        status: 'active',
        intent: 'order',
        medicationCodeableConcept: {
          coding: [{ system: 'http://www.nlm.nih.gov/research/umls/rxnorm', code: '723', display: 'Амоксициллин 500 мг, капсулы' }],
        },
        subject: { reference: 'Patient/demo-1' },
        encounter: { reference: 'Encounter/demo-visit-1' },
        authoredOn: at('2025-02-10T10:00:00'),
        requester: { reference: 'Practitioner/demo-practitioner-1' },
        reasonReference: [{ reference: 'Condition/demo-tonsillitis', display: 'Острый тонзиллит' }],
        dosageInstruction: [{ text: 'По 1 капсуле 3 раза в день', timing: { repeat: { frequency: 3, period: 1, periodUnit: 'd' } } }],
        dispenseRequest: { validityPeriod: { start: at('2025-02-10T10:00:00'), end: at('2025-03-12T10:00:00') }, numberOfRepeatsAllowed: 0 },
      },
    },
    {
      resource: {
        resourceType: 'Observation',
        id: 'demo-hemoglobin',
        status: 'final',
        category: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'laboratory' }] }],
        code: { coding: [{ system: 'http://loinc.org', code: '718-7', display: 'Гемоглобин' }] },
        subject: { reference: 'Patient/demo-1' },
        encounter: { reference: 'Encounter/demo-visit-1' },
        effectiveDateTime: at('2025-02-11T08:00:00'),
        issued: at('2025-02-11T12:00:00'),
        valueQuantity: { value: 128, unit: 'g/L', system: 'http://unitsofmeasure.org', code: 'g/L' },
        referenceRange: [{ low: { value: 120, unit: 'g/L' }, high: { value: 140, unit: 'g/L' } }],
        interpretation: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation', code: 'N', display: 'Normal' }] }],
      },
    },
    {
      resource: {
        resourceType: 'DiagnosticReport',
        id: 'demo-blood-count',
        status: 'final',
        category: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v2-0074', code: 'LAB', display: 'Laboratory' }] }],
        code: { coding: [{ system: 'http://loinc.org', code: '58410-2', display: 'Общий (клинический) анализ крови' }] },
        subject: { reference: 'Patient/demo-1' },
        encounter: { reference: 'Encounter/demo-visit-1' },
        effectiveDateTime: at('2025-02-11T08:00:00'),
        issued: at('2025-02-11T12:00:00'),
        resultsInterpreter: [{ reference: 'Practitioner/demo-practitioner-1' }],
        result: [{ reference: 'Observation/demo-hemoglobin' }],
        conclusion: 'Показатели в пределах нормы',
      },
    },
  ],
};

/** Imports the demo record (idempotent: a second run updates the same resources). */
export async function seedDemoRecord(sql: Sql, writePatients: PatientWriter): Promise<ImportSummary> {
  const folder = await fs.mkdtemp(path.join(os.tmpdir(), 'ehr-gateway-demo-record-'));
  try {
    const file = path.join(folder, 'demo-record.json');
    await fs.writeFile(file, JSON.stringify(DEMO_RECORD_BUNDLE));
    return await importFhirFiles(sql, [file], { source: DEMO_SOURCE, organization: DEMO_ORGANIZATION, writePatients });
  } finally {
    await fs.rm(folder, { recursive: true, force: true });
  }
}
