import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { createTestDatabase } from '../support/database.js';

let databaseUrl: string;
let knex: Knex;
let dir: string;

beforeAll(async () => {
  databaseUrl = await createTestDatabase();
  knex = knexFactory({ client: 'pg', connection: databaseUrl });
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'ehr-import-'));
});

afterAll(async () => {
  await knex?.destroy();
  await fs.rm(dir, { recursive: true, force: true });
});

async function importFile(name: string, content: string) {
  const file = path.join(dir, name);
  await fs.writeFile(file, content);
  return runCli(['patients', 'import', file], { DATABASE_URL: databaseUrl });
}

const patientIds = async () => (await knex('ehr_patients').orderBy('id').pluck('id')) as string[];

describe('ehr-gateway patients import', () => {
  it('imports a CSV file with quoted fields and normalizes phone and SNILS', async () => {
    const csv = [
      'id,surname,name,middleName,birthDate,gender,phone,email,snils,medcardNumber,active',
      'csv-1,Иванов,Пётр,"Сергеевич",1970-03-08,1,8 (916) 000-11-22,,11223344595,"MC, 7",true',
      'csv-2,"O""Brien",Kate,,1981-12-31,2,+44 20 7946 0958,kate@example.org,,,false',
    ].join('\r\n');
    const result = await importFile('good.csv', csv);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ imported: 2 });
    const rows = await knex('ehr_patients').whereIn('id', ['csv-1', 'csv-2']).orderBy('id');
    expect(rows[0]).toMatchObject({
      surname: 'Иванов',
      gender: 1,
      phone: '+79160001122',
      snils: '112-233-445 95',
      medcard_number: 'MC, 7',
      active: true,
      name_key: 'петр',
    });
    expect(rows[1]).toMatchObject({ surname: 'O"Brien', gender: 2, phone: '+442079460958', active: false });
  });

  it('imports a JSON array, updating a patient whose id exists', async () => {
    const json = JSON.stringify([
      { id: 'json-1', surname: 'Кузнецова', name: 'Ольга', birthDate: '1999-09-09', gender: 2, phone: '+79051234567' },
      { id: 'csv-1', surname: 'Иванов', name: 'Пётр', birthDate: '1970-03-08', gender: 1, phone: '+79160001199' },
    ]);
    const result = await importFile('good.json', json);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ imported: 2 });
    expect((await knex('ehr_patients').where({ id: 'csv-1' }).first()).phone).toBe('+79160001199');
  });

  it('rejects bad rows with their numbers and reasons, without the values, and imports nothing', async () => {
    const before = await patientIds();
    const json = JSON.stringify([
      { id: 'bad-ok', surname: 'Good', name: 'Row', birthDate: '2001-01-01', gender: 2 },
      { id: 'bad-2', surname: 'Секретова', name: 'Анна', birthDate: '2001-02-30', gender: 2, phone: 'call me' },
      { id: 'bad-ok', surname: 'Twice', name: 'Row', birthDate: '2001-01-01', gender: 7, snils: '123' },
      { surname: 'Nobody', nickname: 'x' },
      // 0 was "male" before the peer SDK's enum: refused rather than read as something else.
      { id: 'bad-5', surname: 'Нулева\u0000', name: 'Ида', birthDate: '2001-01-01', gender: 0 },
    ]);
    const result = await importFile('bad.json', json);
    expect(result.code).toBe(1);
    const report = JSON.parse(result.stdout) as { imported: number; rejected: Array<{ row: number; field: string; reason: string }> };
    expect(report.imported).toBe(0);
    expect(report.rejected).toEqual(
      expect.arrayContaining([
        { row: 2, field: 'birthDate', reason: 'is not a date YYYY-MM-DD' },
        { row: 2, field: 'phone', reason: 'is not a phone number' },
        { row: 3, field: 'id', reason: 'repeats the id of row 1' },
        { row: 3, field: 'gender', reason: 'is not 1, 2, 3 or 4' },
        { row: 3, field: 'snils', reason: 'is not 11 digits' },
        { row: 4, field: 'nickname', reason: 'is not a known field' },
        { row: 4, field: 'id', reason: 'is required' },
        { row: 5, field: 'surname', reason: 'contains a NUL character or a lone surrogate' },
        { row: 5, field: 'gender', reason: 'is not 1, 2, 3 or 4' },
      ]),
    );
    expect(report.rejected.some((problem) => problem.row === 1)).toBe(false);
    expect(result.stderr.trim()).toBe('ehr-gateway: 4 of 5 rows rejected; nothing imported');
    for (const value of ['Секретова', 'call me', '2001-02-30', 'Twice', 'Нулева']) expect(result.stdout + result.stderr).not.toContain(value);
    expect(await patientIds()).toEqual(before);
  });

  it('reports a month 13 or a year 0000 as a rejected row, like any other bad date (issue 9)', async () => {
    const csv = ['id,surname,name,birthDate,gender', 'm13,Иванов,Пётр,1990-13-01,1', 'y0,Петров,Иван,0000-05-17,1'].join('\n');
    const result = await importFile('month13.csv', csv);
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout)).toEqual({
      imported: 0,
      rejected: [
        { row: 1, field: 'birthDate', reason: 'is not a date YYYY-MM-DD' },
        { row: 2, field: 'birthDate', reason: 'is not a date YYYY-MM-DD' },
      ],
    });
    expect(result.stderr.trim()).toBe('ehr-gateway: 2 of 2 rows rejected; nothing imported');
  });

  it('answers --help with the file format', async () => {
    const result = await runCli(['patients', 'import', '--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/Usage: ehr-gateway patients import \[options\] <FILE>/);
    expect(result.stdout).toContain('birthDate');
  });

  it.each([
    [['patients', 'import'], /missing required argument/],
    [['patients', 'import', '/nonexistent/patients.csv'], /cannot read \/nonexistent\/patients.csv: ENOENT/],
    [['patients', 'import', 'a.csv', 'b.csv'], /too many arguments/],
  ])('rejects %j with one line and exit code 2', async (args, message) => {
    const result = await runCli(args, { DATABASE_URL: databaseUrl });
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(message);
  });

  it('rejects a CSV with an unknown column, exit code 2', async () => {
    const result = await importFile('columns.csv', 'id,surname,name,birthDate,gender,diagnosis\nx,A,B,2000-01-01,0,secret\n');
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/unknown CSV columns: diagnosis/);
    expect(result.stderr).not.toContain('secret');
  });
});

