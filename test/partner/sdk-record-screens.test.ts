import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { createLogger } from '../../src/logging/logger.js';
import { INTERNAL_PASSWORD, INTERNAL_USER, startEhrTestService, unique } from '../ehr/support/fixtures.js';
import { sha1hex, VERSION } from '../ehr/support/rpc.js';
import { addApiKey, importRecords, pageAll, resultOf, sdkCall, type Answer } from '../record/support.js';
import { runCli } from '../support/cli.js';
import type { TestService } from '../support/service.js';
import { resourcesOf, syntheaPopulation } from '../support/synthea.js';

/**
 * The screens of the peer SDK's apps (GitHub GbookingLTD/medme-ehr-ts-sdk: its web_sample's
 * appointments, appointment results, prescriptions and analyses, and its services' calls) over
 * real HTTP in the SDK's exact wire format, on a record imported from Synthea's FHIR data. Facts
 * taken from the SDK (none of its code is used here):
 * - list calls send {patientId, limit, offset, lastItemCreated} (prescriptions add needRecognition)
 *   and read result.appointments / appointmentResults / prescriptions / diagnosticReports and
 *   result.validationErrors (recognitionResults for prescriptions); counts send {patientId} and read
 *   {count, support, cursorType}; by-id calls send {id} and read result.appointment and so on;
 * - its web_sample's row templates format created and start (appointments, results), created and
 *   validityPeriod.begin/end (prescriptions), issuedDate (reports) with new Date(…).toISOString():
 *   a missing one throws; they list services[].name and resultInterpreter[0]; its formatter reads a
 *   report's result[].value.value; jQuery hands a by-id call an all-digit id as a JSON number;
 * - its browser app sends gender 0 for a man and 1 for a woman (the MedMe API's numbering);
 * - its version panel posts api_info.healthcheck with fetch and no Content-Type (text/plain);
 * - RpcErrorCodes: -33403 AccessForbidden, -34005 appointment, -34006 diagnostic report, -34008
 *   prescription, -34010 appointment result not found, with the message
 *   `Request #200 appointment_result.get_appointment_result_by_id: Appointment result 123456 not found`.
 */

const ORGANIZATION = '1.2.643.5.1.13.13.12.2.77.2002';
const OTHER_ORGANIZATION = '1.2.643.5.1.13.13.12.2.77.3003';

const SCREENS = [
  {
    entity: 'appointment',
    list: 'appointment.get_patient_appointments',
    count: 'appointment.patient_appointments_count',
    byId: 'appointment.get_appointment_by_id',
    many: 'appointments',
    one: 'appointment',
    notFound: -34005,
    label: 'Appointment',
    handler: 100,
  },
  {
    entity: 'appointment_result',
    list: 'appointment_result.get_patient_appointment_results',
    count: 'appointment_result.patient_appointment_results_count',
    byId: 'appointment_result.get_appointment_result_by_id',
    many: 'appointmentResults',
    one: 'appointmentResult',
    notFound: -34010,
    label: 'Appointment result',
    handler: 200,
  },
  {
    entity: 'prescription',
    list: 'prescription.get_patient_prescriptions',
    count: 'prescription.patient_prescriptions_count',
    byId: 'prescription.get_prescription_by_id',
    many: 'prescriptions',
    one: 'prescription',
    notFound: -34008,
    label: 'Prescription',
    handler: 300,
  },
  {
    entity: 'diagnostic_report',
    list: 'diagnostic_report.get_patient_diagnostic_reports',
    count: 'diagnostic_report.patient_diagnostic_reports_count',
    byId: 'diagnostic_report.get_diagnostic_report_by_id',
    many: 'diagnosticReports',
    one: 'diagnosticReport',
    notFound: -34006,
    label: 'Diagnostic report',
    handler: 400,
  },
] as const;

let service: TestService;
let patients: Array<Record<string, any>>;
let woman: Record<string, any>;
let other: Record<string, any>;
let cred: { user: string; token: string };
let apiKey: { id: string; apiKey: string };
const itemsOfWoman = new Map<string, any[]>();

