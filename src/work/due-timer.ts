/**
 * One timer for the earliest moment work falls due in this process: a later moment never moves it,
 * an earlier one replaces it. It does not keep the process alive.
 */
export class DueTimer {
  private dueAt = Infinity;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly onDue: () => void) {}

  /** Work falls due at `at` (epoch ms). */
  at(at: number): void {
    if (at >= this.dueAt) return;
    this.dueAt = at;
    clearTimeout(this.timer);
    this.timer = setTimeout(
      () => {
        this.dueAt = Infinity;
        this.onDue();
      },
      Math.max(0, at - Date.now()),
    );
    this.timer.unref();
  }

  /** A moment is set and has not come yet. */
  get pending(): boolean {
    return this.dueAt !== Infinity;
  }

  clear(): void {
    clearTimeout(this.timer);
    this.dueAt = Infinity;
  }
}
