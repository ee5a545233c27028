import { PassThrough } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import { constants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBody } from '../../src/http/json-body.js';
import { droppedBuffer } from '../../src/memory/garbage.js';
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

/**
 * A large body that was read in chunks has been promoted to the old generation; once dropped, its
 * memory is freed by a minor collection, never by a full one (a full collection of serve's heap held
 * the event loop ~130 ms, once per 24 MiB body of M4 in docs/hostile.md).
 */
describe('a dropped large body', () => {
  const major: PerformanceEntry[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const detail = (entry as PerformanceEntry & { detail?: { kind: number } }).detail;
      if (detail && detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) major.push(entry);
    }
  });
  beforeAll(() => observer.observe({ entryTypes: ['gc'] }));
  afterAll(() => observer.disconnect());

  it('is freed without a full collection, and a small pooled buffer is left alone', async () => {
    const chunk = Buffer.alloc(64 * 1024, 0x41);
    const body = await readBody(request(Array.from({ length: 24 * 16 }, () => chunk)), 32 * 1024 * 1024);
    const held = process.memoryUsage().arrayBuffers;
    const small = Buffer.from('a small body');
    const started = performance.now();
    droppedBuffer(body);
    droppedBuffer(small);
    expect(body.length).toBe(0);
    expect(small.toString()).toBe('a small body');
    await until(
      'the body’s 24 MiB freed',
      async () => process.memoryUsage().arrayBuffers,
      (now) => held - now >= 20 * 1024 * 1024,
    );
    expect(major.filter((entry) => entry.startTime >= started)).toEqual([]);
  });
});
