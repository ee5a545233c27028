import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * Large bodies pass through this process in chunks: socket reads of 64 KiB, slices read from the
 * database, messages to the database. Each chunk is an ArrayBuffer outside V8's heap that dies
 * young, but V8 only collects for outside memory once it has grown by 64 MiB, so a 20 MiB document
 * used to leave that much dead memory resident at once (measured with `make bench`,
 * large_document). Code that streams counts its bytes here, and every STEP_BYTES of them a minor
 * collection (about a millisecond) frees the chunks already used; a large buffer that lived long
 * enough to be promoted (a request body) is collected for by a full collection once it is dropped.
 * Small bodies are not counted (STREAMED_BODY_BYTES).
 */

const STEP_BYTES = 2 * 1024 * 1024;
/**
 * A body smaller than this is not counted as streamed: it arrives in a chunk or two that die with
 * the request, as the rest of its garbage does, and the ordinary collections take them. Counted,
 * ten-KiB bodies used to force a minor collection every two hundred requests, twice as many as V8
 * makes on its own (`make bench --node-options=--trace-gc`, register_document).
 */
export const STREAMED_BODY_BYTES = STEP_BYTES;
/** A buffer at least this large, once dropped, is worth a full collection. */
export const LARGE_BUFFER_BYTES = 4 * 1024 * 1024;

type Collection = (options: { type: 'minor' | 'major' }) => void;

/** V8's collector, exposed at run time (`--expose-gc` without a command-line flag); undefined where refused. */
function exposeCollector(): Collection | undefined {
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

/** A buffer of `bytes` is no longer used: when large, a full collection frees it (once the current work is done). */
export function droppedBuffer(bytes: number): void {
  if (bytes >= LARGE_BUFFER_BYTES && collect) setImmediate(() => collect({ type: 'major' }));
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

/** The collector's settings for a long-running server (serve calls it once at start); read by V8 at every full collection. */
export function tuneCollectorForServing(): void {
  v8.setFlagsFromString(`--heap-growing-percent=${SERVING_HEAP_GROWING_PERCENT}`);
}
