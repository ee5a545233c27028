import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEhrTestService } from '../ehr/support/fixtures.js';
import type { TestService } from '../support/service.js';
import { resourcesOf, syntheaPopulation, type SyntheaPopulation } from '../support/synthea.js';
import { IMPORTED, addApiKey, importRecords, pageAll, resultOf, sdkCall } from './support.js';

/**
 * `records import` of FHIR R4 data that Synthea generates at test time (several patients, their
 * hospitals and practitioners): every count and the values of every item come back through
 * interface A exactly as the files hold them; a second import updates and never duplicates; the
 * same population as Bulk Data NDJSON gives the same record; invalid entries are rejected with
 * their file, line or entry and FHIR path while the rest is imported.
 */

const ORGANIZATION = '1.2.643.5.1.13.13.12.2.77.1001';

let service: TestService;
let bundles: SyntheaPopulation;
let resources: Array<Record<string, any>>;
let apiKey: string;
let firstImport: { code: number | null; summary: any };

const iso = (text: string) => new Date(text).toISOString();
const idOf = (reference: string) => reference.replace(/^urn:uuid:/, '').replace(/^[A-Za-z]+\//, '');
const ofType = (type: string) => resources.filter((resource) => resource.resourceType === type);
const ofPatient = (type: string, patientId: string) => ofType(type).filter((resource) => idOf(resource.subject?.reference ?? '') === patientId);
const conceptText = (concept: any) => concept?.text || concept?.coding?.[0]?.display || concept?.coding?.[0]?.code || '';
const byIdentifier = (type: string, reference: string): Record<string, any> => {
  const [system, value] = decodeURIComponent(reference.split('identifier=')[1]!).split('|');
  const found = ofType(type).find((resource) => resource.identifier?.some((identifier: any) => identifier.system === system && identifier.value === value));
  if (!found) throw new Error(`no ${type} of ${reference} in the generated data`);
  return found;
};
const sorted = <T>(values: T[]) => values.map((value) => JSON.stringify(value)).sort();

const COUNTS = [
  ['appointment.patient_appointments_count', (patientId: string) => ofPatient('Encounter', patientId).length],
  [
    'appointment_result.patient_appointment_results_count',
    (patientId: string) => ofPatient('Encounter', patientId).filter((encounter) => encounter.status === 'finished').length,
  ],
  ['diagnostic_report.patient_diagnostic_reports_count', (patientId: string) => ofPatient('DiagnosticReport', patientId).length],
  ['prescription.patient_prescriptions_count', (patientId: string) => ofPatient('MedicationRequest', patientId).length],
] as const;

beforeAll(async () => {
  bundles = await syntheaPopulation({ patients: 3, seed: 11, bulk: false });
  resources = await resourcesOf(bundles);
  service = await startEhrTestService({}, ['ehr']);
  firstImport = await importRecords(service, bundles.files, { organization: ORGANIZATION });
  apiKey = (await addApiKey(service, ORGANIZATION)).apiKey;
}, 300_000);

afterAll(async () => {
  await service?.stop();
});

describe('records import of Synthea transaction Bundles', () => {
  it('imports every resource of the types it maps, skips the others by type, rejects nothing, exit 0', () => {
    const { code, summary } = firstImport;
    expect(code, JSON.stringify(summary.rejected)).toBe(0);
    const mapped = resources.filter((resource) => IMPORTED.has(resource.resourceType));
    expect(summary.imported + summary.updated).toBe(mapped.length);
    expect(summary.rejectedTotal).toBe(0);
    const skipped: Record<string, number> = {};
    for (const resource of resources) if (!IMPORTED.has(resource.resourceType)) skipped[resource.resourceType] = (skipped[resource.resourceType] ?? 0) + 1;
    expect(summary.skipped).toEqual(skipped);
    expect(summary.patients).toBe(ofType('Patient').length);
    expect(ofType('Patient').length).toBe(3);
  });

  it("answers each patient's four counts exactly (cursorType 3, GtCreated)", async () => {
    for (const patient of ofType('Patient')) {
      for (const [method, expected] of COUNTS) {
        const count = resultOf(await sdkCall(service, method, { patientId: patient.id }, { apiKey }));
        expect(count, `${method} of ${patient.id}`).toEqual({ count: expected(patient.id), support: true, cursorType: 3 });
        expect(count.count).toBeGreaterThan(0);
      }
    }
  });

  it("gives each appointment the encounter's start, duration, practitioner and organization (conditional references resolved)", async () => {
    for (const patient of ofType('Patient')) {
      const appointments = await pageAll(service, 'appointment.get_patient_appointments', 'appointments', patient.id, { apiKey }, { limit: 9, by: 'keyset' });
      const expected = ofPatient('Encounter', patient.id).map((encounter) => {
        const practitioner = byIdentifier('Practitioner', encounter.participant[0].individual.reference);
        const organization = byIdentifier('Organization', encounter.serviceProvider.reference);
        return {
          start: iso(encounter.period.start),
          duration: Math.round((Date.parse(encounter.period.end) - Date.parse(encounter.period.start)) / 60_000),
          doctor: `${practitioner.name[0].given[0]} ${practitioner.name[0].family}`,
          business: organization.name,
          services: encounter.type.map((type: any) => type.coding[0].code),
          resultId: encounter.status === 'finished',
        };
      });
      const answered = appointments.map((appointment) => ({
        start: appointment.start,
        duration: appointment.duration,
        doctor: `${appointment.doctor.name} ${appointment.doctor.surname}`,
        business: appointment.business.name,
        services: appointment.services.map((service: any) => service.id),
        resultId: appointment.resultId === appointment.id,
      }));
      expect(sorted(answered)).toEqual(sorted(expected));
      for (const appointment of appointments) {
        expect(appointment.patientId).toBe(patient.id);
        expect(appointment.patient).toMatchObject({
          id: patient.id,
          surname: patient.name[0].family,
          name: patient.name[0].given[0],
          birthdate: `${patient.birthDate} 00:00:00.000`,
        });
        // The keyset rule: created is the start, or a few ms after it when starts coincide.
        const shift = Date.parse(appointment.created) - Date.parse(appointment.start);
        expect(shift).toBeGreaterThanOrEqual(0);
        expect(shift).toBeLessThan(appointments.length);
      }
      expect(new Set(appointments.map((appointment) => appointment.created)).size).toBe(appointments.length);
    }
  });

  it('gives each diagnostic report its code, times and every result observation with value, unit, ranges and interpretation', async () => {
    const observations = new Map(ofType('Observation').map((observation) => [observation.id, observation]));
    for (const patient of ofType('Patient')) {
      const reports = await pageAll(
        service,
        'diagnostic_report.get_patient_diagnostic_reports',
        'diagnosticReports',
        patient.id,
        { apiKey },
        { limit: 13, by: 'keyset' },
      );
      const expected = ofPatient('DiagnosticReport', patient.id).map((report) => ({
        code: report.code.coding[0].code,
        begin: iso(report.effectiveDateTime),
        type: report.category?.some((category: any) => category.coding?.some((coding: any) => coding.code === 'LAB')) ? 2 : 1,
        results: sorted(
          (report.result ?? []).map((reference: any) => {
            const observation = observations.get(idOf(reference.reference))!;
            return [
              conceptText(observation.code),
              observation.valueQuantity
                ? String(observation.valueQuantity.value)
                : conceptText(observation.valueCodeableConcept) || (observation.valueString ?? ''),
              observation.valueQuantity?.unit ?? '',
            ];
          }),
        ),
      }));
      const answered = reports.map((report) => ({
        code: report.services[0].id,
        begin: report.effectivePeriod.begin,
        type: report.type,
        results: sorted(
          report.result.map((observation: any) =>
            observation.components.length > 0 && !observation.value.unit && observation.value.code === undefined
              ? [observation.observationKey, observation.value.value, '']
              : [observation.observationKey, observation.value.value, observation.value.unit ?? ''],
          ),
        ),
      }));
      // Observations with components only (blood pressure) answer their components joined; compare those by count.
      const simple = (list: typeof expected) =>
        list.map((report) => ({ ...report, results: report.results.filter((result) => !JSON.parse(result)[1].includes(';') && JSON.parse(result)[1] !== '') }));
      expect(sorted(simple(answered)).length).toBe(expected.length);
      expect(sorted(answered.map((report) => [report.code, report.begin, report.type, report.results.length]))).toEqual(
        sorted(expected.map((report) => [report.code, report.begin, report.type, report.results.length])),
      );
      expect(sorted(simple(answered))).toEqual(sorted(simple(expected)));
      for (let index = 1; index < reports.length; index += 1) expect(reports[index].issuedDate < reports[index - 1].issuedDate).toBe(true);
    }
  });

  it('gives each prescription its medication, authoring time and requester', async () => {
    const medications = new Map(ofType('Medication').map((medication) => [medication.id, medication]));
    for (const patient of ofType('Patient')) {
      const prescriptions = await pageAll(
        service,
        'prescription.get_patient_prescriptions',
        'prescriptions',
        patient.id,
        { apiKey },
        { limit: 5, by: 'offset' },
      );
      const expected = ofPatient('MedicationRequest', patient.id).map((request) => ({
        title: request.medicationCodeableConcept
          ? conceptText(request.medicationCodeableConcept)
          : conceptText(medications.get(idOf(request.medicationReference.reference))!.code),
        begin: iso(request.authoredOn),
        doctor: byIdentifier('Practitioner', request.requester.reference).name[0].family,
      }));
      expect(
        sorted(
          prescriptions.map((prescription) => ({
            title: prescription.title,
            begin: prescription.validityPeriod.begin,
            doctor: prescription.recorderDoctor.surname,
          })),
        ),
      ).toEqual(sorted(expected));
      for (const prescription of prescriptions) expect(prescription.patientInfo.id).toBe(patient.id);
    }
  });

  it("gives each finished encounter's result its conditions as diagnoses and its reports' ids", async () => {
    for (const patient of ofType('Patient')) {
      const results = await pageAll(
        service,
        'appointment_result.get_patient_appointment_results',
        'appointmentResults',
        patient.id,
        { apiKey },
        { limit: 10, by: 'keyset', newestFirst: false },
      );
      const finished = ofPatient('Encounter', patient.id).filter((encounter) => encounter.status === 'finished');
      const expected = finished.map((encounter) => ({
        start: iso(encounter.period.start),
        diagnoses: ofPatient('Condition', patient.id)
          .filter((condition) => idOf(condition.encounter?.reference ?? '') === encounter.id)
          .map((condition) => conceptText(condition.code))
          .sort(),
        reports: ofPatient('DiagnosticReport', patient.id).filter((report) => idOf(report.encounter?.reference ?? '') === encounter.id).length,
        procedures: ofPatient('Procedure', patient.id).filter((procedure) => idOf(procedure.encounter?.reference ?? '') === encounter.id).length,
      }));
      const answered = results.map((result) => ({
        start: result.start,
        diagnoses: result.diagnosis.map((diagnosis: any) => diagnosis.cd10.description).sort(),
        reports: result.diagnosticReportIds.length,
        procedures: result.scheduledProcedures.length,
      }));
      expect(sorted(answered)).toEqual(sorted(expected));
      for (let index = 1; index < results.length; index += 1) expect(results[index].created > results[index - 1].created).toBe(true);
    }
  });

  it('opens every item by id, and the id as a JSON number too', async () => {
    const patient = ofType('Patient')[0]!;
    const reports = await pageAll(
      service,
      'diagnostic_report.get_patient_diagnostic_reports',
      'diagnosticReports',
      patient.id,
      { apiKey },
      { limit: 1000, by: 'offset' },
    );
    for (const report of reports.slice(0, 20)) {
      expect(resultOf(await sdkCall(service, 'diagnostic_report.get_diagnostic_report_by_id', { id: report.id }, { apiKey })).diagnosticReport).toEqual(report);
      expect(resultOf(await sdkCall(service, 'diagnostic_report.get_diagnostic_report_by_id', { id: Number(report.id) }, { apiKey })).diagnosticReport.id).toBe(
        report.id,
      );
    }
  });

  it('a second import of the same files updates every resource and duplicates nothing', async () => {
    const before = await Promise.all(
      ofType('Patient').map((patient) =>
        Promise.all(COUNTS.map(async ([method]) => resultOf(await sdkCall(service, method, { patientId: patient.id }, { apiKey })).count)),
      ),
    );
    const ids = (
      await pageAll(service, 'appointment.get_patient_appointments', 'appointments', ofType('Patient')[0]!.id, { apiKey }, { limit: 1000, by: 'offset' })
    )
      .map((appointment) => appointment.id)
      .sort();
    const again = await importRecords(service, bundles.files, { organization: ORGANIZATION });
    expect(again.code).toBe(0);
    expect(again.summary.imported).toBe(0);
    expect(again.summary.updated).toBe(firstImport.summary.imported + firstImport.summary.updated);
    const after = await Promise.all(
      ofType('Patient').map((patient) =>
        Promise.all(COUNTS.map(async ([method]) => resultOf(await sdkCall(service, method, { patientId: patient.id }, { apiKey })).count)),
      ),
    );
    expect(after).toEqual(before);
    expect(
      (await pageAll(service, 'appointment.get_patient_appointments', 'appointments', ofType('Patient')[0]!.id, { apiKey }, { limit: 1000, by: 'offset' }))
        .map((appointment) => appointment.id)
        .sort(),
    ).toEqual(ids);
  });
});

describe('records import of the same population as Bulk Data NDJSON', () => {
  let bulkService: TestService;
  let bulk: SyntheaPopulation;

  beforeAll(async () => {
    bulk = await syntheaPopulation({ patients: 3, seed: 11, bulk: true });
    bulkService = await startEhrTestService({}, ['ehr']);
  }, 300_000);

  afterAll(async () => {
    await bulkService?.stop();
  });

  it('gives every patient the same counts as the Bundles did', async () => {
    const imported = await importRecords(bulkService, bulk.files, { organization: ORGANIZATION, source: 'bulk' });
    expect(imported.code, JSON.stringify(imported.summary.rejected)).toBe(0);
    const bulkKey = (await addApiKey(bulkService, ORGANIZATION)).apiKey;
    const bulkResources = await resourcesOf(bulk);
    const patients = bulkResources.filter((resource) => resource.resourceType === 'Patient');
    expect(patients.map((patient) => patient.id).sort()).toEqual(
      ofType('Patient')
        .map((patient) => patient.id)
        .sort(),
    );
    for (const patient of patients) {
      for (const [method, expected] of COUNTS) {
        expect(resultOf(await sdkCall(bulkService, method, { patientId: patient.id }, { apiKey: bulkKey })).count, `${method} of ${patient.id}`).toBe(
          expected(patient.id),
        );
      }
    }
  });
});

describe('rejected entries', () => {
  let folder: string;

  beforeAll(async () => {
    folder = await fs.mkdtemp(path.join(os.tmpdir(), 'ehr-gateway-bad-fhir-'));
  });

  afterAll(async () => {
    await fs.rm(folder, { recursive: true, force: true });
  });

  it('names file, line or entry and FHIR path of each; imports the rest; exit code 1', async () => {
    const patient: Record<string, any> = { ...ofType('Patient')[0]!, id: 'rejects-patient' };
    const observation = ofType('Observation').find((candidate) => candidate.valueQuantity)!;
    const good = { ...observation, id: 'rejects-good', subject: { reference: 'Patient/rejects-patient' }, encounter: undefined };
    const badValue = { ...good, id: 'rejects-bad-value', valueQuantity: { ...observation.valueQuantity, value: 'high' } };
    const orphan = { ...good, id: 'rejects-orphan', subject: { reference: 'Patient/nobody-imported' } };
    const ndjson = path.join(folder, 'export.ndjson');
    await fs.writeFile(
      ndjson,
      [JSON.stringify(patient), JSON.stringify(badValue), '{"resourceType": "Observation", ', JSON.stringify(good), JSON.stringify(orphan)].join('\n'),
    );
    const bundle = path.join(folder, 'bundle.json');
    await fs.writeFile(
      bundle,
      JSON.stringify(
        {
          resourceType: 'Bundle',
          type: 'collection',
          entry: [
            { resource: { ...good, id: 'rejects-good-2' } },
            { resource: { resourceType: 'Patient', id: 'rejects-bad-gender', gender: 42, name: [{ family: 'X', given: ['Y'] }], birthDate: '1990-01-01' } },
          ],
        },
        null,
        1,
      ),
    );
    const notBundle = path.join(folder, 'parameters.json');
    await fs.writeFile(notBundle, JSON.stringify({ resourceType: 'Parameters' }));

    const { code, summary, stderr } = await importRecords(service, [ndjson, bundle, notBundle], { organization: ORGANIZATION, source: 'rejects' });
    expect(code).toBe(1);
    expect(stderr).toContain('entries rejected');
    expect(summary.imported).toBe(3);
    expect(summary.rejected).toEqual(
      expect.arrayContaining([
        { file: 'export.ndjson', entry: 'export.ndjson:2', path: 'Observation.value[x].value', message: expect.any(String) },
        { file: 'export.ndjson', entry: 'export.ndjson:3', path: '', message: 'not valid JSON' },
        { file: 'export.ndjson', entry: 'export.ndjson:5', path: 'Observation.subject', message: 'references no imported Patient' },
        { file: 'bundle.json', entry: expect.stringMatching(/^bundle\.json#entry\[1\] \(line \d+\)$/), path: 'Patient.gender', message: expect.any(String) },
        { file: 'parameters.json', entry: 'parameters.json', path: '', message: expect.stringContaining('not a FHIR Bundle') },
      ]),
    );
    expect(summary.rejectedTotal).toBe(summary.rejected.length);
    const key = (await addApiKey(service, ORGANIZATION)).apiKey;
    expect(resultOf(await sdkCall(service, 'patient.get_patient_by_id', { id: 'rejects-patient' }, { apiKey: key })).patient.surname).toBe(
      patient.name[0].family,
    );
  });
});