function expectError(answer: Answer, code: number, message?: string): void {
  expect(answer.error, JSON.stringify(answer)).toBeDefined();
  expect(answer.error!.code).toBe(code);
  if (message !== undefined) expect(answer.error!.message).toBe(message);
}

const E164 = (phone: string) => `+1${phone.replace(/\D/g, '')}`;

beforeAll(async () => {
  const population = await syntheaPopulation({ patients: 3, seed: 11, bulk: false });
  patients = (await resourcesOf(population)).filter((resource) => resource.resourceType === 'Patient');
  woman = patients.find((patient) => patient.gender === 'female')!;
  other = patients.find((patient) => patient !== woman)!;
  service = await startEhrTestService({}, ['ehr']);
  const imported = await importRecords(service, population.files, { organization: ORGANIZATION });
  expect(imported.code).toBe(0);
  apiKey = await addApiKey(service, ORGANIZATION);
}, 300_000);

afterAll(async () => {
  await service?.stop();
});

describe("the SDK's login, as its browser app sends a woman's data", () => {
  it('get_patient is -33000, the exchange token flow follows with gender 1, then get_patient answers her', async () => {
    cred = { user: unique('sdk-user'), token: unique('sdk-token') };
    const exchangeToken = unique('exchange');
    const phone = E164(woman.telecom[0].value);
    const stored = await fetch(`${service.internalUrl}/${VERSION}/`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'embedded_storage.save_exchange_token',
        params: { exchangeToken, authInfo: { ...cred, ttl: 3600, phone } },
        cred: { user: INTERNAL_USER, token: sha1hex(INTERNAL_PASSWORD + exchangeToken) },
      }),
    });
    expect(await stored.json()).toMatchObject({ result: { success: true } });
    expectError(await sdkCall(service, 'patient.get_patient', {}, { cred }), -33000);
    const properties = {
      id: '',
      surname: woman.name[0].family,
      name: woman.name[0].given[0],
      middleName: '',
      phone,
      email: '',
      gender: 1,
      date: `${woman.birthDate} 00:00:00Z`,
    };
    const authenticated = resultOf(
      await sdkCall(service, 'embedded_storage.authenticate', { exchangeToken, searchStrategy: 'PHONE', patientProperties: properties, medCardId: '' }),
    );
    expect(authenticated.patient).toMatchObject({ id: woman.id, gender: 2, phones: [phone] });
    expect(resultOf(await sdkCall(service, 'patient.get_patient', {}, { cred })).patient.id).toBe(woman.id);
  });
});