describe('ehr-gateway seed-demo', () => {
  it("writes the demo patients, demo-1's record, the demo api key and the demo clinic, idempotently", async () => {
    const first = await runCli(['seed-demo', '--force'], { DATABASE_URL: databaseUrl, DATA_KEY: '11'.repeat(32) });
    expect(first.code, first.stderr).toBe(0);
    const apiKey = { organization: '1.2.643.5.1.13.13.12.2.77.7991' };
    expect(JSON.parse(first.stdout)).toEqual({
      patients: 3,
      record: { imported: 10, updated: 0, patients: 1 },
      apiKey: { ...apiKey, created: true },
      clinic: { businessId: '4000125', created: true, callbackUrls: ['http://127.0.0.1:9090'], signingSecret: expect.stringMatching(/^whsec_/) },
    });
    const second = await runCli(['seed-demo', '--force'], { DATABASE_URL: databaseUrl, DATA_KEY: '11'.repeat(32) });
    expect(JSON.parse(second.stdout)).toMatchObject({
      patients: 3,
      record: { imported: 0, updated: 10, patients: 1 },
      apiKey: { ...apiKey, created: false },
      clinic: { businessId: '4000125', created: false },
    });
    expect(await knex('ehr_patients').where('id', 'like', 'demo-%').count({ n: '*' })).toEqual([{ n: '3' }]);
    for (const table of ['record_appointments', 'record_appointment_results', 'record_diagnostic_reports', 'record_prescriptions']) {
      expect(await knex(table).where('patient_id', 'demo-1').count({ n: '*' }), table).toEqual([{ n: '1' }]);
    }
  });
});
