import http from 'node:http';
import net from 'node:net';

/**
 * HTTP the way a careless or hostile client speaks it, on a raw connection: what fetch will not do
 * (headers without their body, a trickle).
 */

/** What postWithNodeHttp was answered: the status, the headers and the body as text. */
export interface NodeHttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/**
 * POSTs `body` to `url` with node's http client and its Content-Length, with `options` (what fetch
 * will not take: a local address, an agent of one's own, or none); resolves once the answer is read.
 */
export function postWithNodeHttp(url: string, options: http.RequestOptions, body: string | Buffer): Promise<NodeHttpAnswer> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      { ...options, method: 'POST', headers: { ...options.headers, 'content-length': Buffer.byteLength(body) } },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, text }));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

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
export function trickle(
  port: number,
  head: string,
  drip: string,
  intervalMs: number,
  capMs: number,
): Promise<{ heldMs: number; closedByServer: boolean; answer: string }> {
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
export function keepAliveClients(
  url: string,
  count: number,
): { answered(): number; stop(): Promise<{ answered: number; closeAnnounced: number; failures: string[] }> } {
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

export interface RawAnswer {
  /** `HTTP/1.1 400 Bad Request`, or 'no answer'. */
  statusLine: string;
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Bytes of the answer's body. */
  bodyBytes: number;
  /** Whether the server closed the connection (or reset it) before `waitMs`. */
  closed: boolean;
}

/**
 * Writes a request on a raw connection (from `localAddress`, e.g. 127.0.0.2 for another client on
 * loopback) in pieces, keeps writing while the server reads (at most `sendAtMost` bytes of the body),
 * and collects its answer even when the server answers and closes before the body is all sent
 * (which fetch reports as a failed upload).
 */
export function rawExchange(
  port: number,
  head: string,
  body: Buffer | undefined,
  options: { localAddress?: string; waitMs?: number; sendAtMost?: number } = {},
): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1', ...(options.localAddress ? { localAddress: options.localAddress } : {}) });
    const chunks: Buffer[] = [];
    let closed = false;
    let settled = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(chunks);
      const split = text.indexOf('\r\n\r\n');
      const headText = split < 0 ? text.toString('latin1') : text.subarray(0, split).toString('latin1');
      const [statusLine = '', ...lines] = headText.split('\r\n');
      const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
      const bodyBytes = split < 0 ? Buffer.alloc(0) : text.subarray(split + 4);
      resolve({
        statusLine: statusLine || 'no answer',
        status: Number(statusLine.split(' ')[1] ?? 0),
        headers,
        body: bodyBytes.toString('utf8'),
        bodyBytes: bodyBytes.length,
        closed,
      });
    };
    const timer = setTimeout(finish, options.waitMs ?? 30_000);
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      const text = Buffer.concat(chunks);
      const split = text.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(text.subarray(0, Math.max(0, split)).toString('latin1'));
      if (split >= 0 && length && text.length - split - 4 >= Number(length[1])) finish();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      closed = true;
      finish();
    });
    socket.on('connect', async () => {
      socket.write(head);
      if (!body) return;
      // sendAtMost: the rest is held back, as a client would that reads the early answer (the server closing with unread bytes resets the connection).
      const end = Math.min(body.length, options.sendAtMost ?? body.length);
      for (let offset = 0; offset < end && !closed && !settled; offset += 64 * 1024) {
        if (!socket.write(body.subarray(offset, Math.min(end, offset + 64 * 1024))))
          await new Promise((drained) => socket.once('drain', drained).once('close', drained));
      }
    });
  });
}

/** The head of a POST with a JSON body of `length` bytes (undefined: chunked, no Content-Length). */
export function postHead(path: string, headers: Record<string, string>, length: number | undefined): string {
  const lines = [
    `POST ${path} HTTP/1.1`,
    'Host: 127.0.0.1',
    'Content-Type: application/json',
    length === undefined ? 'Transfer-Encoding: chunked' : `Content-Length: ${length}`,
  ];
  for (const [name, value] of Object.entries(headers)) if (name.toLowerCase() !== 'content-type') lines.push(`${name}: ${value}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** `body` in HTTP/1.1 chunked transfer coding, in chunks of 64 KiB, with the last chunk. */
export function chunkedBody(body: Buffer): Buffer {
  const parts: Buffer[] = [];
  for (let offset = 0; offset < body.length; offset += 64 * 1024) {
    const chunk = body.subarray(offset, offset + 64 * 1024);
    parts.push(Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n'));
  }
  parts.push(Buffer.from('0\r\n\r\n'));
  return Buffer.concat(parts);
}
