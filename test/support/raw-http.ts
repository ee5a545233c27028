import http from 'node:http';
import net from 'node:net';

/**
 * HTTP the way a careless or hostile client speaks it, on a raw connection: what fetch will not do
 * (headers without their body, a trickle).
 */

/** Sends `head` (a request without its body) and resolves with the status line answered, or 'no answer' after `waitMs`. */
export function statusLineOf(port: number, head: string, waitMs = 5000): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(head));
    let answer = '';
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answer.split('\r\n')[0] || 'no answer');
    };
    socket.on('data', (chunk) => {
      answer += chunk.toString();
      if (answer.includes('\r\n\r\n')) done();
    });
    socket.on('error', done);
    const timer = setTimeout(done, waitMs);
  });
}

/** Writes `head`, then one byte of `drip` every `intervalMs` until the server closes the connection (or `capMs` passes). */
export function trickle(port: number, head: string, drip: string, intervalMs: number, capMs: number): Promise<{ heldMs: number; closedByServer: boolean; answer: string }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const started = Date.now();
    let answer = '';
    let capped = false;
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('error', () => undefined);
    socket.write(head);
    const timer = setInterval(() => socket.write(drip), intervalMs);
    const cap = setTimeout(() => {
      capped = true;
      socket.destroy();
    }, capMs);
    socket.on('close', () => {
      clearInterval(timer);
      clearTimeout(cap);
      resolve({ heldMs: Date.now() - started, closedByServer: !capped, answer });
    });
  });
}

/**
 * `count` clients calling `url` back to back over keep-alive connections until stopped: how many
 * answers came, how many said `Connection: close`, and the error code of every failed call.
 */
export function keepAliveClients(url: string, count: number): { answered(): number; stop(): Promise<{ answered: number; closeAnnounced: number; failures: string[] }> } {
  const agent = new http.Agent({ keepAlive: true, maxSockets: count });
  const tally = { answered: 0, closeAnnounced: 0, failures: [] as string[] };
  let running = true;
  const client = async () => {
    while (running) {
      await new Promise<void>((resolve) => {
        const request = http.request(url, { agent }, (response) => {
          tally.answered += 1;
          if (response.headers.connection === 'close') tally.closeAnnounced += 1;
          response.resume();
          response.on('end', resolve);
        });
        request.on('error', (error: NodeJS.ErrnoException) => {
          tally.failures.push(error.code ?? error.message);
          setTimeout(resolve, 20);
        });
        request.end();
      });
    }
  };
  const clients = Array.from({ length: count }, client);
  return {
    answered: () => tally.answered,
    async stop() {
      running = false;
      await Promise.all(clients);
      agent.destroy();
      return tally;
    },
  };
}
