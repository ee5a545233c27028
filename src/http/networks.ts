import net from 'node:net';

/**
 * A list of networks in CIDR notation (`10.0.0.0/8,127.0.0.1,::1/128`; a bare address is its own
 * network), as the configuration gives it (TRUSTED_PROXIES, CALLBACK_ALLOWED_NETWORKS), matched
 * with Node's BlockList (IPv4-mapped IPv6 addresses match their IPv4 networks).
 */
export interface Networks {
  /** The list as written, normalized (for messages and --help). */
  readonly text: string;
  includes(address: string): boolean;
}

/** Parses a comma-separated CIDR list; throws Error naming the entry that is not one. */
export function parseNetworks(text: string): Networks {
  const list = new net.BlockList();
  const entries = text
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  for (const entry of entries) {
    const [address = '', prefixText, ...rest] = entry.split('/');
    const family = net.isIPv4(address) ? 'ipv4' : net.isIPv6(address) ? 'ipv6' : undefined;
    const maxPrefix = family === 'ipv4' ? 32 : 128;
    const prefix = prefixText === undefined ? maxPrefix : Number(prefixText);
    if (family === undefined || rest.length > 0 || !/^\d*$/.test(prefixText ?? '') || !Number.isInteger(prefix) || prefix < 0 || prefix > maxPrefix) {
      throw new Error(`"${entry}" is not an IP address or a network in CIDR notation (e.g. 10.0.0.0/8, ::1/128)`);
    }
    list.addSubnet(address, prefix, family);
  }
  return {
    text: entries.join(','),
    includes(address) {
      const family = net.isIPv4(address) ? 'ipv4' : net.isIPv6(address) ? 'ipv6' : undefined;
      return family !== undefined && list.check(address, family);
    },
  };
}

export const NO_NETWORKS: Networks = parseNetworks('');
