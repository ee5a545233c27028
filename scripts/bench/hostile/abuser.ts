/**
 * The abusive clinic of a hostile-load scenario, as its own process (so its own work does not slow
 * the suite's clocks), from the loopback address 127.0.0.2. Runs one pattern until it is killed:
 *
 *   tsx scripts/bench/hostile/abuser.ts '{"pattern":"h1","port":8080,"clinic":{…},"concurrency":8}'
 *
 * Patterns (the findings of issue 21):
 *   h1  RegisterDocument bodies of 2 million unknown members (18 MB), of 120,000 (1 MB) and of 16 MB of
 *       nested `[`, `concurrency` at a time, each sent whole as fast as the gateway reads it
 *   m1  `concurrency` keep-alive connections sending GET /healthz every 3 s, each reconnected when cut
 *   m4  RegisterDocument bodies of 24 MiB (a valid request with a 24 MiB document), `concurrency` at a time
 *   m5  unauthenticated interface A calls (get_patient of a session that does not exist) on
 *       `concurrency` keep-alive connections, back to back
 *   m2  waves of `concurrency` RegisterDocument requests at once, every 5 s (within RATE_LIMIT), each
 *       with 21 signatures of 16 signers with fresh GOST-512 keys (~480 KB): expensive acceptance checks
 *   m3  `concurrency` RegisterDocument requests at once, whose callbacks go to a receiver that never
 *       answers (run.ts gives this clinic such a receiver); then nothing more
 */
import http from 'node:http';
import net from 'node:net';
import { FIXTURE_XML, largeXml, registerBody } from '../../../test/support/emdr.js';
import { TestPki } from '../../../test/support/signing.js';

export interface AbuseOrder {
  pattern: 'h1' | 'm1' | 'm2' | 'm3' | 'm4' | 'm5';
  port: number;
  clinic: { businessId: string; user: string; token: string };
  concurrency: number;
  /** Interface A's version segment (m5). */
  rpcVersion?: string;
  /** Waits this long after saying it started before it abuses: a one-off burst then falls inside the suite's measured phase. */
  startAfterMs?: number;
}

const ABUSER_ADDRESS = '127.0.0.2';
const order = JSON.parse(process.argv[2] ?? '{}') as AbuseOrder;
let running = true;
/** What the gateway answered the abuser, by status (or `none`: the connection ended without an answer). */
const answers: Record<string, number> = {};
const count = (status: string) => (answers[status] = (answers[status] ?? 0) + 1);
process.on('SIGTERM', () => {
  running = false;
  // The last line: what the abuse was answered.
  console.log(JSON.stringify({ answers }));
  setTimeout(() => process.exit(0), 200).unref();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Writes one request whole on a connection of its own (whatever the gateway answers meanwhile) and waits for the connection to end. */
function sendWhole(head: string, body: Buffer): Promise<void> {
  return new Promise((resolve) => {
    const socket = net.connect({ port: order.port, host: '127.0.0.1', localAddress: ABUSER_ADDRESS });
    let status: string | undefined;
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => (status ??= chunk.toString('latin1', 0, 12).split(' ')[1]));
    socket.on('close', () => {
      count(status ?? 'none');
      resolve();
    });
    socket.once('connect', async () => {
      socket.write(head);
      for (let offset = 0; offset < body.length && !socket.destroyed; offset += 256 * 1024) {
        if (!socket.write(body.subarray(offset, offset + 256 * 1024))) {
          await new Promise<void>((drained) => {
            const done = () => {
              socket.off('drain', done).off('close', done);
              drained();
            };
            socket.once('drain', done).once('close', done);
          });
        }
      }
      // The answer ends the exchange; a gateway that keeps the connection open gets it closed after a while.
      setTimeout(() => socket.destroy(), 30_000).unref();
      socket.end();
    });
  });
}

function registerHead(length: number): string {
  const { businessId, user, token } = order.clinic;
  return `POST /api/RegisterDocument HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\nbusinessId: ${businessId}\r\nuser: ${user}\r\ntoken: ${token}\r\nConnection: close\r\n\r\n`;
}

function manyMembers(count: number): Buffer {
  const parts: string[] = [];
  for (let index = 0; index < count; index += 1) parts.push(`"${index}":0`);
  return Buffer.from(`{${parts.join(',')}}`);
}

/** Each pattern makes its bodies first (before it says it started), then abuses until killed. */
type Pattern = () => () => Promise<unknown>;

const h1: Pattern = () => {
  const bodies = [manyMembers(2_000_000), manyMembers(120_000), Buffer.alloc(16 * 1024 * 1024, '[')];
  return () =>
    Promise.all(
      Array.from({ length: order.concurrency }, async (_, loop) => {
        for (let round = loop; running; round += 1) {
          const body = bodies[round % bodies.length]!;
          await sendWhole(registerHead(body.length), body);
        }
      }),
    );
};

const m4: Pattern = () => {
  const body = Buffer.from(JSON.stringify(registerBody({ document: largeXml(18 * 1024 * 1024).toString('base64') })));
  return () =>
    Promise.all(
      Array.from({ length: order.concurrency }, async () => {
        while (running) await sendWhole(registerHead(body.length), body);
      }),
    );
};

/** Connections of a wave at once: under MAX_CONNECTIONS_PER_CLIENT (64), so the abuse stays within the clinic's limits. */
const WAVE_CONNECTIONS = 50;

/** One valid RegisterDocument on a connection of its own, as a clinic sends it, waiting for the answer (within 60 s). */
function postRegister(body: Buffer): Promise<void> {
  return new Promise((resolve) => {
    const { businessId, user, token } = order.clinic;
    const request = http.request(
      {
        port: order.port,
        host: '127.0.0.1',
        localAddress: ABUSER_ADDRESS,
        path: '/api/RegisterDocument',
        method: 'POST',
        agent: false,
        timeout: 60_000,
        headers: { businessId, user, token, 'content-type': 'application/json', 'content-length': body.length },
      },
      (response) => {
        count(String(response.statusCode));
        response.resume();
        response.on('end', resolve);
        response.on('error', () => resolve());
      },
    );
    request.on('timeout', () => request.destroy());
    request.on('error', () => {
      count('none');
      resolve();
    });
    request.end(body);
  });
}

/** A wave of RegisterDocument bodies, WAVE_CONNECTIONS at a time; resolves when every answer came. */
async function wave(bodies: Buffer[]): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(WAVE_CONNECTIONS, bodies.length) }, async () => {
      while (next < bodies.length) await postRegister(bodies[next++]!);
    }),
  );
}

