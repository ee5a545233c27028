import http, { STATUS_CODES, type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { newRequestContext, runInRequest, visibleRequestId } from '../logging/request-context.js';
import { clientAddressOf } from './client-address.js';
import { capConnectionsPerClient } from './connection-cap.js';
import { NO_NETWORKS, type Networks } from './networks.js';

export interface Listener {
  port: number;
  /**
   * Stops accepting connections and lets in-flight requests finish (up to graceMs), then closes.
   * While it drains, every answer says `Connection: close`; idle keep-alive connections are not
   * cut under a client that may be reusing them: they end after keepAliveTimeout, as announced.
   */
  stop(graceMs?: number): Promise<void>;
}

/**
 * What a slow or greedy client may hold of a listener (config: HEADERS_TIMEOUT, REQUEST_TIMEOUT,
 * BODY_MIN_RATE, MAX_CONNECTIONS, MAX_CONNECTIONS_PER_CLIENT, KEEP_ALIVE_TIMEOUT,
 * MAX_REQUESTS_PER_CONNECTION).
 */
export interface ConnectionLimits {
  /** The request line and headers must arrive within this. */
  headersTimeoutMs: number;
  /** The whole request, body included, must arrive within this. */
  requestTimeoutMs: number;
  /** A body must keep coming at least this fast, measured over every BODY_RATE_WINDOW_MS. */
  bodyMinBytesPerSecond: number;
  /** Open connections per listener; more are closed as they arrive. */
  maxConnections: number;
  /** Open connections per client address (an IPv6 client by its /64, clientKey); more are closed as they arrive; 0: no such cap. */
  maxConnectionsPerClient: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** Requests one connection may carry; the last answer says `Connection: close`; 0: no cap. */
  maxRequestsPerConnection: number;
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 15 * 60_000,
  bodyMinBytesPerSecond: 1024,
  maxConnections: 512,
  maxConnectionsPerClient: 64,
  keepAliveTimeoutMs: 5_000,
  maxRequestsPerConnection: 1_000,
};

/** The window over which BODY_MIN_RATE is measured: long enough for a TCP stall of a real link. */
export const BODY_RATE_WINDOW_MS = 10_000;

/** Requests whose bodies the service leaves unread on purpose, for now (waiting their turn: emdr/intake/admission/limits.ts). */
const heldBodies = new WeakSet<IncomingMessage>();

/**
 * The request's body is left unread by the service until the returned function is called:
 * BODY_MIN_RATE does not count that time against the client, and measures afresh from then on.
 */
export function holdBody(request: IncomingMessage): () => void {
  heldBodies.add(request);
  return () => heldBodies.delete(request);
}

export interface ListenerOptions {
  limits?: ConnectionLimits;
  /** The JSON body of an answer Node gives itself (a request it cannot parse: 400, 408, 431). */
  errorBody?: (status: number) => unknown;
  /** Reverse proxies (TRUSTED_PROXIES): their X-Forwarded-For names the client, and their own connections are not capped per client. */
  trustedProxies?: Networks;
}

/** Whether the request announces a body (RFC 9112: Transfer-Encoding, or a Content-Length above 0). */
export function announcesBody(request: IncomingMessage): boolean {
  return request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0;
}

/** The security headers every answer carries (API answers are never cached; /docs assets override Cache-Control). */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = { 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-store' };

const SECURITY_HEADER_LIST = Object.entries(SECURITY_HEADERS);

export async function startListener(handler: RequestListener, host: string, port: number, options: ListenerOptions = {}): Promise<Listener> {
  const limits = options.limits ?? DEFAULT_CONNECTION_LIMITS;
  const trustedProxies = options.trustedProxies ?? NO_NETWORKS;
  const errorBody = options.errorBody ?? ((status: number) => ({ error: STATUS_CODES[status] ?? 'error' }));
  let draining = false;
  /**
   * An answer sent while the listener drains, or before the request's body was read (an early
   * refusal: the rest of the body is not worth reading, and the connection cannot carry another
   * request until it is), says `Connection: close`. One function per listener, set on each answer
   * as its own property: Express re-prototypes the answers it handles, which would drop a method
   * of the class below.
   */
  function writeHead(this: ServerResponse, ...args: Parameters<ServerResponse['writeHead']>): ServerResponse {
    if (draining || (announcesBody(this.req) && !this.req.complete)) this.setHeader('Connection', 'close');
    return (Object.getPrototypeOf(this) as ServerResponse).writeHead.apply(this, args);
  }
  /** The listener's answers: SECURITY_HEADERS on every one, and the rule above, with nothing allocated per request. */
  class GatewayResponse extends http.ServerResponse {
    constructor(request: IncomingMessage) {
      super(request);
      for (const [name, value] of SECURITY_HEADER_LIST) this.setHeader(name, value);
      (this as ServerResponse).writeHead = writeHead as ServerResponse['writeHead'];
    }
  }
  const server = http.createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      // Node checks both timeouts on this interval (30 s by default, which would stretch a 10 s bound to 40 s).
      connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs),
      ServerResponse: GatewayResponse,
    },
    (request, response) => {
      const context = newRequestContext(request.headers['x-request-id'], clientAddressOf(request, trustedProxies));
      response.setHeader('x-request-id', visibleRequestId(context));
      runInRequest(context, () => handler(request, response));
    },
  );
  server.maxConnections = limits.maxConnections;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.maxRequestsPerSocket = limits.maxRequestsPerConnection;
  if (limits.maxConnectionsPerClient > 0) capConnectionsPerClient(server, limits.maxConnectionsPerClient, trustedProxies);
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => answerClientError(error, socket, errorBody));
  const watchdog = watchBodyRates(server, limits.bodyMinBytesPerSecond);

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    stop: (graceMs = 10_000) =>
      new Promise<void>((resolve) => {
        draining = true;
        const force = setTimeout(() => server.closeAllConnections(), graceMs);
        force.unref();
        // net.Server's close, not http.Server's: the latter also cuts idle keep-alive connections at once.
        net.Server.prototype.close.call(server, () => {
          clearTimeout(force);
          watchdog.stop();
          resolve();
        });
      }),
  };
}

