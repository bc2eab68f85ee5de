import type { ReadModelStore } from '../readmodel/port';

const DDL = [
  'CREATE TABLE IF NOT EXISTS rate_limits (bucket TEXT NOT NULL, window_start BIGINT NOT NULL, hits INTEGER NOT NULL, PRIMARY KEY (bucket, window_start))',
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
