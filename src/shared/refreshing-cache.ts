import { LRUCache } from 'lru-cache';

/** What a RefreshingCache knows about one key. */
export interface Refreshed<V> {
  /** The last value fetched, kept through failed refreshes for up to `maxStaleMs`. */
  value?: V;
  /** When `value` was fetched (0: never). */
  fetchedAt: number;
  /** When a fetch was last tried. */
  attemptedAt: number;
  /** Why the last attempt failed, if it did. */
  error?: string;
}

export interface RefreshingCacheOptions {
  /** A value this old is refreshed on its next use (and answers meanwhile). */
  ttlMs: number;
  /** A failed fetch, or a forced refresh, is not tried again sooner than this. */
  retryMs: number;
  /** Through an outage, a value this old is dropped rather than served. */
  maxStaleMs: number;
  max?: number;
  /** The clock (tests). */
  now?: () => number;
}

/**
 * Values fetched from somewhere slow or unreliable (an issuer's JWKS, a sender's brand.json and
 * keys), per key. A value is fetched once and cached for `ttlMs`; after that it keeps answering
 * while a refresh runs behind it, so a hanging origin stalls no one. A failed fetch keeps the
 * last value (up to `maxStaleMs` old) and is retried no sooner than `retryMs`, so an outage is
 * neither fatal nor hammered; `refresh()` (an unknown key id) fetches at once, at most once per
 * `retryMs`. One fetch per key at a time. Built on lru-cache's fetch (stale-while-revalidate).
 */
export class RefreshingCache<V> {
  private readonly entries: LRUCache<string, Refreshed<V>, () => Promise<V>>;
  private readonly now: () => number;

  constructor(private readonly options: RefreshingCacheOptions) {
    this.now = options.now ?? Date.now;
    this.entries = new LRUCache<string, Refreshed<V>, () => Promise<V>>({
      max: options.max ?? 1000,
      ttl: options.ttlMs,
      allowStale: true,
      noDeleteOnStaleGet: true,
      perf: { now: this.now },
      ttlResolution: 0, // read the clock on every check (the injected clock in tests moves in jumps)
      fetchMethod: async (_key, stale, { options: set, context: load }) => {
        const at = this.now();
        try {
          return { value: await load(), fetchedAt: at, attemptedAt: at };
        } catch (err) {
          // Kept for retryMs only: the next use after that tries again.
          set.ttl = this.options.retryMs;
          const keep = stale?.value !== undefined && at - stale.fetchedAt <= this.options.maxStaleMs;
          return { ...(keep ? { value: stale.value } : {}), fetchedAt: keep ? stale.fetchedAt : 0, attemptedAt: at, error: (err as Error).message };
        }
      },
    });
  }

  /**
   * The entry for `key`: fetched (and awaited) when there is no value yet; refreshed behind the
   * caller when its value is older than `ttlMs`.
   */
  async get(key: string, load: () => Promise<V>): Promise<Refreshed<V>> {
    const entry = (await this.entries.fetch(key, { context: load }))!;
    const now = this.now();
    // A stale failure has nothing to serve meanwhile, and a value past maxStaleMs (an idle key)
    // must not be served at all: wait for the refresh the fetch just started.
    if (entry.value === undefined && now - entry.attemptedAt >= this.options.retryMs) return this.force(key, load);
    if (entry.value !== undefined && now - entry.fetchedAt > this.options.maxStaleMs) return this.force(key, load);
    return entry;
  }

  /** Fetches again now and waits for it, unless an attempt was made within `retryMs`. */
  async refresh(key: string, load: () => Promise<V>): Promise<Refreshed<V>> {
    const current = this.entries.get(key, { allowStale: true });
    if (current && this.now() - current.attemptedAt < this.options.retryMs) return current;
    return this.force(key, load);
  }

  private async force(key: string, load: () => Promise<V>): Promise<Refreshed<V>> {
    return (await this.entries.fetch(key, { context: load, forceRefresh: true, allowStale: false }))!;
  }
}