/** Node's own answers (unparsable request, headers too large, HEADERS_TIMEOUT or REQUEST_TIMEOUT) in JSON. */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex, errorBody: (status: number) => unknown): void {
  const inFlight = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const body = JSON.stringify(errorBody(status));
  const headers = {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(body)),
    ...SECURITY_HEADERS,
    'x-request-id': randomUUID(),
    Connection: 'close',
  };
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${Object.entries(headers)
      .map(([name, value]) => `${name}: ${value}`)
      .join('\r\n')}\r\n\r\n${body}`,
  );
}

/**
 * Cuts the connection of a request whose body arrives slower than `minBytesPerSecond` over the
 * last BODY_RATE_WINDOW_MS (a slow-loris trickling its body; one byte every 10 s used to hold a
 * connection for minutes). A real upload, even a 32 MB one on a slow link, stays far above it.
 * Counts the socket's bytes, so a body nobody reads (an early refusal) is watched too, but not while
 * the service holds it unread on purpose (holdBody).
 */
function watchBodyRates(server: http.Server, minBytesPerSecond: number): { stop(): void } {
  const watched = new Map<IncomingMessage, Array<{ at: number; bytes: number }>>();
  // Unwatched as soon as its body is in: a request held until the next tick would outlive a young
  // collection or two with everything it refers to (under load, megabytes promoted a second).
  const unwatch = function (this: IncomingMessage) {
    watched.delete(this);
  };
  const tick = Math.min(1000, BODY_RATE_WINDOW_MS / 4);
  // The timer runs only while a body is on its way: an idle listener is not woken every second for nothing (issue 24).
  let timer: NodeJS.Timeout | undefined;
  const check = () => {
    const now = Date.now();
    for (const [request, samples] of watched) {
      if (request.complete || request.socket.destroyed) {
        watched.delete(request);
        continue;
      }
      if (heldBodies.has(request)) {
        samples.splice(0, samples.length, { at: now, bytes: request.socket.bytesRead });
        continue;
      }
      samples.push({ at: now, bytes: request.socket.bytesRead });
      while (samples.length > 1 && now - samples[1]!.at >= BODY_RATE_WINDOW_MS) samples.shift();
      const oldest = samples[0]!;
      if (now - oldest.at >= BODY_RATE_WINDOW_MS && request.socket.bytesRead - oldest.bytes < (minBytesPerSecond * (now - oldest.at)) / 1000) {
        watched.delete(request);
        request.socket.destroy();
      }
    }
    if (watched.size === 0) {
      clearInterval(timer);
      timer = undefined;
    }
  };
  server.on('request', (request: IncomingMessage) => {
    if (!announcesBody(request)) return;
    watched.set(request, [{ at: Date.now(), bytes: request.socket.bytesRead }]);
    request.once('end', unwatch);
    if (!timer) {
      timer = setInterval(check, tick);
      timer.unref();
    }
  });
  return {
    stop() {
      clearInterval(timer);
      timer = undefined;
    },
  };
}
