import net from 'node:net';
import { Readable } from 'node:stream';
import { Agent, buildConnector, request } from 'undici';
import { EgressRefused, type EgressPolicy } from './egress.js';
import { nextAttemptInMs } from './retry-policy.js';
import { signWebhook, signWebhookChunks } from './signing.js';

/**
 * Callback delivery, generic: one signed POST per callback attempt over keep-alive connections
 * (an undici Agent keeps a small pool per receiving host), the answer judged, the next attempt
 * scheduled from the retry schedule. It knows nothing of what a callback means: the domain hands it
 * the URL, the headers, the signing secret and a body source, and stores the outcomes.
 */

/** CALLBACK_TIMEOUT's default: the time a receiver has to answer an attempt. */
export const CALLBACK_TIMEOUT_MS = 15_000;
/** What is kept of a receiver's answer, for `messages show`. */
const ERROR_TEXT_LIMIT = 200;
/** The most of an answer that is read: `{"status":"Success"}` is short. */
const ANSWER_LIMIT_BYTES = 64 * 1024;

/** A body as bytes, or (a large one) as chunks read again for each pass: once to sign, once to send. */
export type CallbackBody = { bytes: Buffer } | { length: number; chunks: () => AsyncIterable<Buffer> };

export interface OutgoingCallback {
  /** The Standard Webhooks webhook-id: the same on every attempt. */
  id: string;
  url: string;
  /** Headers of the receiver's own scheme (credentials); webhook-* and content-* are added. */
  headers: Readonly<Record<string, string>>;
  /** Standard Webhooks secret (`whsec_…`) for webhook-signature. */
  signingSecret: string;
  body: CallbackBody;
  /** Attempts so far in this round of the retry schedule. */
  roundAttempts: number;
}

export interface AttemptOutcome {
  id: string;
  delivered: boolean;
  httpStatus?: number;
  error?: string;
  at: Date;
  /** How long the attempt took, signing, sending and the answer included. */
  durationMs: number;
  /** After a failed attempt: when to try again (ms from now), or null when the schedule is exhausted. */
  retryInMs: number | null;
  /** The receiver gave no answer: none within the timeout, or no connection (the circuit breaker counts these). */
  silent?: boolean;
  /** Not sent: the receiver's circuit is open (circuit-breaker.ts). */
  postponed?: boolean;
}

async function signedHeaders(callback: OutgoingCallback): Promise<Record<string, string>> {
  const timestamp = Math.floor(Date.now() / 1000);
  const body = callback.body;
  // One signing per body: over the bytes held, or over a first pass of the chunks (the send is the second).
  const signature =
    'bytes' in body
      ? signWebhook(callback.signingSecret, callback.id, timestamp, body.bytes)
      : await signWebhookChunks(callback.signingSecret, callback.id, timestamp, body.chunks());
  return {
    ...callback.headers,
    'content-type': 'application/json',
    'content-length': String('bytes' in body ? body.bytes.length : body.length),
    'webhook-id': callback.id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signature,
  };
}