/** M2's waves: a burst of requests whose signature checks are as expensive as the limits allow. */
const M2_EVERY_MS = 5000;
const m2: Pattern = () => {
  const pki = new TestPki({ gost: true });
  process.once('exit', () => pki.remove());
  const signers = Array.from({ length: 16 }, (_, index) => pki.issue({ algorithm: 'gost2012_512', commonName: `Hostile signer ${index}` }));
  const signature = pki.signByAll(FIXTURE_XML, signers).toString('base64');
  const body = () =>
    Buffer.from(
      JSON.stringify(
        registerBody({
          signature,
          personalSignatures: Array.from({ length: 20 }, (_, index) => ({ signer: { snils: '08765432102', role: String((index % 9) + 1) }, signature })),
        }),
      ),
    );
  return async () => {
    while (running) {
      const started = Date.now();
      await wave(Array.from({ length: order.concurrency }, body));
      await sleep(Math.max(0, M2_EVERY_MS - (Date.now() - started)));
    }
  };
};

/** M3: one burst of small requests; their callbacks hang at the clinic's receiver, retried by the schedule. */
const m3: Pattern = () => async () => {
  await wave(Array.from({ length: order.concurrency }, () => Buffer.from(JSON.stringify(registerBody()))));
  // Alive until killed: the suite reads what was answered from the last line.
  while (running) await sleep(200);
};

const m1: Pattern = () => async () => {
  const hold = async () => {
    while (running) {
      await new Promise<void>((resolve) => {
        const socket = net.connect({ port: order.port, host: '127.0.0.1', localAddress: ABUSER_ADDRESS });
        socket.on('error', () => undefined);
        socket.on('data', () => count('200'));
        socket.once('close', () => count('connection closed'));
        const ask = () => socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
        socket.once('connect', ask);
        const timer = setInterval(ask, 3000);
        socket.once('close', () => {
          clearInterval(timer);
          resolve();
        });
      });
      // Cut: back after a moment, as a client library reconnects.
      await sleep(200);
    }
  };
  await Promise.all(Array.from({ length: order.concurrency }, hold));
};

const m5: Pattern = () => async () => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: order.concurrency, localAddress: ABUSER_ADDRESS });
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'patient.get_patient', params: {}, cred: { user: 'nobody', token: 'no-such-session' } });
  const call = () =>
    new Promise<void>((resolve) => {
      const request = http.request(
        {
          port: order.port,
          host: '127.0.0.1',
          path: `/${order.rpcVersion}/`,
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        (response) => {
          count(String(response.statusCode));
          response.resume();
          response.on('end', resolve);
          response.on('error', () => resolve());
        },
      );
      request.on('error', () => {
        count('error');
        setTimeout(resolve, 50);
      });
      request.end(body);
    });
  await Promise.all(
    Array.from({ length: order.concurrency }, async () => {
      while (running) await call();
    }),
  );
};

const patterns: Record<AbuseOrder['pattern'], Pattern> = { h1, m1, m2, m3, m4, m5 };
const abuse = patterns[order.pattern]();
console.log(`abuser ${order.pattern} started`);
if (order.startAfterMs) await sleep(order.startAfterMs);
await abuse();
