import { FairQueue } from './fair-queue.js';

/**
 * Turns of the event loop for synchronous work done in pieces (the intake of large bodies: parsing,
 * validation, base64 checks, hashing, storing): one piece per iteration of the loop, whoever asks,
 * in turn by key (a clinic), so that between two pieces the loop serves whatever else is ready
 * (another clinic's request, /healthz, the database's answers). Without turns, a body ran all of
 * its pieces at once, and the bodies that finished arriving in one iteration all ran in it: one of
 * M2's 480 KB bodies of 21 signatures is ~6 ms of CPU in one process alone (parse 0.8, validation
 * 0.6, base64 checks 1.5, hash 1.7, its JSON for storing 0.4, then the insert's message), four of a
 * clinic are taken in at once, and beside M2 the loop was held 25-40 ms of CPU at a time; another
 * clinic's request, which needs several iterations from its headers to its answer, waited for each
 * (issue 21 M2).
 */
export class LoopTurns {
  private readonly waiting = new FairQueue<() => void>();
  private scheduled = false;

  /** Resolves when it is `key`'s turn: the piece that follows (up to its next await) is this iteration's. */
  take(key: string): Promise<void> {
    return new Promise((resolve) => {
      this.waiting.push(key, resolve);
      this.schedule();
    });
  }

  /**
   * The next turn in the check phase of the loop (setImmediate). An immediate queued while the
   * check phase runs waits for the next iteration, so the piece a turn lets go (run in the microtasks
   * after its callback) is the only one of its iteration.
   */
  private schedule(): void {
    if (this.scheduled || this.waiting.size === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.waiting.shift()?.();
      this.schedule();
    });
  }
}
