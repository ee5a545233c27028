import type { IncomingMessage } from 'node:http';
import net from 'node:net';
import type { Networks } from './networks.js';

/**
 * The client a limit counts by its address: an IPv4 address as it is (also when the socket shows it
 * IPv4-mapped, `::ffff:203.0.113.7`), an IPv6 address by its /64, the block one site or one
 * customer line is given (RFC 6177), since such a client may use any address of it.
 */
export function clientKey(address: string | undefined): string {
  if (address === undefined || address === '') return 'unknown';
  if (address.startsWith('::ffff:') && net.isIPv4(address.slice(7))) return address.slice(7);
  if (!net.isIPv6(address)) return address;
  return `${expandIPv6(address).slice(0, 4).join(':')}::/64`;
}

/** The eight groups of an IPv6 address, without leading zeros. */
function expandIPv6(address: string): string[] {
  const [head = '', tail] = address.split('%')[0]!.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  // A trailing dotted IPv4 part stands for two groups.
  const last = right.length > 0 ? right : left;
  if (last.length > 0 && net.isIPv4(last.at(-1)!)) {
    const [a, b, c, d] = last.pop()!.split('.').map(Number) as [number, number, number, number];
    last.push(((a << 8) | b).toString(16), ((c << 8) | d).toString(16));
  }
  const missing = tail === undefined ? 0 : 8 - left.length - right.length;
  return [...left, ...Array.from({ length: missing }, () => '0'), ...right].map((group) => Number.parseInt(group, 16).toString(16));
}

/**
 * The client's address: the TCP peer, or, when the peer is one of `trustedProxies`, the address
 * that X-Forwarded-For names: the rightmost one that is not itself a trusted proxy (the ones to its
 * left are whatever the client wrote).
 */
export function clientAddressOf(request: IncomingMessage, trustedProxies: Networks): string | undefined {
  const peer = request.socket.remoteAddress;
  const forwarded = request.headers['x-forwarded-for'];
  if (peer === undefined || forwarded === undefined || !trustedProxies.includes(peer)) return peer;
  const hops = (Array.isArray(forwarded) ? forwarded.join(',') : forwarded).split(',').map((hop) => hop.trim());
  for (let index = hops.length - 1; index >= 0; index -= 1) {
    const hop = hops[index]!;
    if (!net.isIP(hop)) return peer;
    if (!trustedProxies.includes(hop)) return hop;
  }
  return hops[0] ?? peer;
}
