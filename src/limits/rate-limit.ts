import Redis from 'ioredis';
import { AppError } from '../shared/errors';
import type { ReadModelStore } from '../readmodel/port';

/**
 * Counters behind the registry's rate limits (spec §8), shared by every instance and kept over
 * restarts: in the gateway's database by default, in Redis when REDIS_URL is set.
 */
export interface RateLimiter {
  /**
   * "Once per `seconds`": claims the bucket when its cooldown has passed (returns undefined) or
   * returns the seconds left. Concurrent callers on any instance get exactly one pass.
   */
  cooldown(bucket: string, seconds: number, now?: number): Promise<number | undefined>;
  /** Gives a cooldown back (the request it admitted was refused for another reason). */
  release(bucket: string): Promise<void>;
  /** Counts a hit; returns the seconds until the window resets when over `limit`, else undefined. */
  hit(bucket: string, limit: number, windowSeconds: number, now?: number): Promise<number | undefined>;
  /**
   * Adds `points` (0 reads) to the bucket's current window of `windowSeconds` (windows start on
   * multiples of it since the epoch, so every instance means the same one) and returns the
   * window's total after the add: one atomic operation, whichever instances add concurrently.
   */
  add(bucket: string, points: number, windowSeconds: number, now?: number): Promise<number>;
  close(): Promise<void>;
}

export async function openRateLimiter(db: ReadModelStore, redis?: { url: string; keyPrefix: string }, onError?: (err: unknown) => void): Promise<RateLimiter> {
  return redis ? RedisRateLimiter.open(redis.url, redis.keyPrefix, onError) : SqlRateLimiter.open(db);
}

/** The start (epoch seconds) of the fixed window of `windowSeconds` that `now` (ms) falls in. */
export function windowStartOf(windowSeconds: number, now: number): number {
  return Math.floor(now / 1000 / windowSeconds) * windowSeconds;
}

/** Whole seconds (at least 1) until that window ends. */
export function secondsLeft(windowSeconds: number, now: number): number {
  return Math.max(1, windowStartOf(windowSeconds, now) + windowSeconds - Math.floor(now / 1000));
}

const DDL = [
  'CREATE TABLE IF NOT EXISTS rate_limits (bucket TEXT NOT NULL, window_start BIGINT NOT NULL, hits INTEGER NOT NULL, PRIMARY KEY (bucket, window_start))',
  'CREATE TABLE IF NOT EXISTS rate_cooldowns (bucket TEXT PRIMARY KEY, until_at BIGINT NOT NULL)',
];

/**
 * Fixed-window counters in the gateway's database, so every instance sharing it counts the
 * same hits and a restart forgets nothing. One atomic upsert per hit.
 */
export class SqlRateLimiter implements RateLimiter {
  private sweptAt = 0;

  private constructor(private readonly db: ReadModelStore) {}

  static async open(db: ReadModelStore): Promise<SqlRateLimiter> {
    await db.migrate(DDL);
    return new SqlRateLimiter(db);
  }

  /** The claim is one atomic conditional upsert. */
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

  async release(bucket: string): Promise<void> {
    await this.db.execute('DELETE FROM rate_cooldowns WHERE bucket = ?', [bucket]);
  }

  async hit(bucket: string, limit: number, windowSeconds: number, now = Date.now()): Promise<number | undefined> {
    return (await this.add(bucket, 1, windowSeconds, now)) > limit ? secondsLeft(windowSeconds, now) : undefined;
  }

  async add(bucket: string, points: number, windowSeconds: number, now = Date.now()): Promise<number> {
    const windowStart = windowStartOf(windowSeconds, now);
    if (now - this.sweptAt > 60_000) {
      this.sweptAt = now;
      await this.db.execute('DELETE FROM rate_limits WHERE window_start < ?', [windowStart - 86_400]);
    }
    const [row] = await this.db.query<{ hits: number }>(
      `INSERT INTO rate_limits (bucket, window_start, hits) VALUES (?, ?, ?)
       ON CONFLICT (bucket, window_start) DO UPDATE SET hits = rate_limits.hits + excluded.hits RETURNING hits`,
      [bucket, windowStart, points],
    );
    return Number(row!.hits);
  }

  async close(): Promise<void> {
    // The read-model store is closed by its owner.
  }
}

/**
 * The same limits in Redis: a cooldown is `SET NX EX` (the key's TTL is the wait), a window is
 * `INCR` on a key per window that expires with it. Each is a single atomic command, so instances
 * sharing the Redis share every budget.
 */
export class RedisRateLimiter implements RateLimiter {
  private constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  static async open(url: string, prefix: string, onError?: (err: unknown) => void): Promise<RedisRateLimiter> {
    const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2, enableOfflineQueue: true });
    // ioredis reconnects by itself; without a listener its errors would be unhandled events.
    redis.on('error', (err) => onError?.(err));
    await redis.connect();
    return new RedisRateLimiter(redis, prefix);
  }

  /** Cooldowns run on Redis's clock (the key's TTL); `now` is not used. */
  async cooldown(bucket: string, seconds: number): Promise<number | undefined> {
    const key = `${this.prefix}cooldown:${bucket}`;
    return this.call(async () => {
      if ((await this.redis.set(key, '1', 'EX', seconds, 'NX')) === 'OK') return undefined;
      const ttl = await this.redis.ttl(key);
      return Math.max(1, ttl > 0 ? ttl : seconds);
    });
  }

  async release(bucket: string): Promise<void> {
    await this.call(() => this.redis.del(`${this.prefix}cooldown:${bucket}`));
  }

  async hit(bucket: string, limit: number, windowSeconds: number, now = Date.now()): Promise<number | undefined> {
    return (await this.add(bucket, 1, windowSeconds, now)) > limit ? secondsLeft(windowSeconds, now) : undefined;
  }

  async add(bucket: string, points: number, windowSeconds: number, now = Date.now()): Promise<number> {
    const key = `${this.prefix}window:${bucket}:${windowStartOf(windowSeconds, now)}`;
    const [[, hits]] = (await this.call(() => this.redis.multi().incrby(key, points).expire(key, windowSeconds + 60).exec())) as [[Error | null, number], unknown];
    return Number(hits);
  }

  /** Redis down is the service's problem, not the caller's: a 503, never a 500. */
  private async call<T>(op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (err) {
      throw new AppError('UNAVAILABLE', `rate limiting is unavailable: ${(err as Error).message}`);
    }
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
