import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { createTestDatabase } from '../support/database.js';
import { addClinic, authHeaders, largeXml, post, registerBody } from '../support/emdr.js';
import { startTestService, type TestService } from '../support/service.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';

/**
 * Issue 21 M4: a clinic that sends one large document again and again (inside its BYTE_QUOTA) gets
 * each identical retry answered from the request stored the first time, without its document
 * crossing to PostgreSQL again: staged, each retry's megabytes were uploaded, joined and thrown away
 * by the insert's conflict. The service (intake only) reaches PostgreSQL through a proxy that
 * counts what it sends.
 */
describe('interface B: the identical retry of a large document', () => {
  let proxy: TcpProxy;
  let service: TestService;
  let clinic: CreatedClinicAccount;

  beforeAll(async () => {
    const databaseUrl = await createTestDatabase();
    const direct = new URL(databaseUrl);
    proxy = await startTcpProxy(direct.hostname, Number(direct.port));
    const proxied = new URL(databaseUrl);
    proxied.port = String(proxy.port);
    service = await startTestService({ DATABASE_URL: proxied.toString(), BYTE_QUOTA: '4gb' }, ['emdr']);
    clinic = await addClinic(service, 'http://127.0.0.1:9');
  }, 120_000);

  afterAll(async () => {
    await service?.stop();
    await proxy?.close();
  });

  it('answers with the first acknowledgement and sends PostgreSQL none of the document again', async () => {
    const body = registerBody({ document: largeXml(4 * 1024 * 1024).toString('base64') });
    const sentBefore = proxy.sentBytes();
    const first = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), body);
    expect(first.status).toBe(200);
    const sentForFirst = proxy.sentBytes() - sentBefore;
    // The first time the document crosses whole (4 MiB decoded).
    expect(sentForFirst).toBeGreaterThan(4 * 1024 * 1024);
    for (let retry = 0; retry < 3; retry += 1) {
      const sentBeforeRetry = proxy.sentBytes();
      expect(await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), body)).toEqual(first);
      // Its lookup, the quota's and the audit's rows: kilobytes, not the document's megabytes.
      expect(proxy.sentBytes() - sentBeforeRetry).toBeLessThan(64 * 1024);
    }
  });

  it('stores a large document that differs from the first only in its localUid as a request of its own', async () => {
    const document = largeXml(2 * 1024 * 1024).toString('base64');
    const first = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody({ document }));
    const sentBefore = proxy.sentBytes();
    const second = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody({ document }));
    expect(second.status).toBe(200);
    expect(second.body.queueMessageId).not.toBe(first.body.queueMessageId);
    expect(proxy.sentBytes() - sentBefore).toBeGreaterThan(2 * 1024 * 1024);
  });
});
