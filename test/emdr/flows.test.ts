import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { runCli } from '../support/cli.js';
import { startCallbackReceiver, type CallbackReceiver, type ReceivedCallback } from '../support/callback-receiver.js';
import {
  addClinic,
  authHeaders,
  FIXTURE_ATTACHED_SIGNATURE,
  FIXTURE_SIGNATURE,
  FIXTURE_XML,
  largeXml,
  ORGANIZATION,
  post,
  registerBody,
} from '../support/emdr.js';
import { startTestService, type TestService } from '../support/service.js';
import { testPersonalSignatureOf, testSignatureOf } from '../support/signing.js';

/** Both flows of interface B over real HTTP, with a real callback receiver on loopback. */
let service: TestService;
let receiver: CallbackReceiver;
let clinic: CreatedClinicAccount;

beforeAll(async () => {
  receiver = await startCallbackReceiver();
  // The 20 MiB document's checks get a budget a loaded machine meets (XML_CHECK_TIMEOUT, at most half of JOB_EXPIRY): its test is about the round trip, not speed.
  service = await startTestService({ CALLBACK_RETRY_SCHEDULE: '0,200ms,200ms', JOB_EXPIRY: '2m', XML_CHECK_TIMEOUT: '1m' });
  clinic = await addClinic(service, receiver.url, { organizations: [ORGANIZATION] });
  receiver.signingSecret = clinic.signingSecret;
});

afterAll(async () => {
  await service?.stop();
  await receiver?.close();
});

const of = (queueMessageId: string) => (received: ReceivedCallback[]) => received.filter((callback) => callback.body.queueMessageId === queueMessageId);

async function callbacksOf(queueMessageId: string, count: number, timeoutMs?: number): Promise<ReceivedCallback[]> {
  await receiver.waitFor((received) => of(queueMessageId)(received).length >= count, timeoutMs);
  return of(queueMessageId)(receiver.received);
}

async function register(overrides: Record<string, unknown> = {}) {
  const body = registerBody(overrides);
  const answer = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), body);
  expect(answer.status).toBe(200);
  return { body, queueMessageId: answer.body.queueMessageId as string };
}

async function acceptanceErrors(overrides: Record<string, unknown>): Promise<string[]> {
  const { queueMessageId } = await register(overrides);
  const [acceptance] = await callbacksOf(queueMessageId, 1);
  expect(acceptance!.name).toBe('SendRegisterDocumentResponse');
  expect(acceptance!.body.status).toBe('error');
  return (acceptance!.body.errors as Array<{ code: string }>).map((error) => error.code);
}

