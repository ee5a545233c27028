import { PassThrough } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import { constants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBody } from '../../src/http/json-body.js';
import { until } from '../support/until.js';

/** A request as readBody sees one: its headers and its body's chunks. */
function request(chunks: readonly Buffer[]): IncomingMessage {
  const stream = new PassThrough();
  const total = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
  Object.assign(stream, { headers: { 'content-length': String(total) } });
  for (const chunk of chunks) stream.write(chunk);
  stream.end();
  return stream as unknown as IncomingMessage;
}

/**
 * Large bodies pass through in chunks that V8 would collect late, so reading them forces minor
 * collections (src/memory/garbage.ts); small bodies, however many, must not: forced every 2 MiB
 * of them, they doubled the collections of the acknowledgement path.
 */
describe('collections forced while bodies are read', () => {
  const forced: PerformanceEntry[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const detail = (entry as PerformanceEntry & { detail?: { kind: number; flags: number } }).detail;
      if (detail && (detail.flags & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) !== 0) forced.push(entry);
    }
  });
  beforeAll(() => observer.observe({ entryTypes: ['gc'] }));
  afterAll(() => observer.disconnect());

  it('forces none for 3 MiB of 10 KiB bodies, and some for one 3 MiB body', async () => {
    const small = Buffer.alloc(10 * 1024, 0x41);
    for (let i = 0; i < 300; i += 1) expect((await readBody(request([small]), 64 * 1024)).length).toBe(small.length);
    const smallDone = performance.now();
    const chunk = Buffer.alloc(64 * 1024, 0x41);
    expect((await readBody(request(Array.from({ length: 48 }, () => chunk)), 4 * 1024 * 1024)).length).toBe(48 * chunk.length);
    await until(
      'a forced collection while the large body was read',
      async () => forced.length,
      (count) => count > 0,
    );
    expect(forced.filter((entry) => entry.startTime < smallDone)).toEqual([]);
  });
});
