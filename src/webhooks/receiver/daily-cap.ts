import type { ReadModelStore } from '../../readmodel/port';

const DDL = ['CREATE TABLE IF NOT EXISTS received_webhook_counts (scope TEXT NOT NULL, day TEXT NOT NULL, accepted BIGINT NOT NULL, PRIMARY KEY (scope, day))'];

/** The UTC day `at` falls in, as `YYYY-MM-DD` (the window a count belongs to). */
const dayOf = (at: Date) => at.toISOString().slice(0, 10);

/**
 * How many webhooks each dedup scope (see ReceivedEvent.dedup_scope) had accepted per UTC day, as
 * one counter row per scope and day in the gateway's database: shared by every instance, kept
 * across restarts, and read in the statement that raises it, never counted from the accepted rows.
 *
 * `take` is the whole check: one upsert that adds one only while the count is under the cap, so
 * concurrent webhooks (on any instance) can never take more than the cap between them; a webhook
 * that took a place and then turned out a duplicate (or failed) gives it back with `release`.
 */
export class DailyCap {
  private sweptDay = '';

  private constructor(private readonly db: ReadModelStore) {}

  static async open(db: ReadModelStore): Promise<DailyCap> {
    await db.migrate(DDL);
    return new DailyCap(db);
  }

  /** Takes one place in `scope`'s count for `at`'s day; false when `max` are taken (the webhook is refused). */
  async take(scope: string, at: Date, max: number): Promise<boolean> {
    const day = dayOf(at);
    if (day !== this.sweptDay) await this.sweep(day);
    // SQLite and PostgreSQL both count a DO UPDATE whose WHERE fails as no row changed.
    const changed = await this.db.execute(
      `INSERT INTO received_webhook_counts (scope, day, accepted) VALUES (?, ?, 1)
       ON CONFLICT (scope, day) DO UPDATE SET accepted = received_webhook_counts.accepted + 1 WHERE received_webhook_counts.accepted < ?`,
      [scope, day, max],
    );
    return changed === 1;
  }

  /** Gives back the place a webhook took (a duplicate, or one refused after taking it). */
  async release(scope: string, at: Date): Promise<void> {
    await this.db.execute('UPDATE received_webhook_counts SET accepted = accepted - 1 WHERE scope = ? AND day = ? AND accepted > 0', [scope, dayOf(at)]);
  }

  /** How many `scope` has taken on `at`'s day. */
  async count(scope: string, at: Date): Promise<number> {
    const [row] = await this.db.query<{ accepted: number | string }>('SELECT accepted FROM received_webhook_counts WHERE scope = ? AND day = ?', [scope, dayOf(at)]);
    return Number(row?.accepted ?? 0);
  }

  /** Seconds from `at` until its day's counts stop applying (the 429's Retry-After). */
  static secondsLeft(at: Date): number {
    const next = Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate() + 1);
    return Math.max(1, Math.ceil((next - at.getTime()) / 1000));
  }

  /** Once per day per instance: the counts of days before yesterday are of no use any more. */
  private async sweep(day: string): Promise<void> {
    this.sweptDay = day;
    const yesterday = dayOf(new Date(Date.parse(`${day}T00:00:00Z`) - 86_400_000));
    await this.db.execute('DELETE FROM received_webhook_counts WHERE day < ?', [yesterday]);
  }
}
