/**
 * A map that keeps at most `capacity` entries, dropping the one used longest ago (a Map keeps its
 * keys in insertion order: a hit moves its key to the end). Imported by the worker thread, so no
 * parameter properties (Node runs it with its types stripped).
 */
export class BoundedCache<K, V> {
  private readonly entries = new Map<K, V>();
  private readonly capacity: number;

  constructor(capacity: number) {
    this.capacity = capacity;
  }

  get(key: K): V | undefined {
    const value = this.entries.get(key);
    if (value !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, value);
    }
    return value;
  }

  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
  }
}