describe("the four screens of the SDK's browser app, with her session", () => {
  for (const screen of SCREENS) {
    it(`${screen.many}: count, every page by lastItemCreated and by offset, every item by id`, async () => {
      const count = resultOf(await sdkCall(service, screen.count, { patientId: woman.id }, { cred }));
      expect(count).toEqual({ count: expect.any(Number), support: true, cursorType: 3 });
      expect(count.count).toBeGreaterThan(0);

      // The browser app's own call: 100 items, offset 0, no lastItemCreated.
      const first = resultOf(await sdkCall(service, screen.list, { patientId: woman.id, limit: 100, offset: 0 }, { cred }));
      expect(first.validationErrors).toEqual([]);
      expect(first.recognitionResults).toEqual([]);

      const byKeyset = await pageAll(service, screen.list, screen.many, woman.id, { cred }, { limit: 7, by: 'keyset' });
      const byOffset = await pageAll(service, screen.list, screen.many, woman.id, { cred }, { limit: 7, by: 'offset' });
      const oldestFirst = await pageAll(service, screen.list, screen.many, woman.id, { cred }, { limit: 7, by: 'keyset', newestFirst: false });
      expect(byKeyset).toHaveLength(count.count);
      expect(new Set(byKeyset.map((item) => item.id)).size).toBe(count.count);
      expect(byOffset.map((item) => item.id)).toEqual(byKeyset.map((item) => item.id));
      expect(oldestFirst.map((item) => item.id)).toEqual([...byKeyset].reverse().map((item) => item.id));
      expect(first[screen.many].map((item: any) => item.id)).toEqual(byKeyset.slice(0, 100).map((item) => item.id));

      for (const item of byKeyset) {
        expect(item.patientId).toBe(woman.id);
        // What the row templates format: every date present and a date.
        const dates =
          screen.entity === 'prescription'
            ? [item.created, item.validityPeriod.begin, item.validityPeriod.end]
            : screen.entity === 'diagnostic_report'
              ? [item.issuedDate]
              : [item.created, item.start];
        for (const date of dates) expect(Number.isNaN(new Date(date).getTime()), JSON.stringify(item).slice(0, 300)).toBe(false);
        if (screen.entity === 'appointment' || screen.entity === 'diagnostic_report') expect(Array.isArray(item.services)).toBe(true);
        if (screen.entity === 'diagnostic_report') {
          expect(Array.isArray(item.resultInterpreter)).toBe(true);
          for (const observation of item.result) expect(typeof observation.value.value).toBe('string');
        }
      }
      itemsOfWoman.set(screen.entity, byKeyset);

      for (const item of byKeyset.slice(0, 15)) {
        const opened = resultOf(await sdkCall(service, screen.byId, { id: item.id }, { cred }));
        expect(opened[screen.one]).toEqual(item);
        expect(opened.validationErrors).toEqual([]);
        expect(resultOf(await sdkCall(service, screen.byId, { id: Number(item.id) }, { cred }))[screen.one].id).toBe(item.id);
      }
    });
  }

  it('every appointment with a result opens it by its resultId', async () => {
    const appointments = itemsOfWoman.get('appointment')!;
    const withResult = appointments.filter((appointment) => appointment.resultId !== '');
    expect(withResult.length).toBe(itemsOfWoman.get('appointment_result')!.length);
    for (const appointment of withResult.slice(0, 10)) {
      expect(
        resultOf(await sdkCall(service, 'appointment_result.get_appointment_result_by_id', { id: appointment.resultId }, { cred })).appointmentResult
          .appointmentId,
      ).toBe(appointment.id);
    }
  });
});

