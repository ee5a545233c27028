/**
 * A queue served in turn by key (a clinic, a receiver origin): each shift takes the oldest item of
 * the key served least recently, so one key's backlog waits behind one item of every other key,
 * never the other way round.
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

  /** The next item: the first key's oldest; that key goes to the back of the turn. */
  shift(): V | undefined {
    const first = this.byKey.entries().next();
    if (first.done) return undefined;
    const [key, items] = first.value;
    const value = items.shift()!;
    this.byKey.delete(key);
    if (items.length > 0) this.byKey.set(key, items);
    this.count -= 1;
    return value;
  }
}
