import type { ReadModelStore } from '../readmodel/port';
import { INSTANCE_ID } from '../shared/instance-id';

const DDL = [
  `CREATE TABLE IF NOT EXISTS webhook_attempt_claims (
     stream_id  TEXT PRIMARY KEY,
     version    BIGINT NOT NULL,
     holder     TEXT NOT NULL,
     expires_at BIGINT NOT NULL
   )`,
];

/**
 * Which instance makes a webhook delivery's next attempt, in the shared database: before it
 * POSTs, an instance claims the delivery at the stream version it is about to record against.
 * A claim succeeds when nobody claimed that attempt, or the claim has expired (its holder died
 * mid-attempt), or it is the holder's own; a claim for a later attempt supersedes the earlier
 * one at once (the previous attempt was recorded). So one attempt is made by one instance at a
 * time, and by another only after the first has stopped answering for `ttlMs`.
 */
export class AttemptClaims {
  private constructor(
    private readonly db: ReadModelStore,
    readonly holder: string,
    private readonly ttlMs: number,
  ) {}

  /** `ttlMs` must outlast an attempt (the POST's timeout and the append after it). */
  static async open(db: ReadModelStore, ttlMs: number, holder = INSTANCE_ID): Promise<AttemptClaims> {
    await db.migrate(DDL);
    return new AttemptClaims(db, holder, ttlMs);
  }

  /** True when this instance may make the attempt recorded against `version` of the stream. */
  async claim(streamId: string, version: number, now = Date.now()): Promise<boolean> {
    const rows = await this.db.query<{ holder: string }>(
      `INSERT INTO webhook_attempt_claims (stream_id, version, holder, expires_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (stream_id) DO UPDATE SET version = excluded.version, holder = excluded.holder, expires_at = excluded.expires_at
       WHERE webhook_attempt_claims.version < excluded.version
          OR (webhook_attempt_claims.version = excluded.version
              AND (webhook_attempt_claims.holder = excluded.holder OR webhook_attempt_claims.expires_at < ?))
       RETURNING holder`,
      [streamId, version, this.holder, now + this.ttlMs, now],
    );
    return rows.length === 1 && rows[0]!.holder === this.holder;
  }

  /** Forgets a delivery that will make no more attempts (delivered, or given up). */
  async finished(streamId: string): Promise<void> {
    await this.db.execute('DELETE FROM webhook_attempt_claims WHERE stream_id = ?', [streamId]);
  }
}
