/**
 * What tracing is, as every layer sees it (types only, and errorType): tracing.ts turns it on and
 * off, otel.ts implements it with OpenTelemetry's SDK.
 */

/** OpenTelemetry's standard variables, the few the service reads (read in src/config/config.ts). */
export interface TracingConfig {
  /** The collector's base URL; spans go to `<it>/v1/traces` (OTLP/HTTP, JSON). */
  tracesUrl: string;
  /** OTEL_EXPORTER_OTLP_HEADERS: sent with every export (a collector's credentials). */
  headers: Readonly<Record<string, string>>;
  /** OTEL_SERVICE_NAME: the resource's service.name. */
  serviceName: string;
}

export type SpanAttributes = Readonly<Record<string, string | number | boolean>>;

export type SpanKind = 'server' | 'client' | 'consumer' | 'internal';

export interface SpanOptions {
  /** A W3C traceparent (stored with a row, or a client's header): the span continues that trace. Without one, the current span is the parent. */
  parent?: string | null | undefined;
  kind?: SpanKind;
  attributes?: SpanAttributes;
}

/**
 * Span options or attributes, or a function that builds them: called only while tracing is on, so
 * a caller with attributes to compute (a map, a join) costs nothing when it is off, without a guard
 * of its own.
 */
export type Lazy<T> = T | (() => T);

/** What a Lazy holds. */
export function resolved<T extends object>(value: Lazy<T>): T {
  return typeof value === 'function' ? value() : value;
}

export interface ActiveSpan {
  setAttributes(attributes: Lazy<SpanAttributes>): void;
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
  startSpan(name: string, options?: Lazy<SpanOptions>): OpenSpan;
  /** Runs `work` in a new span, ended when its promise settles (failed, with the error's type, when it rejects). */
  inSpan<R>(name: string, options: Lazy<SpanOptions>, work: (span: ActiveSpan) => Promise<R>): Promise<R>;
  /** The current span (a no-op one outside any). */
  current(): ActiveSpan;
  /** The current span's W3C traceparent, to store with a row; undefined outside a span or when off. */
  traceparent(): string | undefined;
}

/** What an error is, for a span: its code or its class, never its message. */
export function errorType(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(code)) return code;
  return error instanceof Error ? error.name : typeof error;
}
