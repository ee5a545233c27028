import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * Large bodies pass through this process in chunks: socket reads of 64 KiB, slices read from the
 * database, messages to the database. Each chunk is an ArrayBuffer outside V8's heap that dies
 * young, but V8 only collects for outside memory once it has grown by 64 MiB, so a 20 MiB document
 * used to leave that much dead memory resident at once (measured with `make bench`,
 * large_document). Code that streams counts its bytes here, and every STEP_BYTES of them a minor
 * collection (about a millisecond) frees the chunks already used; a large request body, which lived
 * long enough to be promoted, is handed to a young buffer once dropped (droppedBuffer), so that a
 * minor collection frees it too. Small bodies are not counted (STREAMED_BODY_BYTES).
 */

const STEP_BYTES = 2 * 1024 * 1024;
/**
 * A body smaller than this is not counted as streamed: it arrives in a chunk or two that die with
 * the request, as the rest of its garbage does, and the ordinary collections take them. Counted,
 * ten-KiB bodies used to force a minor collection every two hundred requests, twice as many as V8
 * makes on its own (`make bench --node-options=--trace-gc`, register_document).
 */
export const STREAMED_BODY_BYTES = STEP_BYTES;
/** A buffer at least this large, once dropped, is worth freeing at once (droppedBuffer). */
export const LARGE_BUFFER_BYTES = 4 * 1024 * 1024;

export type Collection = (options: { type: 'minor' | 'major' }) => void;

/** V8's collector, exposed at run time (`--expose-gc` without a command-line flag); undefined where refused. */
export function exposeCollector(): Collection | undefined {
  try {
    v8.setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as Collection | undefined;
    return typeof gc === 'function' ? gc : undefined;
  } catch {
    return undefined;
  }
}

const collect = exposeCollector();
let streamed = 0;

/** `bytes` more went through a stream: a minor collection once STEP_BYTES have passed since the last. */
export function streamedBytes(bytes: number): void {
  streamed += bytes;
  if (streamed < STEP_BYTES) return;
  streamed = 0;
  collect?.({ type: 'minor' });
}

/**
 * `buffer` (a request body) is no longer used: when large, its memory is handed to a new
 * ArrayBuffer (a transfer: every view of the old one is empty from now on), which the next minor
 * collection frees. A body read in many chunks has lived through young collections into the old
 * generation, where only a full collection would free it, and a full collection of serve's heap
 * held the event loop 126-130 ms on the 2-core test machine, once per large body (docs/hostile.md,
 * M4). Only for a buffer that owns its whole ArrayBuffer (never Node's shared pool of small ones).
 */
export function droppedBuffer(buffer: Buffer): void {
  const memory = buffer.buffer;
  if (memory.byteLength < LARGE_BUFFER_BYTES || buffer.byteOffset !== 0 || !(memory instanceof ArrayBuffer)) return;
  try {
    structuredClone(memory, { transfer: [memory] });
  } catch {
    // Not transferable (a buffer Node made so): the ordinary collections free it.
    return;
  }
  if (collect) setImmediate(() => collect({ type: 'minor' }));
}

/**
 * How far the old generation may grow past what the last full collection kept, in percent: V8's
 * own factor (1.1 to 4, from its speed estimates) left `serve`, whose program and schemas keep
 * some 40 MB alive, about 40 MB of room, which V8 counts as too little beside a young generation
 * of 32 MB, so it marked the whole heap again about every half second under load (`make bench
 * BENCH_ARGS='--node-options="--trace-gc --trace-incremental-marking"'`, register_document: a full
 * collection per 300 requests, a third of the service's CPU per request). At 150 % it still did
 * every two seconds; at 200 %, 40 MB kept leaves 80 MB of room.
 */
const SERVING_HEAP_GROWING_PERCENT = 200;

/**
 * The collector's settings for a long-running server (serve calls it once at start); V8 reads both
 * at every collection, so setting them at run time takes effect (`--no-memory-reducer` itself would
 * not: V8 reads it once, when the heap is made, and NODE_OPTIONS refuses it).
 *
 * The memory reducer's collections without "reduce memory footprint": about 8 s after allocation
 * drops, V8's memory reducer collects the whole heap, and with that mode (V8's default) it also gives
 * memory back (the young generation shrinks among others). The first requests after a pause then ran
 * slow: at a constant 2,662 get_patient calls a second after 15-20 s without load, the first second's p99
 * was 81-109 ms (39-267 ms in earlier runs), against 5-12 ms with the mode off
 * (scripts/bench/steady-timeline.ts --pause, issue 24). The cost: resident memory stays where load
 * took it (ehr: 230 MB, where the shrink brought it back to 160 MB), within the chart's limits.
 */
export function tuneCollectorForServing(): void {
  v8.setFlagsFromString(`--heap-growing-percent=${SERVING_HEAP_GROWING_PERCENT}`);
  v8.setFlagsFromString('--no-memory-reducer-favors-memory');
}