describe('RegisterDocument then DemandContent', () => {
  it('registers, calls back acceptance then result, serves the file byte-identical, and document save writes it', async () => {
    const { body, queueMessageId } = await register();
    const callbacks = await callbacksOf(queueMessageId, 2);
    expect(callbacks.map((callback) => callback.name)).toEqual(['SendRegisterDocumentResponse', 'SendRegisterDocumentResultResponse']);
    for (const callback of callbacks) {
      expect(callback.signatureValid).toBe(true);
      expect(callback.headers.businessid).toBe(clinic.callbackCredentials.businessId);
      expect(callback.headers.user).toBe(clinic.callbackCredentials.user);
      expect(callback.headers.token).toBe(clinic.callbackCredentials.token);
    }
    expect(callbacks[0]!.body).toEqual({
      queueMessageId,
      localUid: body.localUid,
      status: 'success',
      warnings: [{ code: 'CERTIFICATE_CHAIN_NOT_CHECKED', message: expect.stringContaining('no trust store') }],
    });
    const result = callbacks[1]!.body;
    expect(result).toMatchObject({ queueMessageId, localUid: body.localUid, status: 'success' });
    expect(typeof result.emdrId).toBe('string');
    expect(Number.isNaN(Date.parse(result.registrationDateTime as string))).toBe(false);

    const search = await post(service.publicUrl, '/api/SearchRegistryItem', authHeaders(clinic), { localUid: body.localUid });
    expect(search).toMatchObject({
      status: 200,
      body: { items: [{ emdrId: result.emdrId, localUid: body.localUid, kind: '119', organization: ORGANIZATION, version: 1 }] },
    });

    const clientMessageId = randomUUID();
    const demand = await post(service.publicUrl, '/api/DemandContent', authHeaders(clinic), { emdrId: result.emdrId, clientMessageId });
    expect(demand.status).toBe(200);
    expect(demand.body.clientMessageId).toBe(clientMessageId);
    const fileCallbacks = await callbacksOf(demand.body.queueMessageId, 2);
    expect(fileCallbacks.map((callback) => callback.name)).toEqual(['SendDemandContentResponse', 'SendDocumentFileResultResponse']);
    expect(fileCallbacks.every((callback) => callback.signatureValid && callback.body.clientMessageId === clientMessageId)).toBe(true);
    const file = fileCallbacks[1]!.body.document as { content: string; signature: string; fileName: string; version: number };
    expect(Buffer.from(file.content, 'base64').equals(FIXTURE_XML)).toBe(true);
    expect(Buffer.from(file.signature, 'base64').equals(FIXTURE_SIGNATURE)).toBe(true);

    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'emdr-save-'));
    try {
      await fs.writeFile(path.join(dir, 'callback.json'), fileCallbacks[1]!.rawBody);
      const saved = await runCli(['document', 'save', path.join(dir, 'callback.json'), '--out', path.join(dir, 'out')]);
      expect(saved.code).toBe(0);
      const base = file.fileName.replace(/\.xml$/, '');
      expect((await fs.readFile(path.join(dir, 'out', `${base}.xml`))).equals(FIXTURE_XML)).toBe(true);
      expect((await fs.readFile(path.join(dir, 'out', `${base}.xml.sig`))).equals(FIXTURE_SIGNATURE)).toBe(true);
      // The pair the clinic saved checks out locally, as the seed asks ("to verify them").
      const verified = await runCli(['document', 'verify', path.join(dir, 'out', `${base}.xml`), path.join(dir, 'out', `${base}.xml.sig`)]);
      expect(verified).toMatchObject({ code: 0, stdout: expect.stringMatching(/^valid: /) });
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }

    const state = await fetch(`${service.publicUrl}/api/messages/${queueMessageId}`, { headers: authHeaders(clinic) });
    expect(await state.json()).toMatchObject({
      queueMessageId,
      state: 'completed',
      emdrId: result.emdrId,
      callbacks: [
        { name: 'SendRegisterDocumentResponse', state: 'delivered', attempts: [{ attempt: 1, httpStatus: 200 }] },
        { name: 'SendRegisterDocumentResultResponse', state: 'delivered', attempts: [{ attempt: 1, httpStatus: 200 }] },
      ],
    });
  });

  it('registers documents sent together (one batch of the registry) each under an emdrId of its own', async () => {
    const sent = await Promise.all(Array.from({ length: 6 }, () => register()));
    const results = await Promise.all(sent.map(async ({ queueMessageId }) => (await callbacksOf(queueMessageId, 2))[1]!.body));
    expect(results.every((result) => result.status === 'success')).toBe(true);
    expect(new Set(results.map((result) => result.emdrId)).size).toBe(6);
    // Demanded together, each file arrives whole: the registry's answer may overtake the submission's commit.
    const demands = await Promise.all(results.map((result) => post(service.publicUrl, '/api/DemandContent', authHeaders(clinic), { emdrId: result.emdrId })));
    const files = await Promise.all(
      demands.map(async (demand) => (await callbacksOf(demand.body.queueMessageId as string, 2))[1]!.body.document as { content?: string }),
    );
    for (const file of files) expect(Buffer.from(file.content ?? '', 'base64').equals(FIXTURE_XML)).toBe(true);
  });

  it('serves the current version when a newer version replaced the demanded one', async () => {
    const first = await register();
    const firstId = (await callbacksOf(first.queueMessageId, 2))[1]!.body.emdrId as string;
    const newerXml = Buffer.from('<ClinicalDocument xmlns="urn:hl7-org:v3"><title>v2</title></ClinicalDocument>');
    const second = await register({ replaces: firstId, document: newerXml.toString('base64') });
    const secondResult = (await callbacksOf(second.queueMessageId, 2))[1]!.body;
    expect(secondResult.status).toBe('success');
    const demand = await post(service.publicUrl, '/api/DemandContent', authHeaders(clinic), { emdrId: firstId });
    const file = (await callbacksOf(demand.body.queueMessageId, 2))[1]!.body.document as { content: string; version: number };
    expect(file.version).toBe(2);
    expect(Buffer.from(file.content, 'base64').equals(newerXml)).toBe(true);
  });

  it('processes the identical retry once and answers it with the same acknowledgement', async () => {
    const body = registerBody();
    const first = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), body);
    const second = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), body);
    expect(second).toEqual(first);
    const demandBody = { emdrId: '26.01.000000001', clientMessageId: randomUUID() };
    const firstDemand = await post(service.publicUrl, '/api/DemandContent', authHeaders(clinic), demandBody);
    expect(await post(service.publicUrl, '/api/DemandContent', authHeaders(clinic), demandBody)).toEqual(firstDemand);
    await callbacksOf(first.body.queueMessageId, 2);
    const state = await (await fetch(`${service.publicUrl}/api/messages/${first.body.queueMessageId}`, { headers: authHeaders(clinic) })).json();
    expect(state.callbacks).toHaveLength(2);
    expect(receiver.received.filter((callback) => callback.body.localUid === body.localUid)).toHaveLength(2);
  });

  it('recognises the identical retry whether the document came as bytes or, escaped, parsed whole', async () => {
    const body = registerBody();
    expect(body.document).toContain('/');
    const first = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), body);
    // JSON encoders that escape '/' (PHP's json_encode) send the same body; the scanner leaves it to JSON.parse.
    const escaped = JSON.stringify(body).replaceAll('/', '\\/');
    expect(await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), escaped)).toEqual(first);
    expect((await callbacksOf(first.body.queueMessageId, 2)).map((callback) => callback.body.status)).toEqual(['success', 'success']);
  });

  it('recognises the identical retry with its members, nested ones too, in another order', async () => {
    // A personal signature by another certificate than the organization's (one certificate signing twice is SIGNATURE_DUPLICATION),
    // of the worker the document names as its author (largeXml's).
    const xml = largeXml(4096);
    const signature = testPersonalSignatureOf(xml).toString('base64');
    const body = registerBody({
      document: xml.toString('base64'),
      signature: testSignatureOf(xml).toString('base64'),
      personalSignatures: [{ signer: { snils: '08765432110', role: '1' }, signature }],
    });
    const first = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), body);
    const reordered = Object.fromEntries(
      Object.entries({ ...body, personalSignatures: [{ signature, signer: { role: '1', snils: '08765432110' } }] }).reverse(),
    );
    expect(Object.keys(reordered)[0]).not.toBe(Object.keys(body)[0]);
    expect(await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), reordered)).toEqual(first);
    expect((await callbacksOf(first.body.queueMessageId, 2)).map((callback) => callback.body.status)).toEqual(['success', 'success']);
    // A different value is a different request, whatever the order.
    const changed = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), {
      ...reordered,
      personalSignatures: [{ signature, signer: { role: '2', snils: '08765432110' } }],
    });
    expect(changed.body.queueMessageId).not.toBe(first.body.queueMessageId);
  });
});

