import net from 'node:net';
import { clientKey } from './client-address.js';
import type { Networks } from './networks.js';

/**
 * Closes a new connection of a client that holds `perClient` already (by clientKey), so that one
 * client's sockets, busy or idle, cannot fill MAX_CONNECTIONS and lock every other client out.
 *
 * A refused connection used to cost a socket object and Node's HTTP parser before it was destroyed
 * on 'connection': about 70 µs of CPU each on the 2-core test machine, and a client that reconnects
 * at once makes thousands a second (docs/hostile.md, M1: 45,479 in 20 s). So an IPv4 client at its
 * cap is also put on the server's `blockList`, which net.Server checks when it accepts, before any
 * of that exists (about 45 µs, most of it the kernel's accept and close). `blockList` is an option
 * of net.Server that http.createServer does not pass on; net.Server reads the property at every
 * accepted connection (Node 24: lib/net.js, onconnection), so it is set on the server here, and
 * replaced whenever a client reaches its cap or falls below it. Should a Node version stop reading
 * it, the 'connection' handler below still refuses every connection past the cap. IPv6 clients (a
 * /64, which may hold a trusted proxy's address) go only the 'connection' way.
 */
export function capConnectionsPerClient(server: net.Server, perClient: number, trustedProxies: Networks): void {
  const open = new Map<string, number>();
  /** IPv4 clients at their cap: the server's blockList. */
  const atCap = new Set<string>();
  const blockAtCap = () => {
    const list = new net.BlockList();
    // An IPv4 rule also holds for the IPv4-mapped form a listener on `::` sees.
    for (const address of atCap) list.addAddress(address, 'ipv4');
    (server as net.Server & { blockList?: net.BlockList }).blockList = atCap.size > 0 ? list : undefined;
  };
  server.on('connection', (socket: net.Socket) => {
    if (socket.remoteAddress !== undefined && trustedProxies.includes(socket.remoteAddress)) return;
    const key = clientKey(socket.remoteAddress);
    const held = open.get(key) ?? 0;
    if (held >= perClient) {
      socket.destroy();
      return;
    }
    open.set(key, held + 1);
    if (held + 1 >= perClient && net.isIPv4(key) && !trustedProxies.includes(key)) {
      atCap.add(key);
      blockAtCap();
    }
    socket.once('close', () => {
      const left = (open.get(key) ?? 1) - 1;
      if (left <= 0) open.delete(key);
      else open.set(key, left);
      if (atCap.delete(key)) blockAtCap();
    });
  });
}
