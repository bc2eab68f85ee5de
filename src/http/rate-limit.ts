import type { ReadModelStore } from '../readmodel/port';

const DDL = [
  'CREATE TABLE IF NOT EXISTS rate_limits (bucket TEXT NOT NULL, window_start BIGINT NOT NULL, hits INTEGER NOT NULL, PRIMARY KEY (bucket, window_start))',
  'CREATE TABLE IF NOT EXISTS rate_cooldowns (bucket TEXT PRIMARY KEY, until_at BIGINT NOT NULL)',
];

/**
 * Fixed-window counters in the gateway's database, so every instance sharing it counts the
 * same hits and a restart forgets nothing. One atomic upsert per hit.
 */
export class RateLimiter {
  private sweptAt = 0;

  private constructor(private readonly db: ReadModelStore) {}

  static async open(db: ReadModelStore): Promise<RateLimiter> {
    await db.migrate(DDL);
    return new RateLimiter(db);
  }

  /**
   * "Once per `seconds`": claims the bucket when its cooldown has passed (returns undefined) or
   * returns the seconds left. The claim is one atomic upsert, so concurrent callers on any
   * instance get exactly one pass.
   */
  async cooldown(bucket: string, seconds: number, now = Date.now()): Promise<number | undefined> {
    const t = Math.floor(now / 1000);
    const claimed = await this.db.query<{ until_at: number }>(
      `INSERT INTO rate_cooldowns (bucket, until_at) VALUES (?, ?)
       ON CONFLICT (bucket) DO UPDATE SET until_at = excluded.until_at WHERE rate_cooldowns.until_at <= ? RETURNING until_at`,
      [bucket, t + seconds, t],
    );
    if (claimed.length > 0) return undefined;
    const [row] = await this.db.query<{ until_at: number }>('SELECT until_at FROM rate_cooldowns WHERE bucket = ?', [bucket]);
    return Math.max(1, Number(row?.until_at ?? t + seconds) - t);
  }

  /** Gives a cooldown back (the request it admitted was refused for another reason). */
  async release(bucket: string): Promise<void> {
    await this.db.execute('DELETE FROM rate_cooldowns WHERE bucket = ?', [bucket]);
  }

  /** Counts a hit; returns the seconds until the window resets when over `limit`, else undefined. */
  async hit(bucket: string, limit: number, windowSeconds: number, now = Date.now()): Promise<number | undefined> {
    const windowStart = Math.floor(now / 1000 / windowSeconds) * windowSeconds;
    if (now - this.sweptAt > 60_000) {
      this.sweptAt = now;
      await this.db.execute('DELETE FROM rate_limits WHERE window_start < ?', [windowStart - 86_400]);
    }
    const [row] = await this.db.query<{ hits: number }>(
      `INSERT INTO rate_limits (bucket, window_start, hits) VALUES (?, ?, 1)
       ON CONFLICT (bucket, window_start) DO UPDATE SET hits = rate_limits.hits + 1 RETURNING hits`,
      [bucket, windowStart],
    );
    return Number(row!.hits) > limit ? Math.max(1, windowStart + windowSeconds - Math.floor(now / 1000)) : undefined;
  }
}
