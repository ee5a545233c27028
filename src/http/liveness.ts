import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { LivenessThreadData } from './liveness-thread.js';

/**
 * The liveness listener (HEALTH_PORT): GET /healthz served by a thread of its own
 * (liveness-thread.ts) from the event loop's heartbeat, so that the probe neither waits behind the
 * loop's work nor lies about it. See docs/operations.md, "Liveness".
 */

/**
 * How often the event loop stores its heartbeat: a tenth of LIVENESS_STALL_MS is precision enough
 * for its verdict, and each beat wakes an idle process (at every 100 ms, ten of its 20 wake-ups a
 * second; issue 24). A healthy loop's eventLoopHeartbeatAgeMs is up to this.
 */
export const HEARTBEAT_EVERY_MS = 1000;
/**
 * A heartbeat older than this fails the probe (503): a loop held this long answers nobody (the
 * slowest legitimate task measured, a 24 MiB body under load, held it under 2 s; docs/hostile.md).
 */
export const LIVENESS_STALL_MS = 10_000;

// The thread is TypeScript run by Node itself (types stripped) from src/, JavaScript in dist/.
const THREAD_URL = new URL(`./liveness-thread${path.extname(new URL(import.meta.url).pathname)}`, import.meta.url);

export interface Liveness {
  port: number;
  stop(): Promise<void>;
}

/** Starts the heartbeat and the thread's listener on `host`:`port`; rejects with the listen error (its `code`) when it cannot listen. */
export async function startLiveness(host: string, port: number, stallMs = LIVENESS_STALL_MS): Promise<Liveness> {
  const heartbeat = new SharedArrayBuffer(BigInt64Array.BYTES_PER_ELEMENT);
  const lastBeat = new BigInt64Array(heartbeat);
  const beat = () => Atomics.store(lastBeat, 0, BigInt(Date.now()));
  beat();
  const timer = setInterval(beat, HEARTBEAT_EVERY_MS);
  timer.unref();
  const workerData: LivenessThreadData = { host, port, heartbeat, stallMs };
  // No execArgv: the parent's loaders (tsx) are not needed; a small heap of its own.
  const thread = new Worker(THREAD_URL, { workerData, execArgv: [], resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 2 } });
  try {
    const bound = await new Promise<number>((resolve, reject) => {
      thread.once('message', (message: { port: number } | { code?: string; message: string }) => {
        if ('port' in message) resolve(message.port);
        else reject(Object.assign(new Error(message.message), { code: message.code }));
      });
      thread.once('error', reject);
      thread.once('exit', (code) => reject(new Error(`the liveness thread exited with code ${code}`)));
    });
    thread.unref();
    return {
      port: bound,
      async stop() {
        clearInterval(timer);
        await thread.terminate();
      },
    };
  } catch (error) {
    clearInterval(timer);
    await thread.terminate();
    throw error;
  }
}
