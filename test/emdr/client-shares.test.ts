import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { addClinic, authHeaders, heldRegisterDocument, registerBody } from '../support/emdr.js';
import { scrapeOne } from '../support/metrics.js';
import { startServeProcess, type ServeProcess } from '../support/processes.js';
import { postHead, rawExchange, type RawAnswer } from '../support/raw-http.js';
import { until } from '../support/until.js';

const OTHER_ADDRESS = '127.0.0.2';

/**
 * CLIENT_REQUESTS_IN_PROGRESS: while two client addresses are served, each has at most that many
 * interface B requests in progress; the rest wait, unread, and go on in order as the address's own
 * requests end. A client alone is not held. Against serve as its own process, on raw connections
 * from 127.0.0.1 and 127.0.0.2, with the share at 1.
 */
describe('interface B: the share of a client address', () => {
  let serve: ServeProcess;
  let first: CreatedClinicAccount;
  let second: CreatedClinicAccount;
  let port: number;

  const metric = (series: string) => scrapeOne(serve.internalUrl, series);
  const reading = () => metric('ehr_gateway_intake_requests{state="reading"}');
  const send = (clinic: CreatedClinicAccount, localAddress?: string): Promise<RawAnswer> => {
    const body = Buffer.from(JSON.stringify(registerBody()));
    return rawExchange(port, postHead('/api/RegisterDocument', authHeaders(clinic), body.length), body, {
      waitMs: 120_000,
      ...(localAddress ? { localAddress } : {}),
    });
  };

  beforeAll(async () => {
    serve = await startServeProcess({ RATE_LIMIT: '10000', CLIENT_REQUESTS_IN_PROGRESS: '1' });
    const database = { databaseUrl: serve.env.DATABASE_URL!, dataKey: Buffer.from(serve.env.DATA_KEY!, 'hex') };
    first = await addClinic(database, 'http://127.0.0.1:9');
    second = await addClinic(database, 'http://127.0.0.1:9');
    port = Number(new URL(serve.publicUrl).port);
  });

  afterAll(async () => {
    await serve?.stop();
  });

  it('holds an address past its share only while another address is served, and lets it go on in order', async () => {
    const held = heldRegisterDocument(port, first);
    await until('the first address’s held request in progress', reading, (count) => count === 1, 120_000);
    // Alone, the address is not held by its share: a second request of it is answered meanwhile.
    expect((await send(first)).status).toBe(200);

    const heldOther = heldRegisterDocument(port, second, OTHER_ADDRESS);
    await until('both addresses’ held requests in progress', reading, (count) => count === 2, 120_000);
    // Now both are served: the first address's next request waits for its own held one, unread.
    let waitingAnswer: RawAnswer | undefined;
    const waiting = send(first).then((answer) => (waitingAnswer = answer));
    await until(
      'the request waiting for its address’s share',
      () => metric('ehr_gateway_client_share_waiting_requests'),
      (count) => count === 1,
      120_000,
    );
    expect(await reading()).toBe(2);
    expect(waitingAnswer).toBeUndefined();

    // The held request ends: the waiting one goes on.
    held.finish();
    expect((await held.answer).status).toBe(200);
    await waiting;
    expect(waitingAnswer!.status).toBe(200);
    expect(await metric('ehr_gateway_client_share_waiting_requests')).toBe(0);
    heldOther.finish();
    expect((await heldOther.answer).status).toBe(200);
  });

  it('drops a waiting request whose client went away without looking its account up', async () => {
    const unrouted = () => metric('ehr_gateway_api_requests_total{operation="none",status="200"}').then((count) => (Number.isNaN(count) ? 0 : count));
    const before = await unrouted();
    const held = heldRegisterDocument(port, first);
    const heldOther = heldRegisterDocument(port, second, OTHER_ADDRESS);
    await until('both addresses’ held requests in progress', reading, (count) => count === 2, 120_000);
    const body = Buffer.from(JSON.stringify(registerBody()));
    const gone = net.connect({ port, host: '127.0.0.1' });
    gone.on('error', () => undefined);
    gone.on('connect', () => gone.write(postHead('/api/RegisterDocument', authHeaders(first), body.length) + body.toString('latin1')));
    await until(
      'the request waiting for its address’s share',
      () => metric('ehr_gateway_client_share_waiting_requests'),
      (count) => count === 1,
      120_000,
    );
    gone.destroy();
    held.finish();
    expect((await held.answer).status).toBe(200);
    // Its turn came after its client had gone: it ended there, never routed (a routed one counts as RegisterDocument).
    await until('the gone request ended unrouted', unrouted, (count) => count === before + 1, 120_000);
    expect(await metric('ehr_gateway_client_share_waiting_requests')).toBe(0);
    heldOther.finish();
    expect((await heldOther.answer).status).toBe(200);
  });
});
