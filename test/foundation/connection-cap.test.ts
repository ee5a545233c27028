import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { capConnectionsPerClient, LISTED_AFTER_REFUSALS, MAX_LISTED_CLIENTS } from '../../src/http/connection-cap.js';
import { NO_NETWORKS, parseNetworks } from '../../src/http/networks.js';

/**
 * Issue 21, M1: a client that keeps reconnecting at MAX_CONNECTIONS_PER_CLIENT is refused when its
 * connections are accepted, before Node makes a socket and an HTTP parser of them (the server's
 * blockList), and let in again as soon as it holds fewer. Counted by the server's 'connection'
 * events: a connection refused the old way (destroyed on 'connection') shows up there.
 */

let server: http.Server | undefined;

afterEach(async () => {
  const closing = server;
  server = undefined;
  if (!closing) return;
  closing.closeAllConnections();
  await new Promise((resolve) => closing.close(resolve));
});

async function cappedServer(perClient: number, trusted = NO_NETWORKS, host = '127.0.0.1'): Promise<{ port: number; connections: () => number }> {
  server = http.createServer((_request, response) => response.end('ok'));
  capConnectionsPerClient(server, perClient, trusted);
  let connections = 0;
  server.on('connection', () => (connections += 1));
  await new Promise<void>((resolve) => server!.listen(0, host, resolve));
  return { port: (server.address() as AddressInfo).port, connections: () => connections };
}

/** A connection from `localAddress`, once connected (the kernel completes a refused one too), with the promise of its close. */
function connect(port: number, localAddress: string): Promise<{ socket: net.Socket; closed: Promise<void> }> {
  const socket = net.connect({ port, host: '127.0.0.1', localAddress });
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return new Promise((resolve) => socket.once('connect', () => resolve({ socket, closed })));
}

/** Waits until the server holds `count` connections (its side of a closed one may close later than the client's). */
async function untilServerHolds(count: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const held = await new Promise<number>((resolve, reject) => server!.getConnections((error, n) => (error ? reject(error) : resolve(n))));
    if (held === count) return;
    if (Date.now() > deadline) throw new Error(`the server holds ${held} connections, not ${count}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** `count` connections from `localAddress` one after another, each refused (closed unanswered) before the next. */
async function refusedInTurn(port: number, localAddress: string, count: number): Promise<void> {
  for (let attempt = 0; attempt < count; attempt += 1) {
    const { socket, closed } = await connect(port, localAddress);
    expect(await answers(socket, closed)).toBe(false);
  }
}

/** Whether the server answers GET / on `socket` (a refused connection closes without an answer). */
function answers(socket: net.Socket, closed: Promise<void>): Promise<boolean> {
  const answered = new Promise<boolean>((resolve) => socket.once('data', () => resolve(true)));
  socket.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  return Promise.race([answered, closed.then(() => false)]);
}

describe('connections per client address', () => {
  it('refuses connections past the cap before they become sockets, and takes the client again below it', async () => {
    const { port, connections } = await cappedServer(2);
    const held = [await connect(port, '127.0.0.2'), await connect(port, '127.0.0.2')];
    for (const { socket, closed } of held) expect(await answers(socket, closed)).toBe(true);
    expect(connections()).toBe(2);

    // Refused the 'connection' way until it has been refused LISTED_AFTER_REFUSALS times.
    await refusedInTurn(port, '127.0.0.2', LISTED_AFTER_REFUSALS);
    expect(connections()).toBe(2 + LISTED_AFTER_REFUSALS);
    const refused = await Promise.all(Array.from({ length: 5 }, () => connect(port, '127.0.0.2')));
    for (const { socket, closed } of refused) expect(await answers(socket, closed)).toBe(false);
    // None of the five became a connection of the server.
    expect(connections()).toBe(2 + LISTED_AFTER_REFUSALS);

    // Another address is not touched by the first one's cap.
    const other = await connect(port, '127.0.0.3');
    expect(await answers(other.socket, other.closed)).toBe(true);
    expect(connections()).toBe(3 + LISTED_AFTER_REFUSALS);

    held[0]!.socket.destroy();
    // The server's side of it closes when its FIN arrives.
    await untilServerHolds(2);
    const again = await connect(port, '127.0.0.2');
    expect(await answers(again.socket, again.closed)).toBe(true);
    for (const connection of [held[1]!, other, again]) connection.socket.destroy();
  });

  it('refuses an IPv4 client at its cap on a dual-stack listener too, where it shows IPv4-mapped', async () => {
    const { port, connections } = await cappedServer(1, NO_NETWORKS, '::');
    const held = await connect(port, '127.0.0.2');
    expect(await answers(held.socket, held.closed)).toBe(true);
    await refusedInTurn(port, '127.0.0.2', LISTED_AFTER_REFUSALS);
    const refused = await Promise.all(Array.from({ length: 3 }, () => connect(port, '127.0.0.2')));
    for (const { socket, closed } of refused) expect(await answers(socket, closed)).toBe(false);
    expect(connections()).toBe(1 + LISTED_AFTER_REFUSALS);
    held.socket.destroy();
  });

  it('does not list a client that holds its cap without reconnecting as fast as it is refused', async () => {
    const { port, connections } = await cappedServer(1);
    let held = await connect(port, '127.0.0.2');
    for (let round = 0; round < 3; round += 1) {
      await refusedInTurn(port, '127.0.0.2', LISTED_AFTER_REFUSALS - 1);
      // One of its connections closes: its count of refusals starts again.
      held.socket.destroy();
      await untilServerHolds(0);
      held = await connect(port, '127.0.0.2');
      expect(await answers(held.socket, held.closed)).toBe(true);
    }
    // Every refusal went the 'connection' way: the client was never listed.
    expect(connections()).toBe(4 + 3 * (LISTED_AFTER_REFUSALS - 1));
    held.socket.destroy();
  });

  it(`lists at most ${MAX_LISTED_CLIENTS} clients at once, and refuses the others the 'connection' way`, async () => {
    const { port, connections } = await cappedServer(1);
    const clients = Array.from({ length: MAX_LISTED_CLIENTS + 1 }, (_, index) => `127.0.1.${index + 1}`);
    const held = [];
    for (const client of clients) {
      held.push(await connect(port, client));
      await refusedInTurn(port, client, LISTED_AFTER_REFUSALS);
    }
    const counted = connections();
    expect(counted).toBe(clients.length * (1 + LISTED_AFTER_REFUSALS));
    // The first MAX_LISTED_CLIENTS are refused at accept: not counted.
    for (const client of clients.slice(0, MAX_LISTED_CLIENTS)) await refusedInTurn(port, client, 1);
    expect(connections()).toBe(counted);
    // The one past the bound still reaches 'connection', and is refused there.
    await refusedInTurn(port, clients.at(-1)!, 2);
    expect(connections()).toBe(counted + 2);
    for (const { socket } of held) socket.destroy();
  });

  it('never blocks a trusted proxy, whose connections are not capped', async () => {
    const { port } = await cappedServer(1, parseNetworks('127.0.0.7'));
    const proxied = await Promise.all(Array.from({ length: 4 }, () => connect(port, '127.0.0.7')));
    for (const { socket, closed } of proxied) expect(await answers(socket, closed)).toBe(true);
    for (const { socket } of proxied) socket.destroy();
  });
});