describe('acceptance errors in the acceptance callback', () => {
  it('NOT_UNIQUE_PROVIDED_ID for a used localUid with another body', async () => {
    const { body, queueMessageId } = await register();
    await callbacksOf(queueMessageId, 2);
    expect(await acceptanceErrors({ localUid: body.localUid, documentNumber: 'other' })).toEqual(['NOT_UNIQUE_PROVIDED_ID']);
  });

  it('NOT_UNIQUE_PROVIDED_ID for a used localUid with another document', async () => {
    const { body, queueMessageId } = await register();
    await callbacksOf(queueMessageId, 2);
    expect(await acceptanceErrors({ localUid: body.localUid, document: Buffer.from('<other/>').toString('base64') })).toEqual(['NOT_UNIQUE_PROVIDED_ID']);
  });

  it('VALIDATION_ERROR for a document with one character outside base64, or bad padding', async () => {
    const document = FIXTURE_XML.toString('base64');
    expect(await acceptanceErrors({ document: `${document.slice(0, 8)}-${document.slice(9)}` })).toEqual(['VALIDATION_ERROR']);
    expect(await acceptanceErrors({ document: `${document}A===` })).toEqual(['VALIDATION_ERROR']);
  });

  it('VALIDATION_ERROR for a document that is not base64', async () => {
    expect(await acceptanceErrors({ document: 'not base64!' })).toEqual(['VALIDATION_ERROR']);
  });

  it('XML_NOT_WELL_FORMED for a document that is not well-formed XML', async () => {
    expect(await acceptanceErrors({ document: Buffer.from('<a><b></a>').toString('base64') })).toEqual(['XML_NOT_WELL_FORMED']);
  });

  it('SIGNATURE_DECODING_ERROR for a signature that is not a CMS SignedData', async () => {
    expect(await acceptanceErrors({ signature: Buffer.from('just text').toString('base64') })).toEqual(['SIGNATURE_DECODING_ERROR']);
  });

  it('SIGNATURE_DECODING_ERROR for a personal signature with a NUL character', async () => {
    expect(await acceptanceErrors({ personalSignatures: [{ signer: { snils: '08765432110' }, signature: 'AAAA\u0000' }] })).toEqual([
      'SIGNATURE_DECODING_ERROR',
    ]);
  });

  it('WRONG_SIGNATURE_FORMAT for a signature with the content attached', async () => {
    expect(await acceptanceErrors({ signature: FIXTURE_ATTACHED_SIGNATURE.toString('base64') })).toEqual(['WRONG_SIGNATURE_FORMAT']);
  });

  it('NO_SIGNATURE for a SignedData without signers', async () => {
    // ContentInfo(signedData, SignedData{1, {}, {data}, signerInfos {}}) in DER.
    const empty = Buffer.from('3023' + '06092a864886f70d010702' + 'a016' + '3014' + '020101' + '3100' + '300b' + '06092a864886f70d010701' + '3100', 'hex');
    expect(await acceptanceErrors({ signature: empty.toString('base64') })).toEqual(['NO_SIGNATURE']);
  });

  it('VALIDATION_ERROR for a SNILS with a wrong check number', async () => {
    expect(await acceptanceErrors({ patientSnils: '11223344596' })).toEqual(['VALIDATION_ERROR']);
  });

  it('refuses date-times the registry does not take (before 1900, offsets beyond ±15:59) with 400, in registration and search; takes a leap second', async () => {
    for (const creationDateTime of ['2026-01-15T09:30:00-23:56', '0000-01-01T00:00:00Z']) {
      expect(await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody({ creationDateTime }))).toMatchObject({
        status: 400,
        body: { errors: [{ code: 'VALIDATION_ERROR', path: '/requestBody/creationDateTime' }] },
      });
    }
    const search = await post(service.publicUrl, '/api/SearchRegistryItem', authHeaders(clinic), {
      registerDateBegin: '0000-01-01T00:00:00Z',
      registerDateEnd: '9999-12-31T23:59:59+23:59',
    });
    expect(search.status).toBe(400);
    expect(search.body.errors.map((error: { path: string }) => error.path)).toEqual(
      expect.arrayContaining(['/requestBody/registerDateBegin', '/requestBody/registerDateEnd']),
    );
    // A leap second's form (the last real one, 2016-12-31, predates every kind of the 1520 table: NO_DOCUMENT_KIND_ON_DATE).
    const { body, queueMessageId } = await register({ creationDateTime: '2025-12-31T23:59:60Z' });
    expect((await callbacksOf(queueMessageId, 2)).map((callback) => callback.body.status)).toEqual(['success', 'success']);
    const found = await post(service.publicUrl, '/api/SearchRegistryItem', authHeaders(clinic), {
      localUid: body.localUid,
      registerDateBegin: '1900-01-01T00:00:00-15:59',
      registerDateEnd: '9999-12-31T23:59:59+15:59',
    });
    expect(found.body.items.map((item: { localUid: string }) => item.localUid)).toEqual([body.localUid]);
  });

  it('WRONG_CREATION_DATE for a creation date in the future', async () => {
    // The organization's certificate (valid until 2040) is not valid then either: the registry's rule 8.
    expect(await acceptanceErrors({ creationDateTime: '2999-01-01T00:00:00Z' })).toEqual(['DOC_DATE_MISMATCH_CERT_NOT_AFTER', 'WRONG_CREATION_DATE']);
  });

  it('REGISTRY_ITEM_NOT_FOUND for DemandContent of an unknown emdrId, and no file callback', async () => {
    const demand = await post(service.publicUrl, '/api/DemandContent', authHeaders(clinic), { emdrId: '26.01.999999999' });
    const [acceptance] = await callbacksOf(demand.body.queueMessageId, 1);
    expect(acceptance!.body).toMatchObject({ status: 'error', errors: [{ code: 'REGISTRY_ITEM_NOT_FOUND' }], clientMessageId: demand.body.clientMessageId });
    const state = await (await fetch(`${service.publicUrl}/api/messages/${demand.body.queueMessageId}`, { headers: authHeaders(clinic) })).json();
    expect(state).toMatchObject({ state: 'rejected', callbacks: [{ name: 'SendDemandContentResponse' }] });
    expect(state.callbacks).toHaveLength(1);
  });
});

