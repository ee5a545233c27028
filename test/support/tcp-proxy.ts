import net from 'node:net';

export interface TcpProxy {
  /** The proxy's own loopback port. */
  port: number;
  /** A database outage as the service sees one: every open connection is cut and new ones are refused. */
  cutOff(): Promise<void>;
  /** Listens again on the same port, forwarding to the target. */
  restore(): Promise<void>;
  /** Bytes forwarded from the clients to the server so far (what the service sent PostgreSQL). */
  sentBytes(): number;
  close(): Promise<void>;
}

/**
 * A TCP forwarder on loopback in front of a real server (the test PostgreSQL), so that a test can
 * take the server away from one service process without stopping it for everyone else.
 */
export async function startTcpProxy(
  targetHost: string,
  targetPort: number,
  /** Sees every byte a client sends, per connection (the connection's own function, made when it opens). */
  observeClient?: () => (chunk: Buffer) => void,
): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let port = 0;
  let server: net.Server | undefined;
  let sent = 0;

  const listen = async () => {
    const listening = net.createServer((client) => {
      const upstream = net.connect(targetPort, targetHost);
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
        socket.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.on('data', (chunk: Buffer) => (sent += chunk.length));
      if (observeClient) client.on('data', observeClient());
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      listening.once('error', reject);
      listening.listen(port, '127.0.0.1', () => resolve());
    });
    port = (listening.address() as net.AddressInfo).port;
    server = listening;
  };

  const cutOff = async () => {
    const closing = server;
    server = undefined;
    for (const socket of sockets) socket.destroy();
    if (closing) await new Promise<void>((resolve) => closing.close(() => resolve()));
  };

  await listen();
  return { port, cutOff, restore: listen, close: cutOff, sentBytes: () => sent };
}
