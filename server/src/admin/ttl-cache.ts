// A map whose entries are used for a fixed time after they were loaded, by the caller's clock (the
// root's: tests move it). Concurrent misses of one key share one load; a failed load is not kept.
// The key and app caches (keys.ts, app-cache.ts) are built on it.

/** Beyond this many entries the map is emptied, so memory stays bounded. */
const MAX_ENTRIES = 10_000;

export class TtlCache<V> {
  private readonly entries = new Map<string, { value: Promise<V>; expires: number }>();

  constructor(
    private readonly clock: () => Date,
    private readonly ttlMs: number,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** The value of `key` while fresh, else what `load` gives (kept for the next `ttlMs`). */
  get(key: string, load: () => Promise<V>): Promise<V> {
    const now = this.clock().getTime();
    const hit = this.entries.get(key);
    if (hit && hit.expires > now) return hit.value;
    const entry = { value: load(), expires: now + this.ttlMs };
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(key, entry);
    entry.value.catch(() => {
      if (this.entries.get(key) === entry) this.entries.delete(key);
    });
    return entry.value;
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }
}
