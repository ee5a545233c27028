import dns from 'node:dns';
import net from 'node:net';
import os from 'node:os';
import type { Networks } from '../http/networks.js';

/**
 * Where a callback may go (CALLBACK_ALLOWED_NETWORKS), judged on the address it connects to, at
 * send time: a registered URL or a host name that resolves to the gateway's own network (its
 * database, its internal listener, a cloud metadata address) is refused, since a clinic controls
 * its DNS. Refused unless CALLBACK_ALLOWED_NETWORKS lists them: loopback, link-local, private
 * (RFC 1918, unique local), shared (CGNAT), unspecified, multicast and reserved ranges, and
 * IPv6 addresses that embed such an IPv4 address (mapped, NAT64). The service's own listeners
 * (its ports on this host) are refused always. The connection is made to the address judged, with
 * no second resolution (the sender's lookup is this one), so DNS cannot change between the check
 * and the connection.
 */

/** Blocked unless allowed: the ranges an Internet receiver never has (RFC 6890), by family. */
const NOT_PUBLIC: ReadonlyArray<[string, number, 'ipv4' | 'ipv6', string]> = [
  ['0.0.0.0', 8, 'ipv4', 'unspecified'],
  ['10.0.0.0', 8, 'ipv4', 'private'],
  ['100.64.0.0', 10, 'ipv4', 'shared (CGNAT)'],
  ['127.0.0.0', 8, 'ipv4', 'loopback'],
  ['169.254.0.0', 16, 'ipv4', 'link-local'],
  ['172.16.0.0', 12, 'ipv4', 'private'],
  ['192.0.0.0', 24, 'ipv4', 'reserved'],
  ['192.168.0.0', 16, 'ipv4', 'private'],
  ['198.18.0.0', 15, 'ipv4', 'reserved'],
  ['224.0.0.0', 4, 'ipv4', 'multicast'],
  ['240.0.0.0', 4, 'ipv4', 'reserved'],
  ['::', 128, 'ipv6', 'unspecified'],
  ['::1', 128, 'ipv6', 'loopback'],
  ['fc00::', 7, 'ipv6', 'private'],
  ['fe80::', 10, 'ipv6', 'link-local'],
  ['ff00::', 8, 'ipv6', 'multicast'],
];

const ranges = NOT_PUBLIC.map(([address, prefix, family, kind]) => {
  const list = new net.BlockList();
  list.addSubnet(address, prefix, family);
  return { list, family, kind };
});

/** The IPv4 address an IPv6 one carries: mapped (::ffff:a.b.c.d) or NAT64 (64:ff9b::/96). */
function embeddedIPv4(address: string): string | undefined {
  const lower = address.toLowerCase();
  for (const prefix of ['::ffff:', '64:ff9b::']) {
    if (!lower.startsWith(prefix)) continue;
    const rest = lower.slice(prefix.length);
    if (net.isIPv4(rest)) return rest;
    const groups = rest.split(':');
    if (groups.length === 2 && groups.every((group) => /^[0-9a-f]{1,4}$/.test(group))) {
      const [high, low] = groups.map((group) => Number.parseInt(group, 16)) as [number, number];
      return [high >> 8, high & 255, low >> 8, low & 255].join('.');
    }
  }
  return undefined;
}

/** Why an address is not public (loopback, private, …), or undefined for a public one. */
export function nonPublicKind(address: string): string | undefined {
  const inner = net.isIPv6(address) ? embeddedIPv4(address) : undefined;
  if (inner !== undefined) return nonPublicKind(inner);
  const family = net.isIPv4(address) ? 'ipv4' : net.isIPv6(address) ? 'ipv6' : undefined;
  if (family === undefined) return 'not an IP address';
  return ranges.find((range) => range.family === family && range.list.check(address, family))?.kind;
}

/** The addresses of this host (its interfaces), for "the service's own listeners". */
function hostAddresses(): Set<string> {
  const addresses = new Set<string>();
  for (const list of Object.values(os.networkInterfaces())) for (const entry of list ?? []) addresses.add(entry.address);
  return addresses;
}

export class EgressPolicy {
  /** The ports of this service's listeners on this host (PORT, INTERNAL_PORT, as bound). */
  readonly ownPorts = new Set<number>();

  constructor(private readonly allowed: Networks) {}

  /** Why a connection to `address`:`port` is refused, or undefined when it may go. */
  refusal(address: string, port: number): string | undefined {
    const inner = (net.isIPv6(address) && embeddedIPv4(address)) || address;
    const innerKind = nonPublicKind(inner);
    const local = innerKind === 'loopback' || innerKind === 'unspecified' || [inner, address].some((candidate) => hostAddresses().has(candidate));
    if (local && this.ownPorts.has(port)) return `${address}:${port} is a listener of this service`;
    const kind = nonPublicKind(address);
    if (kind === undefined || this.allowed.includes(address) || this.allowed.includes(inner)) return undefined;
    return `${address} is ${kind} and not in CALLBACK_ALLOWED_NETWORKS`;
  }

  /**
   * A `lookup` for the sender's connections (net.connect's option): resolves the host, keeps the
   * first address the policy allows for `port`, and fails with EgressRefused when none is.
   */
  lookupFor(port: number): net.LookupFunction {
    return (hostname, options, callback) => {
      dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
        if (error) {
          callback(error, '', 4);
          return;
        }
        const reasons: string[] = [];
        const allowed = addresses.find((entry) => {
          const reason = this.refusal(entry.address, port);
          if (reason) reasons.push(reason);
          return reason === undefined;
        });
        if (!allowed) {
          callback(new EgressRefused(reasons[0] ?? `${hostname} resolves to no address`), '', 4);
          return;
        }
        if ((options as { all?: boolean }).all) (callback as unknown as (error: null, addresses: dns.LookupAddress[]) => void)(null, [allowed]);
        else callback(null, allowed.address, allowed.family);
      });
    };
  }
}

/** A callback's connection the egress policy refused. */
export class EgressRefused extends Error {
  readonly code = 'EGRESS_REFUSED';

  constructor(reason: string) {
    super(`refused by the egress policy: ${reason}`);
    this.name = 'EgressRefused';
  }
}
