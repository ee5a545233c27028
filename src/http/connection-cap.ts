import net from 'node:net';
import { clientKey } from './client-address.js';
import type { Networks } from './networks.js';

/**
 * A client refused this many times at its cap, without one of its connections closing in between,
 * is refused from then on when its connections are accepted (the blockList below): it is reconnecting
 * as fast as it is refused. A client that merely holds its cap is never listed, so its list is not
 * rebuilt at every connection it opens and closes.
 */
export const LISTED_AFTER_REFUSALS = 8;

/**
 * At most this many clients are listed at once. Node's BlockList has no removal, so a client that
 * falls below its cap costs a new list, and one address costs about 2.7 µs to add (10 µs for a list
 * of one, 690 µs for 256, on the 2-core test machine): bounded, a rebuild costs at most some 50 µs.
 * Clients past it are refused the 'connection' way, as all were before.
 */
export const MAX_LISTED_CLIENTS = 16;

/**
 * Closes a new connection of a client that holds `perClient` already (by clientKey), so that one
 * client's sockets, busy or idle, cannot fill MAX_CONNECTIONS and lock every other client out.
 *
 * A refused connection costs a socket object and Node's HTTP parser before it is destroyed on
 * 'connection': about 70 µs of CPU each on the 2-core test machine, and a client that reconnects at
 * once makes thousands a second (docs/hostile.md, M1: 45,479 in 20 s). So an IPv4 client that keeps
 * reconnecting at its cap (LISTED_AFTER_REFUSALS) is put on the server's `blockList`, which
 * net.Server checks when it accepts, before any of that exists (about 45 µs, most of it the kernel's
 * accept and close), until one of its connections closes. `blockList` is an option of net.Server that
 * http.createServer does not pass on; net.Server reads the property at every accepted connection
 * (Node 24: lib/net.js, onconnection), so it is set on the server here. Should a Node version stop
 * reading it, the 'connection' handler still refuses every connection past the cap. IPv6 clients (a
 * /64, which may hold a trusted proxy's address) go only the 'connection' way.
 */
export function capConnectionsPerClient(server: net.Server, perClient: number, trustedProxies: Networks): void {
  const open = new Map<string, number>();
  /** Refusals of each client at its cap since one of its connections last closed. */
  const refusals = new Map<string, number>();
  /** IPv4 clients refused at accept: the server's blockList. */
  const listed = new Set<string>();
  const setList = () => {
    const list = new net.BlockList();
    // An IPv4 rule also holds for the IPv4-mapped form a listener on `::` sees.
    for (const address of listed) list.addAddress(address, 'ipv4');
    (server as net.Server & { blockList?: net.BlockList }).blockList = listed.size > 0 ? list : undefined;
  };
  const refused = (key: string) => {
    const count = (refusals.get(key) ?? 0) + 1;
    refusals.set(key, count);
    if (count >= LISTED_AFTER_REFUSALS && listed.size < MAX_LISTED_CLIENTS && !listed.has(key) && net.isIPv4(key) && !trustedProxies.includes(key)) {
      listed.add(key);
      setList();
    }
  };
  server.on('connection', (socket: net.Socket) => {
    if (socket.remoteAddress !== undefined && trustedProxies.includes(socket.remoteAddress)) return;
    const key = clientKey(socket.remoteAddress);
    const held = open.get(key) ?? 0;
    if (held >= perClient) {
      socket.destroy();
      refused(key);
      return;
    }
    open.set(key, held + 1);
    socket.once('close', () => {
      const left = (open.get(key) ?? 1) - 1;
      if (left <= 0) open.delete(key);
      else open.set(key, left);
      refusals.delete(key);
      if (listed.delete(key)) setList();
    });
  });
}
