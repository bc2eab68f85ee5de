import { LRUCache } from 'lru-cache';

/**
 * A read-through cache for read-model rows that every request needs and that rarely change (API
 * keys, the catalog). Entries live at most `ttlMs`, so a change another instance applied shows
 * within that window; `invalidate()` (called when this instance's projections apply a change)
 * makes it show at once. A load that raced an invalidation is returned but not kept.
 */
export class QueryCache {
  private readonly entries: LRUCache<string, { value: unknown }>;
  private generation = 0;

  constructor(options: { max?: number; ttlMs?: number } = {}) {
    this.entries = new LRUCache({ max: options.max ?? 10_000, ttl: options.ttlMs ?? 1000 });
  }

  /** Entries held now (for /metrics). */
  get size(): number {
    return this.entries.size;
  }

  async get<T>(key: string, load: () => Promise<T>): Promise<T> {
    const hit = this.entries.get(key);
    if (hit) return hit.value as T;
    const generation = this.generation;
    const value = await load();
    if (generation === this.generation) this.entries.set(key, { value });
    return value;
  }

  invalidate(): void {
    this.generation++;
    this.entries.clear();
  }
}
