/**
 * Counts failed internal credentials per (internal account, client address): once `maxFailures`
 * failures fall within `windowMs` of the first one, that pair is refused until the window ends,
 * whatever it sends, so passwords cannot be guessed at request speed. Kept in memory, per process;
 * at most `maxKeys` pairs (expired ones go first, then the oldest).
 */
export class FailureLimit {
  private readonly windows = new Map<string, { failures: number; endsAt: number }>();

  constructor(
    private readonly maxFailures: number,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
    private readonly maxKeys = 10_000,
  ) {}

  isRefused(key: string): boolean {
    return (this.current(key)?.failures ?? 0) >= this.maxFailures;
  }

  recordFailure(key: string): void {
    const window = this.current(key);
    if (window) {
      window.failures += 1;
      return;
    }
    if (this.windows.size >= this.maxKeys) this.makeRoom();
    this.windows.set(key, { failures: 1, endsAt: this.now() + this.windowMs });
  }

  private current(key: string): { failures: number; endsAt: number } | undefined {
    const window = this.windows.get(key);
    if (window && window.endsAt <= this.now()) {
      this.windows.delete(key);
      return undefined;
    }
    return window;
  }

  private makeRoom(): void {
    const now = this.now();
    for (const [key, window] of this.windows) if (window.endsAt <= now) this.windows.delete(key);
    // Insertion order: the first key is the oldest window.
    if (this.windows.size >= this.maxKeys) this.windows.delete(this.windows.keys().next().value!);
  }
}
