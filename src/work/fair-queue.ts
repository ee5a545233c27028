/**
 * A queue served in turn by key (a clinic, a receiver origin): each shift takes the oldest item of
 * the key served least recently, so one key's backlog waits behind one item of every other key,
 * never the other way round. A shift may rank the keys (by the work each has under way, say): it
 * then serves the lowest rank first, in turn among equals.
 */
export class FairQueue<V> {
  /** Keys with items, in the order they are served next (a Map keeps insertion order). */
  private readonly byKey = new Map<string, V[]>();
  private count = 0;

  get size(): number {
    return this.count;
  }

  push(key: string, value: V): void {
    const items = this.byKey.get(key);
    if (items) items.push(value);
    else this.byKey.set(key, [value]);
    this.count += 1;
  }

  /**
   * The next item: the oldest of the first key in turn (of those of the lowest `rank`, when given); that key goes to the
   * back of the turn. None when `admit` refuses the lowest rank.
   */
  shift(rank?: (key: string) => number, admit?: (rank: number) => boolean): V | undefined {
    let chosen: [string, V[]] | undefined;
    let lowest = Number.POSITIVE_INFINITY;
    for (const entry of this.byKey) {
      const value = rank ? rank(entry[0]) : 0;
      if (value < lowest) [chosen, lowest] = [entry, value];
      if (!rank) break;
    }
    if (!chosen || (admit && !admit(lowest))) return undefined;
    const [key, items] = chosen;
    const value = items.shift()!;
    this.byKey.delete(key);
    if (items.length > 0) this.byKey.set(key, items);
    this.count -= 1;
    return value;
  }
}
