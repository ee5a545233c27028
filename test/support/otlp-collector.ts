import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A span as the collector stand-in decoded it from OTLP/JSON, with its resource's attributes. */
export interface CollectedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  resource: Record<string, string | number | boolean>;
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  statusCode: number;
}

export interface OtlpCollector {
  /** The base URL, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string;
  spans: CollectedSpan[];
  /** Every request body received, as sent. */
  bodies: string[];
  close(): Promise<void>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}

/** OTLP/JSON's key-value list as an object (intValue is a string in OTLP/JSON: 64-bit). */
function attributesOf(list: ReadonlyArray<{ key: string; value: OtlpValue }> | undefined): Record<string, string | number | boolean> {
  const attributes: Record<string, string | number | boolean> = {};
  for (const { key, value } of list ?? []) {
    attributes[key] = value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : (value.boolValue ?? value.doubleValue ?? ''));
  }
  return attributes;
}

/**
 * A collector stand-in speaking OTLP/HTTP with JSON bodies (the encoding of
 * @opentelemetry/exporter-trace-otlp-http, per the OTLP specification's JSON mapping: ids as hex
 * strings, 64-bit integers as strings): POST /v1/traces, answered with an empty
 * ExportTraceServiceResponse. Anything else answers 404 or 415, as a collector would.
 */
export async function startOtlpCollector(): Promise<OtlpCollector> {
  const spans: CollectedSpan[] = [];
  const bodies: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') return void res.writeHead(404).end();
      if (!String(req.headers['content-type']).startsWith('application/json')) return void res.writeHead(415).end();
      const text = Buffer.concat(chunks).toString('utf8');
      bodies.push(text);
      const request = JSON.parse(text) as {
        resourceSpans?: Array<{
          resource?: { attributes?: Array<{ key: string; value: OtlpValue }> };
          scopeSpans?: Array<{
            spans?: Array<{
              traceId: string;
              spanId: string;
              parentSpanId?: string;
              name: string;
              kind: number;
              attributes?: Array<{ key: string; value: OtlpValue }>;
              status?: { code?: number };
            }>;
          }>;
        }>;
      };
      for (const resourceSpans of request.resourceSpans ?? []) {
        const resource = attributesOf(resourceSpans.resource?.attributes);
        for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
          for (const span of scopeSpans.spans ?? []) {
            spans.push({
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId ?? '',
              name: span.name,
              kind: span.kind,
              attributes: attributesOf(span.attributes),
              resource,
              statusCode: span.status?.code ?? 0,
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    bodies,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