describe('who sees what', () => {
  it("another patient's id or an unknown one: -33403 for lists and counts, whether or not the patient exists", async () => {
    for (const screen of SCREENS) {
      for (const patientId of [other.id, 'no-such-patient']) {
        expectError(await sdkCall(service, screen.list, { patientId, limit: 10, offset: 0 }, { cred }), -33403, 'AccessForbidden');
        expectError(await sdkCall(service, screen.count, { patientId }, { cred }), -33403);
      }
    }
  });

  it("an item id of another patient and an unknown one answer the same not-found, in the SDK's message form", async () => {
    for (const screen of SCREENS) {
      const page = resultOf(await sdkCall(service, screen.list, { patientId: other.id, limit: 1, offset: 0 }, { apiKey: apiKey.apiKey }));
      const othersId = page[screen.many][0]?.id as string | undefined;
      for (const id of [...(othersId ? [othersId] : []), '123456', 'not-an-id']) {
        expectError(
          await sdkCall(service, screen.byId, { id }, { cred }),
          screen.notFound,
          `Request #${screen.handler} ${screen.byId}: ${screen.label} ${id} not found`,
        );
      }
      expect(othersId, `${screen.many} of the other patient`).toBeDefined();
    }
  });

  it('no credentials: -33000; an end user on a back-office method: -33403', async () => {
    for (const screen of SCREENS) {
      expectError(await sdkCall(service, screen.list, { patientId: woman.id, limit: 10, offset: 0 }), -33000);
      expectError(await sdkCall(service, screen.byId, { id: '1' }), -33000);
      expectError(
        await sdkCall(
          service,
          `${screen.entity}.get_${screen.entity === 'appointment_result' ? 'appointment_results' : screen.entity === 'diagnostic_report' ? 'diagnostic_reports' : `${screen.entity}s`}`,
          { limit: 10, offset: 0 },
          { cred },
        ),
        -33403,
      );
    }
    expectError(await sdkCall(service, 'patient.get_patients', { limit: 10, offset: 0 }, { cred }), -33403);
    expectError(await sdkCall(service, 'patient.count', {}), -33000);
  });

  it('an api key sees the patients of its organizations; one of another organization sees none of them', async () => {
    const others = await addApiKey(service, OTHER_ORGANIZATION);
    for (const screen of SCREENS) {
      const item = itemsOfWoman.get(screen.entity)![0];
      expect(resultOf(await sdkCall(service, screen.byId, { id: item.id }, { apiKey: apiKey.apiKey }))[screen.one].id).toBe(item.id);
      expectError(await sdkCall(service, screen.byId, { id: item.id }, { apiKey: others.apiKey }), screen.notFound);
      expectError(await sdkCall(service, screen.list, { patientId: woman.id, limit: 10, offset: 0 }, { apiKey: others.apiKey }), -33403);
    }
    expect(resultOf(await sdkCall(service, 'appointment.count', {}, { apiKey: others.apiKey })).count).toBe(0);
    expect(resultOf(await sdkCall(service, 'patient.get_patients', { limit: 10, offset: 0 }, { apiKey: others.apiKey })).patients).toEqual([]);
    expectError(await sdkCall(service, 'patient.get_patient_by_id', { id: woman.id }, { apiKey: others.apiKey }), -34002);
  });

  it('a revoked api key, or an unknown one, answers -33000', async () => {
    const revoked = await addApiKey(service, ORGANIZATION);
    expect(resultOf(await sdkCall(service, 'patient.count', {}, { apiKey: revoked.apiKey })).count).toBe(patients.length);
    const revoke = await runCli(['apikeys', 'revoke', revoked.id], service.env);
    expect(revoke.code, revoke.stderr).toBe(0);
    expectError(await sdkCall(service, 'patient.count', {}, { apiKey: revoked.apiKey }), -33000);
    expectError(await sdkCall(service, 'appointment.get_appointment_by_id', { id: '1' }, { apiKey: 'ehrk_unknown' }), -33000);
  });

  it('writes every read, answered or refused, to the audit trail, without personal data', async () => {
    const database = await openDatabase(service.config, createLogger('silent'), { adopt: false });
    try {
      const rows = await database
        .knex('audit_events')
        .where('action', 'like', 'appointment.%')
        .select('action', 'internal_user_id', 'internal_account', 'outcome');
      expect(rows).toEqual(
        expect.arrayContaining([
          { action: 'appointment.get_patient_appointments', internal_user_id: woman.id, internal_account: null, outcome: 'ok' },
          { action: 'appointment.get_patient_appointments', internal_user_id: other.id, internal_account: null, outcome: '-33403' },
          { action: 'appointment.get_appointment_by_id', internal_user_id: woman.id, internal_account: `apikey:${apiKey.id}`, outcome: 'ok' },
          { action: 'appointment.get_appointment_by_id', internal_user_id: null, internal_account: null, outcome: '-33000' },
        ]),
      );
      expect(JSON.stringify(rows)).not.toContain(woman.name[0].family);
    } finally {
      await database.close();
    }
  });
});

