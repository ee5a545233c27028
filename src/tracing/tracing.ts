import type { Logger } from '../logging/logger.js';
import type { OpenSpan, Tracer, TracingConfig } from './tracer.js';

export type { ActiveSpan, Lazy, SpanAttributes, SpanOptions, Tracer } from './tracer.js';

/**
 * Tracing, as the domains see it: spans around a request, a pipeline stage's work on one request,
 * a callback attempt, continued across processes from a W3C traceparent stored with the request
 * row. Off (no OTEL_EXPORTER_OTLP_ENDPOINT), every call is a constant no-op and OpenTelemetry's
 * packages are never loaded; on, `startTracing` loads the SDK (./otel.ts) and exports over OTLP.
 *
 * Span attributes carry ids, names, counts and outcomes only: never a SNILS, a name, a token, a
 * document, or an error's message (which may quote any of them).
 */

const NO_SPAN: OpenSpan = {
  setAttributes() {},
  rename() {},
  fail() {},
  run: (work) => work(),
  end() {},
};

/** Tracing off: nothing recorded, nothing allocated per call, no lazy option or attribute built. */
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
