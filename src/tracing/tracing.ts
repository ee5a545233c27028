import type { TracingConfig } from '../config/config.js';
import type { Logger } from '../logging/logger.js';

/**
 * Tracing, as the domains see it: spans around a request, a pipeline stage's work on one request,
 * a callback attempt, continued across processes from a W3C traceparent stored with the request
 * row. Off (no OTEL_EXPORTER_OTLP_ENDPOINT), every call is a constant no-op and OpenTelemetry's
 * packages are never loaded; on, `startTracing` loads the SDK (./otel.ts) and exports over OTLP.
 *
 * Span attributes carry ids, names, counts and outcomes only: never a SNILS, a name, a token, a
 * document, or an error's message (which may quote any of them).
 */

export type SpanAttributes = Readonly<Record<string, string | number | boolean>>;

export type SpanKind = 'server' | 'client' | 'consumer' | 'internal';

export interface SpanOptions {
  /** A W3C traceparent (stored with a row, or a client's header): the span continues that trace. Without one, the current span is the parent. */
  parent?: string | null | undefined;
  kind?: SpanKind;
  attributes?: SpanAttributes;
}

export interface ActiveSpan {
  setAttributes(attributes: SpanAttributes): void;
  rename(name: string): void;
  /** Marks the span failed with `reason`: an error code or a fixed phrase, never a message that may quote personal data. */
  fail(reason: string): void;
}

/** A started span: `run` makes it the current span of `work` (and of everything `work` awaits); `end` ends it. */
export interface OpenSpan extends ActiveSpan {
  run<R>(work: () => R): R;
  end(): void;
}

export interface Tracer {
  readonly enabled: boolean;
  startSpan(name: string, options?: SpanOptions): OpenSpan;
  /** Runs `work` in a new span, ended when its promise settles (failed, with the error's type, when it rejects). */
  inSpan<R>(name: string, options: SpanOptions, work: (span: ActiveSpan) => Promise<R>): Promise<R>;
  /** The current span (a no-op one outside any). */
  current(): ActiveSpan;
  /** The current span's W3C traceparent, to store with a row; undefined outside a span or when off. */
  traceparent(): string | undefined;
}

const NO_SPAN: OpenSpan = {
  setAttributes() {},
  rename() {},
  fail() {},
  run: (work) => work(),
  end() {},
};

/** Tracing off: nothing recorded, nothing allocated per call. */
export const TRACING_OFF: Tracer = {
  enabled: false,
  startSpan: () => NO_SPAN,
  inSpan: (_name, _options, work) => work(NO_SPAN),
  current: () => NO_SPAN,
  traceparent: () => undefined,
};

let active: Tracer = TRACING_OFF;

/** The process's tracer: TRACING_OFF until `startTracing` turns it on. */
export function tracer(): Tracer {
  return active;
}

/** What an error is, for a span: its code or its class, never its message. */
export function errorType(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(code)) return code;
  return error instanceof Error ? error.name : typeof error;
}

export interface Tracing {
  /** Exports what is still buffered and turns tracing off. */
  stop(): Promise<void>;
}

/** Turns tracing on when `config` says where spans go (the SDK loaded only then); a pair with `stop`. */
export async function startTracing(config: TracingConfig | undefined, logger: Logger): Promise<Tracing> {
  if (config === undefined) return { stop: async () => {} };
  const { startOpenTelemetry } = await import('./otel.js');
  const sdk = startOpenTelemetry(config, logger);
  active = sdk.tracer;
  logger.info({ tracesUrl: config.tracesUrl, serviceName: config.serviceName }, 'tracing on: spans exported over OTLP/HTTP');
  return {
    async stop() {
      active = TRACING_OFF;
      await sdk.shutdown();
    },
  };
}
