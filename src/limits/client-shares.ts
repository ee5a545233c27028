/**
 * Requests of one client address handled at once while other addresses are being served too
 * (CLIENT_REQUESTS_IN_PROGRESS); the rest wait, unread, in the order they came. A client alone is
 * never held: its share is the whole process.
 *
 * Why: on 2 cores, one clinic's burst of 300 small RegisterDocument requests on 50 connections
 * (hostile M3, docs/hostile.md) took the process's loop and the machine for about a second, and
 * another clinic's acknowledgement waited 140–490 ms for it (/healthz on the same loop too). Per
 * clinic intake slots did not prevent it: every one of the burst's requests was authenticated and
 * counted against RATE_LIMIT before it waited for a slot, and with 4 slots a clinic still took in
 * documents as fast as the machine handles them. With 2 requests of the busy address in progress
 * the other clinic's acknowledgement stayed at 17–46 ms in most runs (300–400 ms without). Counting by address comes
 * before authentication (no account lookup for a waiting request) and cannot be turned against
 * another clinic: a claimed account could be.
 */
export interface ClientSharesOptions {
  /** Requests of one address in progress while another address is active (CLIENT_REQUESTS_IN_PROGRESS, at least 1). */
  perClient: number;
  /** An address is active while it has a request in progress, and this long after its last one. */
  activeForMs: number;
  now?: () => number;
}

interface Client {
  inProgress: number;
  /** When a request of it last came or ended. */
  lastSeenMs: number;
  waiting: (() => void)[];
}

/** How long an address counts as active after its last request: a clinic sending a few a second is active throughout. */
export const CLIENT_ACTIVE_FOR_MS = 1000;

export class ClientShares {
  private readonly clients = new Map<string, Client>();
  private readonly now: () => number;
  private lastSweepMs = 0;

  constructor(private readonly options: ClientSharesOptions) {
    this.now = options.now ?? Date.now;
  }

  /**
   * Admits a request of the address `key`: its `release` (call it once the request is answered) at
   * once, or a promise of it once the address's share has room. Synchronous when admitted, so that
   * an admitted request costs no extra turn.
   */
  enter(key: string): (() => void) | Promise<() => void> {
    const now = this.now();
    if (now - this.lastSweepMs >= this.options.activeForMs) this.sweep(now);
    const client = this.clientOf(key);
    client.lastSeenMs = now;
    if (client.waiting.length === 0 && this.mayStart(key, client)) return this.start(key, client);
    return new Promise((resolve) => client.waiting.push(() => resolve(this.start(key, client))));
  }

  /** Requests waiting for their address's share, in all. */
  get waiting(): number {
    let count = 0;
    for (const client of this.clients.values()) count += client.waiting.length;
    return count;
  }

  private clientOf(key: string): Client {
    let client = this.clients.get(key);
    if (!client) {
      client = { inProgress: 0, lastSeenMs: 0, waiting: [] };
      this.clients.set(key, client);
    }
    return client;
  }

  private mayStart(key: string, client: Client): boolean {
    return client.inProgress < this.options.perClient || !this.anotherActive(key);
  }

  private isActive(client: Client, since: number): boolean {
    return client.inProgress > 0 || client.waiting.length > 0 || client.lastSeenMs >= since;
  }

  /** Whether an address other than `key` is active. */
  private anotherActive(key: string): boolean {
    const since = this.now() - this.options.activeForMs;
    for (const [other, client] of this.clients) if (other !== key && this.isActive(client, since)) return true;
    return false;
  }

  /** Forgets the addresses no longer active (at most once per activeForMs), so that the map holds only those seen lately. */
  private sweep(now: number): void {
    this.lastSweepMs = now;
    const since = now - this.options.activeForMs;
    for (const [key, client] of this.clients) if (!this.isActive(client, since)) this.clients.delete(key);
  }

  private start(key: string, client: Client): () => void {
    client.inProgress += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      client.inProgress -= 1;
      client.lastSeenMs = this.now();
      while (client.waiting.length > 0 && this.mayStart(key, client)) client.waiting.shift()!();
    };
  }
}