describe('the back office (api key)', () => {
  it("lists every patient's items across patients, pages by lastItemId, filters by patient, counts with cursorType 1", async () => {
    const count = resultOf(await sdkCall(service, 'diagnostic_report.count', {}, { apiKey: apiKey.apiKey }));
    expect(count.cursorType).toBe(1);
    const all: any[] = [];
    let lastItemId: string | undefined;
    for (;;) {
      const page = resultOf(
        await sdkCall(service, 'diagnostic_report.get_diagnostic_reports', lastItemId ? { limit: 25, lastItemId } : { limit: 25, offset: 0 }, {
          apiKey: apiKey.apiKey,
        }),
      ).diagnosticReports;
      all.push(...page);
      if (page.length < 25) break;
      lastItemId = page.at(-1).id;
    }
    expect(all).toHaveLength(count.count);
    expect(new Set(all.map((report) => report.patientId))).toEqual(new Set(patients.map((patient) => patient.id)));
    const hers = resultOf(
      await sdkCall(
        service,
        'diagnostic_report.get_diagnostic_reports',
        {
          limit: 1000,
          offset: 0,
          filters: { byBusiness: { businessId: '', businessName: '' }, byCreated: { from: '', to: '' }, byPatient: { patientId: woman.id } },
        },
        { apiKey: apiKey.apiKey },
      ),
    ).diagnosticReports;
    expect(hers.map((report: any) => report.id).sort()).toEqual(
      itemsOfWoman
        .get('diagnostic_report')!
        .map((report) => report.id)
        .sort(),
    );
    for (const report of all) expect(report.patient.id).toBe(report.patientId);
  });

  it('finds patients by id, phone and medcard; counts them', async () => {
    const phone = woman.telecom[0].value;
    expect(resultOf(await sdkCall(service, 'patient.get_patient_by_id', { id: woman.id }, { apiKey: apiKey.apiKey })).patient).toMatchObject({
      id: woman.id,
      gender: 2,
    });
    expect(
      resultOf(await sdkCall(service, 'patient.find_patients_by_phone', { phone: E164(phone), limit: 10, offset: 0 }, { apiKey: apiKey.apiKey })).patients.map(
        (patient: any) => patient.id,
      ),
    ).toEqual([woman.id]);
    const medcard = woman.identifier.find((identifier: any) => identifier.type?.coding?.[0]?.code === 'MR').value;
    expect(
      resultOf(
        await sdkCall(service, 'patient.find_patients_by_medcard', { medcardNumber: medcard, limit: 10, offset: 0 }, { apiKey: apiKey.apiKey }),
      ).patients.map((patient: any) => patient.id),
    ).toEqual([woman.id]);
    expect(
      resultOf(
        await sdkCall(
          service,
          'patient.get_patients',
          { limit: 10, offset: 0, filters: { byName: { name: woman.name[0].family } } },
          { apiKey: apiKey.apiKey },
        ),
      ).patients.map((patient: any) => patient.id),
    ).toEqual([woman.id]);
    expect(resultOf(await sdkCall(service, 'patient.count', {}, { apiKey: apiKey.apiKey }))).toEqual({ count: patients.length, support: true, cursorType: 1 });
  });
});

describe("the browser app's version panel", () => {
  it('posts api_info.healthcheck with fetch and no Content-Type (text/plain): answered with the version', async () => {
    const response = await fetch(`${service.publicUrl}/${VERSION}/`, {
      method: 'POST',
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'api_info.healthcheck', params: {} }),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      jsonrpc: '2.0',
      id: 1,
      result: { version: VERSION, serverHealthy: true, embeddedStorageHealthy: true, providerHealthy: true, aggregatedHealthy: [] },
    });
  });

  it('any other text/plain body keeps its 415, a batch with the healthcheck too', async () => {
    for (const body of [
      { jsonrpc: '2.0', id: 1, method: 'patient.get_patient', params: {}, cred: { user: 'u', token: 't' } },
      [{ jsonrpc: '2.0', id: 1, method: 'api_info.healthcheck', params: {} }],
    ]) {
      const response = await fetch(`${service.publicUrl}/${VERSION}/`, { method: 'POST', body: JSON.stringify(body) });
      expect(response.status).toBe(415);
    }
  });

  it('an app configured with the released 2.0.0-alpha keeps working; an unknown version names both', async () => {
    const answer = await (
      await fetch(`${service.publicUrl}/2.0.0-alpha/`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'appointment.patient_appointments_count', params: { patientId: woman.id }, cred }),
      })
    ).json();
    expect(answer).toMatchObject({ result: { count: itemsOfWoman.get('appointment')!.length } });
    const unknown = await fetch(`${service.publicUrl}/1.0.0-alpha/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).supportedVersions).toEqual([VERSION, '2.0.0-alpha']);
  });
});