describe('request errors', () => {
  it('401 UNAUTHENTICATED for a missing header or a wrong token', async () => {
    const { token: _token, ...withoutToken } = authHeaders(clinic);
    for (const headers of [withoutToken, { ...authHeaders(clinic), token: 'wrong' }, { ...authHeaders(clinic), user: 'someone' }]) {
      expect(await post(service.publicUrl, '/api/RegisterDocument', headers, registerBody())).toMatchObject({
        status: 401,
        body: { status: 'Error', errors: [{ code: 'UNAUTHENTICATED' }] },
      });
    }
  });

  it('400 VALIDATION_ERROR with paths for a body that does not match the schema', async () => {
    const answer = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody({ localUid: 'x', patientSnils: '123', extra: 1 }));
    expect(answer.status).toBe(400);
    expect(answer.body.errors.map((error: { path: string }) => error.path)).toEqual(
      expect.arrayContaining(['/requestBody/localUid', '/requestBody/patientSnils', '/requestBody/extra']),
    );
  });

  it('403 FORBIDDEN for an organization the account does not act for', async () => {
    expect(
      await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody({ organization: '1.2.643.5.1.13.13.12.2.77.1' })),
    ).toMatchObject({
      status: 403,
      body: { errors: [{ code: 'FORBIDDEN', path: '/requestBody/organization' }] },
    });
  });

  it('403 FORBIDDEN for a callbackUrl the clinic did not register', async () => {
    expect(
      await post(service.publicUrl, '/api/DemandContent', authHeaders(clinic), { emdrId: '1.2', callbackUrl: 'http://169.254.169.254/latest' }),
    ).toMatchObject({
      status: 403,
      body: { errors: [{ code: 'FORBIDDEN', path: '/requestBody/callbackUrl' }] },
    });
  });

  it('callbackUrl: 400 for anything but an http(s) base URL of RFC 3986 characters, 403 for a well-formed one not registered, 200 for the registered one', async () => {
    for (const callbackUrl of [
      'ftp://mis.example.ru/emdr',
      'https://mis.example.ru/emdr?x=1',
      'https://mis.example.ru/emdr#f',
      'https://mis.example.ru/a b',
      'https://mis.example.ru/%zz',
      'https://',
      'xhttps://mis.example.ru',
      'https://mis.example.ru/emdr\n',
    ]) {
      expect(await post(service.publicUrl, '/api/DemandContent', authHeaders(clinic), { emdrId: '1.2', callbackUrl }), callbackUrl).toMatchObject({
        status: 400,
        body: { errors: [{ code: 'VALIDATION_ERROR', path: '/requestBody/callbackUrl' }] },
      });
    }
    for (const callbackUrl of ['http://[::1]:8080/emdr', 'https://user@mis.example.ru:8443/emdr/%D0%BC%D0%B8%D1%81/', 'https://mis.example.ru']) {
      expect((await post(service.publicUrl, '/api/DemandContent', authHeaders(clinic), { emdrId: '1.2', callbackUrl })).status, callbackUrl).toBe(403);
    }
    expect((await post(service.publicUrl, '/api/DemandContent', authHeaders(clinic), { emdrId: '1.2', callbackUrl: `${receiver.url}/` })).status).toBe(200);
  });

  it("404 for another business's request, as for an unknown one", async () => {
    const { queueMessageId } = await register();
    const other = await addClinic(service, receiver.url);
    for (const id of [queueMessageId, randomUUID()]) {
      const answer = await fetch(`${service.publicUrl}/api/messages/${id}`, { headers: authHeaders(other) });
      expect(answer.status).toBe(404);
      expect(await answer.json()).toMatchObject({ status: 'Error', errors: [{ code: 'NOT_FOUND' }] });
    }
  });

  it('400 VALIDATION_ERROR for a NUL character in a free-text field', async () => {
    expect(await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody({ documentNumber: 'A\u0000' }))).toMatchObject({
      status: 400,
      body: { errors: [{ path: '/requestBody/documentNumber' }] },
    });
  });

  it('400 VALIDATION_ERROR for an empty body, as for a missing one', async () => {
    expect(await post(service.publicUrl, '/api/SearchRegistryItem', authHeaders(clinic), '')).toMatchObject({
      status: 400,
      body: { errors: [{ code: 'VALIDATION_ERROR', path: '/requestBody' }] },
    });
  });

  it('405 with an Allow header for a method a path does not support', async () => {
    for (const [route, allow] of [
      ['/api/RegisterDocument', 'POST'],
      [`/api/messages/${randomUUID()}`, 'GET'],
      ['/healthz', 'GET, HEAD'],
      ['/readyz', 'GET, HEAD'],
    ]) {
      const answer = await fetch(`${service.publicUrl}${route!}`, { method: 'DELETE', headers: authHeaders(clinic) });
      expect(answer.status).toBe(405);
      expect(answer.headers.get('allow')).toBe(allow);
    }
  });

  it('415 for a body that is not JSON', async () => {
    expect(await post(service.publicUrl, '/api/RegisterDocument', { ...authHeaders(clinic), 'content-type': 'text/xml' }, '<a/>')).toMatchObject({
      status: 415,
      body: { errors: [{ code: 'UNSUPPORTED_MEDIA_TYPE' }] },
    });
  });
});

