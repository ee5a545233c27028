import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Rate refusals (429) to one client address (interface A) or clinic account (interface B, keyed
 * `clinic <id>`) are answered at once up to `freePerSecond` a second;
 * beyond that each further one is held for `holdMs` before it is sent. A client that ignores
 * Retry-After and asks again at once (issue 21, M5: ~4,500 refusals a second from 32 connections,
 * each closing its connection) then gets about one refusal per connection per `holdMs`, so its
 * refusals stop costing the event loop and the honest clients; a client that honours Retry-After
 * never reaches the threshold. A held refusal costs a timer and its connection, which the
 * per-address connection cap (MAX_CONNECTIONS_PER_CLIENT) already bounds; at most `maxHeld` are
 * held in all, beyond which refusals go out at once again (the cost of before, never worse).
 */
export interface RefusalPacingOptions {
  freePerSecond: number;
  holdMs: number;
  maxHeld: number;
  /**
   * Each hold is drawn from `holdMs` to `holdMs × (1 + spread)`; 0: exactly `holdMs`. Held alike, a
   * client's connections are answered in one burst and come back together to be held alike again
   * (interface B beside M4: 64 refusals answered and closed in one piece of 100–190 ms of the loop).
   */
  spread?: number;
}

/** 20 refusals a second are a client that retries in a loop; held 1 s, within every Retry-After (≥ 1 s). */
export const REFUSAL_PACING: RefusalPacingOptions = { freePerSecond: 20, holdMs: 1000, maxHeld: 4096 };

/** Addresses remembered at once; the map is emptied when it grows past this (a second's counts only). */
const MAX_ADDRESSES = 10_000;

export class RefusalPacer {
  /** Refusals per address in the current second. */
  private counts = new Map<string, number>();
  private second = 0;
  private held = 0;

  constructor(private readonly options: RefusalPacingOptions = REFUSAL_PACING) {}

  /** Resolves when a rate refusal to `clientKey` may be sent: at once, or after the hold. */
  async pace(clientKey: string): Promise<void> {
    const second = Math.floor(Date.now() / 1000);
    if (second !== this.second || this.counts.size >= MAX_ADDRESSES) {
      this.second = second;
      this.counts = new Map();
    }
    const count = (this.counts.get(clientKey) ?? 0) + 1;
    this.counts.set(clientKey, count);
    if (count <= this.options.freePerSecond || this.held >= this.options.maxHeld) return;
    this.held += 1;
    try {
      await sleep(this.options.holdMs * (1 + Math.random() * (this.options.spread ?? 0)));
    } finally {
      this.held -= 1;
    }
  }
}
