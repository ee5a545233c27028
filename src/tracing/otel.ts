import { context, INVALID_SPAN_CONTEXT, ROOT_CONTEXT, SpanKind as OtelSpanKind, SpanStatusCode, trace, type Context, type Span } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { parseTraceParent, setGlobalErrorHandler } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, TracerProvider } from '@opentelemetry/sdk-trace';
import type { Logger } from '../logging/logger.js';
import { errorType, resolved, type ActiveSpan, type Lazy, type OpenSpan, type SpanKind, type SpanOptions, type Tracer, type TracingConfig } from './tracer.js';

/**
 * The OpenTelemetry SDK behind tracing.ts, loaded only when tracing is on: a tracer provider with a
 * batch processor and the OTLP/HTTP (JSON) exporter, and the async-hooks context manager so that a
 * span is the parent of what its work awaits. Every span is sampled unless its parent says not
 * (a client's traceparent with the sampled flag off).
 */

const KINDS: Record<SpanKind, OtelSpanKind> = {
  server: OtelSpanKind.SERVER,
  client: OtelSpanKind.CLIENT,
  consumer: OtelSpanKind.CONSUMER,
  internal: OtelSpanKind.INTERNAL,
};

/** A stored or received traceparent as the parent context; the current context when there is none (or it is malformed). */
function parentContext(traceparent: string | null | undefined): Context {
  if (!traceparent) return context.active();
  const parsed = parseTraceParent(traceparent);
  if (!parsed || !trace.isSpanContextValid(parsed)) return context.active();
  return trace.setSpanContext(ROOT_CONTEXT, { ...parsed, isRemote: true });
}

function activeSpan(span: Span): ActiveSpan {
  return {
    setAttributes: (attributes) => void span.setAttributes(resolved(attributes)),
    rename: (name) => void span.updateName(name),
    fail: (reason) => {
      span.setAttribute('error.type', reason);
      span.setStatus({ code: SpanStatusCode.ERROR });
    },
  };
}

/** The W3C traceparent of a span (version 00). */
function traceparentOf(span: Span): string | undefined {
  const spanContext = span.spanContext();
  if (!trace.isSpanContextValid(spanContext)) return undefined;
  return `00-${spanContext.traceId}-${spanContext.spanId}-${(spanContext.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

export function startOpenTelemetry(config: TracingConfig, logger: Logger): { tracer: Tracer; shutdown(): Promise<void> } {
  // A failed export is logged by its kind only (the collector's answer may quote what it was sent).
  setGlobalErrorHandler((error) => logger.warn({ code: errorType(error) }, 'exporting spans failed'));
  const contextManager = new AsyncLocalStorageContextManager();
  contextManager.enable();
  context.setGlobalContextManager(contextManager);
  const provider = new TracerProvider({
    // process.pid tells apart the processes of one trace (an API process, a worker).
    resource: resourceFromAttributes({ 'service.name': config.serviceName, 'process.pid': process.pid }),
    sampler: new ParentBasedSampler({ root: new AlwaysOnSampler() }),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: config.tracesUrl, headers: { ...config.headers } }) })],
  });
  const otel = provider.getTracer('ehr-gateway');

  const startSpan = (name: string, lazyOptions: Lazy<SpanOptions> = {}): OpenSpan => {
    const options = resolved(lazyOptions);
    const parent = parentContext(options.parent);
    const span = otel.startSpan(name, { kind: KINDS[options.kind ?? 'internal'], ...(options.attributes ? { attributes: options.attributes } : {}) }, parent);
    const within = trace.setSpan(parent, span);
    return { ...activeSpan(span), run: (work) => context.with(within, work), end: () => span.end() };
  };

  const tracer: Tracer = {
    enabled: true,
    startSpan,
    async inSpan(name, options, work) {
      const span = startSpan(name, options);
      try {
        return await span.run(() => work(span));
      } catch (error) {
        span.fail(errorType(error));
        throw error;
      } finally {
        span.end();
      }
    },
    current() {
      // Outside any span: a non-recording one, which ignores what it is told.
      return activeSpan(trace.getActiveSpan() ?? trace.wrapSpanContext(INVALID_SPAN_CONTEXT));
    },
    traceparent() {
      const span = trace.getActiveSpan();
      return span && traceparentOf(span);
    },
  };
  return {
    tracer,
    async shutdown() {
      await provider.shutdown();
      context.disable();
    },
  };
}
