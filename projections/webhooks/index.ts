import type { WebhookEvent } from '../../src/domain/webhook/webhook';
import type { Projection } from '../../src/projections/projection';
import type { ReadModelStore, Sql } from '../../src/readmodel/port';

const DDL = [
  `CREATE TABLE IF NOT EXISTS webhook_activity (
     idempotency_key TEXT NOT NULL, attempt INTEGER NOT NULL, stream_id TEXT NOT NULL, owner TEXT NOT NULL, media_buy_id TEXT, task_id TEXT,
     notification_type TEXT NOT NULL, url TEXT NOT NULL, status TEXT NOT NULL, http_status_code INTEGER, error_message TEXT,
     fired_at TEXT NOT NULL, completed_at TEXT, response_time_ms INTEGER, payload_size_bytes INTEGER NOT NULL, sequence_number INTEGER,
     PRIMARY KEY (idempotency_key, attempt))`,
  // The delivery worker's queue: attempts still `pending`, by the time they are due. Partial, so
  // an attempt that ends leaves the index instead of moving within it.
  "CREATE INDEX IF NOT EXISTS webhook_activity_pending ON webhook_activity (fired_at) WHERE status = 'pending'",
  'CREATE INDEX IF NOT EXISTS webhook_activity_by_buy ON webhook_activity (owner, media_buy_id)',
];

/** What `webhook_activity` may show of a URL: no query, no fragment (they often carry tokens). */
export function redactUrl(url: string): string {
  return url.replace(/[?#].*$/s, '');
}

/**
 * One row per webhook attempt (AdCP webhook-activity records for
 * `get_media_buys(include_webhook_activity)`). The next attempt of a fire is recorded as a
 * `pending` row dated when it is due, which makes the same table the delivery worker's queue.
 */
export const webhooks: Projection = {
  name: 'webhooks',
  // 5: logs from before WebhookScheduled v2 now read `scheduled` / `final` for their report
  // webhooks (upcast from `report_type`), not `delivery_report`: rebuilt once to correct those rows.
  version: 5,
  tables: ['webhook_activity'],
  ddl: { sqlite: DDL, postgres: DDL },
  handles: ['WebhookScheduled', 'WebhookAttempted'],
  evolve(stored): Sql[] {
    const e = stored as unknown as WebhookEvent;
    switch (e.type) {
      case 'WebhookScheduled': {
        const d = e.data;
        // Activity names a delivery report by its AdCP notification_type (scheduled, final, …).
        const kind = d.adcp_notification_type ?? d.notification_type;
        return [
          {
            sql: `INSERT INTO webhook_activity (idempotency_key, attempt, stream_id, owner, media_buy_id, task_id, notification_type, url, status, fired_at, payload_size_bytes, sequence_number)
                  VALUES (?, 1, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)`,
            params: [d.idempotency_key, stored.streamId, d.owner, d.media_buy_id ?? null, d.task_id ?? null, kind, redactUrl(d.url), d.scheduled_at, Buffer.byteLength(d.body), d.sequence_number ?? null],
          },
        ];
      }
      case 'WebhookAttempted': {
        const d = e.data;
        const out: Sql[] = [
          {
            sql: `UPDATE webhook_activity SET status = ?, http_status_code = ?, error_message = ?, fired_at = ?, completed_at = ?, response_time_ms = ?
                  WHERE idempotency_key = ? AND attempt = ?`,
            params: [d.status, d.http_status_code, d.error_message, d.started_at, d.at, d.response_time_ms, d.idempotency_key, d.attempt],
          },
        ];
        if (d.next_attempt_at) {
          out.push({
            sql: `INSERT INTO webhook_activity (idempotency_key, attempt, stream_id, owner, media_buy_id, task_id, notification_type, url, status, fired_at, payload_size_bytes, sequence_number)
                  SELECT idempotency_key, ?, stream_id, owner, media_buy_id, task_id, notification_type, url, 'pending', ?, payload_size_bytes, sequence_number
                  FROM webhook_activity WHERE idempotency_key = ? AND attempt = ?`,
            params: [d.attempt + 1, d.next_attempt_at, d.idempotency_key, d.attempt],
          });
        }
        return out;
      }
      default:
        return [];
    }
  },
};

export interface WebhookActivityRow {
  idempotency_key: string;
  attempt: number;
  media_buy_id: string | null;
  task_id: string | null;
  notification_type: string;
  url: string;
  status: string;
  http_status_code: number | null;
  error_message: string | null;
  fired_at: string;
  completed_at: string | null;
  response_time_ms: number | null;
  payload_size_bytes: number;
  sequence_number: number | null;
}

export const webhookQueries = {
  /** The delivery queue's size for /metrics: attempts pending, and of those, due at `now`. */
  queueDepth: async (rm: ReadModelStore, now: string) => {
    const [row] = await rm.query<{ pending: number | string; due: number | string | null }>(
      "SELECT COUNT(*) AS pending, SUM(CASE WHEN fired_at <= ? THEN 1 ELSE 0 END) AS due FROM webhook_activity WHERE status = 'pending'",
      [now],
    );
    return { pending: Number(row?.pending ?? 0), due: Number(row?.due ?? 0) };
  },
  /** Fires whose next attempt is due at `now` (ISO strings compare in time order). */
  due: (rm: ReadModelStore, now: string, limit: number) =>
    rm.query<{ stream_id: string }>("SELECT stream_id FROM webhook_activity WHERE status = 'pending' AND fired_at <= ? ORDER BY fired_at LIMIT ?", [now, limit]),
  /** The caller's own fires about these buys, most recent first (AdCP: one record per attempt). */
  activityForBuys: async (rm: ReadModelStore, owner: string, mediaBuyIds: string[], limit: number) => {
    if (mediaBuyIds.length === 0) return [];
    return rm.query<WebhookActivityRow>(
      `SELECT idempotency_key, attempt, media_buy_id, task_id, notification_type, url, status, http_status_code, error_message, fired_at, completed_at, response_time_ms, payload_size_bytes, sequence_number
       FROM webhook_activity WHERE owner = ? AND media_buy_id IN (${mediaBuyIds.map(() => '?').join(', ')})
       ORDER BY fired_at DESC, attempt DESC LIMIT ?`,
      [owner, ...mediaBuyIds, limit * mediaBuyIds.length],
    );
  },
  /**
   * The attempts of the fires about these buys of one owner (the index's order), newest fire first,
   * at most `rows` attempts per buy asked for. Callers have already checked the caller may read them.
   */
  attemptsOfBuys: async (rm: ReadModelStore, owner: string, mediaBuyIds: readonly string[], rows: number) => {
    if (mediaBuyIds.length === 0) return [];
    return rm.query<WebhookActivityRow>(
      `SELECT idempotency_key, attempt, media_buy_id, task_id, notification_type, url, status, http_status_code, error_message, fired_at, completed_at, response_time_ms, payload_size_bytes, sequence_number
       FROM webhook_activity WHERE owner = ? AND media_buy_id IN (${mediaBuyIds.map(() => '?').join(', ')})
       ORDER BY fired_at DESC, idempotency_key, attempt LIMIT ?`,
      [owner, ...mediaBuyIds, rows * mediaBuyIds.length],
    );
  },
};
