import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import createClient from 'openapi-fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { paths } from '../../generated/emdr-api.js';
import { signWebhook } from '../../src/callbacks/signing.js';
import { exitOf, runCli } from '../support/cli.js';
import { contractCheck } from '../support/contract.js';
import { FIXTURE_SIGNATURE, FIXTURE_XML, ORGANIZATION, registerBody } from '../support/emdr.js';
import { outputMatching, spawnTsProgram } from '../support/processes.js';
import { startTestService, type TestService } from '../support/service.js';
import { until } from '../support/until.js';

/**
 * A clinic's integration as the README tells it: an account from `clients add`, the reference
 * receiver of examples/ as its own process (its URL set on the account with `clients update` once it
 * listens), and the real service called through the typed TypeScript client generated from
 * specs/openapi.yaml; every response is checked against the spec.
 */
describe('a clinic integrating with interface B', () => {
  let service: TestService;
  let receiverProcess: ChildProcess;
  let receiverUrl: string;
  let receiverLog = '';
  let documentsDir: string;
  let account: {
    businessId: string;
    user: string;
    token: string;
    callbackCredentials: { businessId: string; user: string; token: string };
    signingSecret: string;
  };
  const contractProblems: string[] = [];

  beforeAll(async () => {
    documentsDir = await fs.mkdtemp(path.join(os.tmpdir(), 'clinic-documents-'));
    service = await startTestService({ CALLBACK_RETRY_SCHEDULE: '0,200ms,500ms,1s' });
    // The receiver needs the account's secrets to start, and binds a port of its own (0) when it does:
    // the account's callback URL is set once the receiver says where it listens, before any request.
    const added = await runCli(
      [
        'clients',
        'add',
        '--business-id',
        `clinic-${randomUUID().slice(0, 8)}`,
        '--user',
        'mis',
        '--callback-url',
        'http://receiver.invalid',
        '--organization',
        ORGANIZATION,
      ],
      service.env,
    );
    expect(added.code).toBe(0);
    account = JSON.parse(added.stdout);
    expect(account.signingSecret).toMatch(/^whsec_/);
    receiverProcess = spawnTsProgram('examples/clinic-receiver/main.ts', [
      '--secret',
      account.signingSecret,
      '--business-id',
      account.callbackCredentials.businessId,
      '--user',
      account.callbackCredentials.user,
      '--token',
      account.callbackCredentials.token,
      '--out',
      documentsDir,
      '--port',
      '0',
    ]);
    receiverProcess.stdout!.on('data', (chunk: Buffer) => (receiverLog += chunk.toString()));
    receiverProcess.stderr!.on('data', (chunk: Buffer) => (receiverLog += chunk.toString()));
    receiverUrl = (await outputMatching('the receiver', receiverProcess, /clinic-receiver: listening on (http:\/\/[\d.:]+),/, 60_000)).match[1]!;
    const updated = await runCli(['clients', 'update', '--business-id', account.businessId, '--callback-url', receiverUrl], service.env);
    expect(updated.code, updated.stderr).toBe(0);
    expect(JSON.parse(updated.stdout)).toMatchObject({ businessId: account.businessId, callbackUrls: [receiverUrl] });
  });

  afterAll(async () => {
    receiverProcess?.kill('SIGTERM');
    if (receiverProcess) await exitOf(receiverProcess);
    await service?.stop();
    await fs.rm(documentsDir, { recursive: true, force: true });
  });

  function client() {
    const api = createClient<paths>({ baseUrl: service.publicUrl, headers: { businessId: account.businessId, user: account.user, token: account.token } });
    api.use(contractCheck(contractProblems));
    return api;
  }

  /** The first document the receiver saved: NAME.xml and NAME.xml.sig (it logs `saved` once both are written). */
  async function savedDocument(): Promise<{ xml: Buffer; signature: Buffer }> {
    await until(
      `a document saved; the receiver said: ${receiverLog}`,
      async () => receiverLog,
      (log) => / saved /.test(log),
      60_000,
    );
    const signature = (await fs.readdir(documentsDir)).find((file) => file.endsWith('.xml.sig'))!;
    const base = path.join(documentsDir, signature.slice(0, -'.sig'.length));
    return { xml: await fs.readFile(base), signature: await fs.readFile(`${base}.sig`) };
  }

  it('registers a document, finds it, demands it, and the receiver saves it byte-identical', async () => {
    const api = client();
    const body = registerBody();
    const registered = await api.POST('/api/RegisterDocument', { body: body as never });
    expect(registered.response.status).toBe(200);
    expect(registered.data!.localUid).toBe(body.localUid);

    const queueMessageId = registered.data!.queueMessageId;
    const emdrId = await until(
      'the document registered',
      async () => (await api.POST('/api/SearchRegistryItem', { body: { localUid: body.localUid as string } })).data?.items[0]?.emdrId,
      (emdrId) => emdrId !== undefined,
      60_000,
    );
    const state = await api.GET('/api/messages/{queueMessageId}', { params: { path: { queueMessageId } } });
    expect(state.response.status).toBe(200);

    const demanded = await api.POST('/api/DemandContent', { body: { emdrId: emdrId! } });
    expect(demanded.response.status).toBe(200);
    expect(demanded.data!.clientMessageId).toMatch(/^[0-9a-f-]{36}$/);

    const saved = await savedDocument();
    expect(saved.xml.equals(FIXTURE_XML)).toBe(true);
    expect(saved.signature.equals(FIXTURE_SIGNATURE)).toBe(true);
    // Every callback was accepted on the first attempt: signature and headers verified.
    expect(receiverLog.match(/ accepted \(status success[,)]/gm)).toHaveLength(4);
    expect(receiverLog).not.toContain('rejected');
    // The acceptance callback's warning is printed with its code: this service has no trust store.
    expect(receiverLog).toMatch(
      /SendRegisterDocumentResponse msg_\S+ accepted \(status success\) warnings: CERTIFICATE_CHAIN_NOT_CHECKED: the signatures were verified/,
    );
  });

  it('has the receiver refuse a forged callback and acknowledge a redelivered one without processing it twice', async () => {
    const body = JSON.stringify({ queueMessageId: randomUUID(), localUid: randomUUID(), status: 'success' });
    const headers = {
      'content-type': 'application/json',
      businessId: account.callbackCredentials.businessId,
      user: account.callbackCredentials.user,
      token: account.callbackCredentials.token,
      'webhook-id': `msg_${randomUUID()}`,
      'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
      'webhook-signature': 'v1,Zm9yZ2Vk',
    };
    const forged = await fetch(`${receiverUrl}/api/SendRegisterDocumentResponse`, { method: 'POST', headers, body });
    expect(forged.status).toBe(401);
    // The receiver logs on its own stdout: the line may reach this process a little after the answer.
    const logged = (line: string) =>
      until(
        line,
        async () => receiverLog,
        (log) => log.includes(line),
        5_000,
      );
    await logged(`${headers['webhook-id']} rejected: bad signature or headers`);

    const signed = { ...headers, 'webhook-signature': signWebhook(account.signingSecret, headers['webhook-id'], Number(headers['webhook-timestamp']), body) };
    for (let delivery = 0; delivery < 2; delivery++) {
      const response = await fetch(`${receiverUrl}/api/SendRegisterDocumentResponse`, { method: 'POST', headers: signed, body });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ status: 'Success' });
    }
    await logged(`${headers['webhook-id']} accepted`);
    await logged(`${headers['webhook-id']} duplicate, acknowledged`);
  });

  it("prints an error callback's codes and messages", async () => {
    const body = JSON.stringify({
      queueMessageId: randomUUID(),
      localUid: randomUUID(),
      status: 'error',
      errors: [
        { code: 'XML_NOT_WELL_FORMED', message: 'the document is not well-formed XML' },
        { code: 'SIGNATURE_VERIFICATION_ERROR', message: 'the signature does not verify' },
      ],
    });
    const webhookId = `msg_${randomUUID()}`;
    const timestamp = Math.floor(Date.now() / 1000);
    const response = await fetch(`${receiverUrl}/api/SendRegisterDocumentResponse`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...account.callbackCredentials,
        'webhook-id': webhookId,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signWebhook(account.signingSecret, webhookId, timestamp, body),
      },
      body,
    });
    expect(response.status).toBe(200);
    const line = `SendRegisterDocumentResponse ${webhookId} accepted (status error) errors: XML_NOT_WELL_FORMED: the document is not well-formed XML; SIGNATURE_VERIFICATION_ERROR: the signature does not verify`;
    await until(
      line,
      async () => receiverLog,
      (log) => log.includes(line),
      10_000,
    );
  });

  it('answered every request with a status and body the spec documents', () => {
    expect(contractProblems).toEqual([]);
  });
});