describe('a 20 MiB document', () => {
  it('goes through registration and comes back byte-identical', { timeout: 600_000 }, async () => {
    const xml = largeXml(20 * 1024 * 1024);
    const { queueMessageId } = await register({ document: xml.toString('base64') });
    // 20 MiB checked, registered, then sent back in base64: minutes on a loaded machine.
    const [acceptance] = await callbacksOf(queueMessageId, 1, 180_000);
    expect(acceptance!.body, JSON.stringify(acceptance!.body.errors)).toMatchObject({ status: 'success' });
    const result = (await callbacksOf(queueMessageId, 2, 180_000))[1]!.body;
    expect(result.status).toBe('success');
    const demand = await post(service.publicUrl, '/api/DemandContent', authHeaders(clinic), { emdrId: result.emdrId });
    const file = (await callbacksOf(demand.body.queueMessageId, 2, 180_000))[1]!;
    expect(file.signatureValid).toBe(true);
    expect(Buffer.from((file.body.document as { content: string }).content, 'base64').equals(xml)).toBe(true);
  });
});

describe('live contract check of the callbacks', () => {
  it('every callback body the receiver got in this file matched its schema in specs/openapi.yaml', () => {
    expect(receiver.received.length).toBeGreaterThan(10);
    expect(receiver.schemaViolations).toEqual([]);
  });
});
