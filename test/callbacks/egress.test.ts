import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EgressPolicy, nonPublicKind } from '../../src/callbacks/egress.js';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { parseNetworks } from '../../src/http/networks.js';
import { startCallbackReceiver, type CallbackReceiver } from '../support/callback-receiver.js';
import { addClinic, authHeaders, post, registerBody } from '../support/emdr.js';
import { startTestService, type TestService } from '../support/service.js';
import { until } from '../support/until.js';

/**
 * Issue 21, L5: callbacks go only where the egress policy allows, judged on the address connected
 * to, at send time: loopback, link-local and private addresses only when CALLBACK_ALLOWED_NETWORKS
 * lists them, the service's own listeners never.
 */

describe('the egress policy', () => {
  it('tells public addresses from the ranges a receiver on the Internet never has', () => {
    expect(nonPublicKind('93.184.215.14')).toBeUndefined();
    expect(nonPublicKind('2a00:1450:4010:c05::64')).toBeUndefined();
    for (const [address, kind] of [
      ['127.0.0.1', 'loopback'],
      ['127.8.9.10', 'loopback'],
      ['::1', 'loopback'],
      ['169.254.169.254', 'link-local'],
      ['fe80::1', 'link-local'],
      ['10.1.2.3', 'private'],
      ['172.20.0.5', 'private'],
      ['192.168.1.1', 'private'],
      ['fd12:3456::1', 'private'],
      ['100.64.0.1', 'shared (CGNAT)'],
      ['0.0.0.0', 'unspecified'],
      ['::', 'unspecified'],
      ['224.0.0.251', 'multicast'],
      // IPv6 that carries a private IPv4 address: mapped, NAT64, in both notations.
      ['::ffff:127.0.0.1', 'loopback'],
      ['::ffff:a9fe:a9fe', 'link-local'],
      ['64:ff9b::10.0.0.1', 'private'],
    ] as const) {
      expect(nonPublicKind(address), address).toBe(kind);
    }
  });

  it("lets CALLBACK_ALLOWED_NETWORKS open a range, but never the service's own listeners", () => {
    const policy = new EgressPolicy(parseNetworks('127.0.0.0/8,10.0.0.0/8'));
    policy.ownPorts.add(8081);
    expect(policy.refusal('127.0.0.1', 9090)).toBeUndefined();
    expect(policy.refusal('10.9.9.9', 443)).toBeUndefined();
    expect(policy.refusal('192.168.1.1', 443)).toBe('192.168.1.1 is private and not in CALLBACK_ALLOWED_NETWORKS');
    expect(policy.refusal('127.0.0.1', 8081)).toBe('127.0.0.1:8081 is a listener of this service');
    expect(policy.refusal('::ffff:127.0.0.1', 8081)).toBe('::ffff:127.0.0.1:8081 is a listener of this service');
    expect(policy.refusal('93.184.215.14', 8081)).toBeUndefined();
  });

  it('resolves a host name to an address it allows, and connects to that one', async () => {
    const onlyIPv6Loopback = new EgressPolicy(parseNetworks('::1/128'));
    const looked = await new Promise<{ error: Error | null; address: string }>((resolve) =>
      onlyIPv6Loopback.lookupFor(9090)('localhost', { family: 0 }, (error, address) => resolve({ error, address: address as string })),
    );
    // localhost is 127.0.0.1 and ::1 here: the first is refused, the second kept.
    if (looked.error) expect(looked.error.message).toMatch(/refused by the egress policy/);
    else expect(looked.address).toBe('::1');
    const none = await new Promise<Error | null>((resolve) =>
      new EgressPolicy(parseNetworks('')).lookupFor(9090)('localhost', { family: 0 }, (error) => resolve(error)),
    );
    expect(none?.message).toMatch(/^refused by the egress policy: (127\.0\.0\.1|::1) is loopback and not in CALLBACK_ALLOWED_NETWORKS$/);
  });
});

describe('callbacks under the default egress policy', () => {
  let service: TestService;
  let receiver: CallbackReceiver;

  beforeAll(async () => {
    receiver = await startCallbackReceiver();
    // The default: no CALLBACK_ALLOWED_NETWORKS (the test support allows loopback unless told otherwise).
    service = await startTestService({ CALLBACK_ALLOWED_NETWORKS: '', CALLBACK_RETRY_SCHEDULE: '0' });
  });

  afterAll(async () => {
    await service?.stop();
    await receiver?.close();
  });

  const firstAttempt = async (clinic: CreatedClinicAccount) => {
    const { body } = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody());
    const state = await until(
      'the acceptance callback settled',
      async () => (await fetch(`${service.publicUrl}/api/messages/${body.queueMessageId}`, { headers: authHeaders(clinic) })).json() as Promise<any>,
      (answer) => answer.callbacks?.[0]?.state === 'failed' || answer.callbacks?.[0]?.state === 'delivered',
    );
    return state.callbacks[0];
  };

  it('refuses a receiver on loopback, by address and by a host name that resolves there, and sends it nothing', async () => {
    const port = new URL(receiver.url).port;
    const byAddress = await firstAttempt(await addClinic(service, receiver.url));
    expect(byAddress).toMatchObject({
      state: 'failed',
      attempts: [{ error: 'refused by the egress policy: 127.0.0.1 is loopback and not in CALLBACK_ALLOWED_NETWORKS' }],
    });
    const byName = await firstAttempt(await addClinic(service, `http://localhost:${port}`));
    expect(byName.state).toBe('failed');
    expect(byName.attempts[0].error).toMatch(/^refused by the egress policy: (127\.0\.0\.1|::1) is loopback/);
    // Before: both were delivered.
    expect(receiver.received).toHaveLength(0);
  });
});

describe("callbacks never reach the service's own listeners", () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ CALLBACK_ALLOWED_NETWORKS: '127.0.0.0/8', CALLBACK_RETRY_SCHEDULE: '0' });
  });

  afterAll(async () => {
    await service?.stop();
  });

  it('refuses the internal listener as a callback URL even with loopback allowed', async () => {
    const clinic = await addClinic(service, service.internalUrl);
    const { body } = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody());
    const state = await until(
      'the acceptance callback settled',
      async () => (await fetch(`${service.publicUrl}/api/messages/${body.queueMessageId}`, { headers: authHeaders(clinic) })).json() as Promise<any>,
      (answer) => answer.callbacks?.[0]?.state === 'failed',
    );
    // Before: the internal listener answered (HTTP 404), so a clinic could probe it.
    expect(state.callbacks[0].attempts[0].error).toBe(`refused by the egress policy: 127.0.0.1:${service.internalPort} is a listener of this service`);
  });
});