/** The receiver's answer; undefined when it is longer than ANSWER_LIMIT_BYTES (no more of it is read). */
async function answerText(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    length += chunk.length;
    if (length > ANSWER_LIMIT_BYTES) {
      body.destroy();
      return undefined;
    }
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Delivered only on HTTP 200 with a JSON body whose status is "Success". */
function judge(status: number, text: string | undefined): { delivered: boolean; error?: string } {
  if (status !== 200) return { delivered: false, error: `HTTP ${status}` };
  if (text === undefined) return { delivered: false, error: `answer is longer than ${ANSWER_LIMIT_BYTES} bytes` };
  let answered: unknown;
  try {
    answered = (JSON.parse(text) as { status?: unknown }).status;
  } catch {
    return { delivered: false, error: 'answer is not JSON' };
  }
  if (answered !== 'Success') return { delivered: false, error: `answer status is ${JSON.stringify(answered)?.slice(0, ERROR_TEXT_LIMIT)}, not "Success"` };
  return { delivered: true };
}

/**
 * Connections of the sender under the egress policy (egress.ts): a host name is resolved by the
 * policy's lookup, which keeps only an address it allows and is the one connected to (no second
 * resolution); an address written in the URL is judged as it is. A refusal fails the attempt.
 */
function guardedConnector(policy: EgressPolicy): buildConnector.connector {
  const byPort = new Map<number, buildConnector.connector>();
  return (options, callback) => {
    const port = Number(options.port) || (options.protocol === 'https:' ? 443 : 80);
    const literal = options.hostname.replace(/^\[(.*)\]$/, '$1');
    const refusal = net.isIP(literal) ? policy.refusal(literal, port) : undefined;
    if (refusal !== undefined) {
      callback(new EgressRefused(refusal), null);
      return;
    }
    let connector = byPort.get(port);
    if (!connector) {
      connector = buildConnector({ lookup: policy.lookupFor(port) });
      byPort.set(port, connector);
    }
    connector(options, callback);
  };
}

export class CallbackSender {
  private readonly agent: Agent;

  constructor(
    private readonly retryScheduleMs: readonly number[],
    egress: EgressPolicy,
    private readonly timeoutMs: number = CALLBACK_TIMEOUT_MS,
  ) {
    this.agent = new Agent({ keepAliveTimeout: 30_000, connections: 32, connect: guardedConnector(egress) });
  }

  async attempt(callback: OutgoingCallback): Promise<AttemptOutcome> {
    const at = new Date();
    const started = performance.now();
    const result = await this.post(callback);
    const durationMs = Math.round(performance.now() - started);
    return {
      id: callback.id,
      at,
      durationMs,
      retryInMs: result.delivered ? null : nextAttemptInMs(this.retryScheduleMs, callback.roundAttempts + 1),
      ...result,
    };
  }

  /** An attempt not made (the receiver's circuit is open), recorded as a failed one and put off by the retry policy. */
  postpone(callback: Pick<OutgoingCallback, 'id' | 'roundAttempts'>, reason: string): AttemptOutcome {
    return {
      id: callback.id,
      at: new Date(),
      durationMs: 0,
      delivered: false,
      error: reason.slice(0, ERROR_TEXT_LIMIT),
      postponed: true,
      retryInMs: nextAttemptInMs(this.retryScheduleMs, callback.roundAttempts + 1),
    };
  }

  private async post(callback: OutgoingCallback): Promise<{ delivered: boolean; httpStatus?: number; error?: string; silent?: boolean }> {
    // A timer cleared once the answer is read (AbortSignal.timeout's would fire later anyway, building a DOMException per attempt).
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.timeoutMs).unref();
    try {
      const headers = await signedHeaders(callback);
      const body = 'bytes' in callback.body ? callback.body.bytes : Readable.from(callback.body.chunks());
      const response = await request(callback.url, { method: 'POST', headers, body, dispatcher: this.agent, signal: controller.signal });
      const judged = judge(response.statusCode, await answerText(response.body));
      return { ...judged, httpStatus: response.statusCode };
    } catch (error) {
      const err = error as Error & { code?: string; cause?: { code?: string } };
      if (err.name === 'TimeoutError' || err.name === 'AbortError')
        return { delivered: false, silent: true, error: `no answer within ${this.timeoutMs / 1000} s` };
      const refused = [err, err.cause].find((candidate) => candidate instanceof EgressRefused);
      if (refused) return { delivered: false, error: refused.message.slice(0, ERROR_TEXT_LIMIT) };
      return { delivered: false, silent: true, error: `connection failed: ${err.cause?.code ?? err.code ?? err.message}`.slice(0, ERROR_TEXT_LIMIT) };
    } finally {
      clearTimeout(timer);
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}
