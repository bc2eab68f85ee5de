import type { EndpointEvent, ReceivedEvent } from '../../src/domain/receiver/receiver';
import type { Projection } from '../../src/projections/projection';
import type { ReadModelStore, Sql } from '../../src/readmodel/port';
import { detectFormat, extractData } from '../../src/domain/receiver/envelope';

/**
 * Two statuses can carry the same timestamp (an approval moves working → completed in one
 * instant); then the later stage wins: a terminal status over an interim one over submitted.
 */
function statusRank(status: string): number {
  if (status === 'submitted') return 0;
  if (status === 'working' || status === 'input-required' || status === 'auth-required') return 1;
  return 2;
}

const DDL = [
  `CREATE TABLE IF NOT EXISTS webhook_endpoints (
     endpoint_id TEXT PRIMARY KEY, owner TEXT NOT NULL, agent_id TEXT NOT NULL, sender_domain TEXT NOT NULL, mode TEXT NOT NULL, created_at TEXT NOT NULL)`,
  // One row per accepted webhook: (dedup_scope, dedup_key) is what the receiver deduplicated by
  // (the sender name is a claim any endpoint may make, so it keys nothing).
  `CREATE TABLE IF NOT EXISTS received_webhooks (
     dedup_scope TEXT NOT NULL, dedup_key TEXT NOT NULL, sender TEXT NOT NULL, owner TEXT NOT NULL, endpoint_id TEXT NOT NULL, task_id TEXT, task_type TEXT,
     status TEXT, notification_id TEXT, notification_type TEXT, sent_at TEXT, received_at TEXT NOT NULL, data TEXT,
     PRIMARY KEY (dedup_scope, dedup_key))`,
  'CREATE INDEX IF NOT EXISTS received_webhooks_owner ON received_webhooks (owner, received_at)',
  // The latest status the buyer knows per task: a stale status never overwrites a newer one.
  `CREATE TABLE IF NOT EXISTS received_task_status (
     owner TEXT NOT NULL, sender TEXT NOT NULL, task_id TEXT NOT NULL, task_type TEXT, status TEXT NOT NULL, status_rank INTEGER NOT NULL,
     sent_at TEXT NOT NULL, message TEXT, data TEXT, PRIMARY KEY (owner, sender, task_id))`,
  // State-shaped notifications (impairments) by notification_id: re-emissions apply once.
  `CREATE TABLE IF NOT EXISTS received_notifications (
     owner TEXT NOT NULL, sender TEXT NOT NULL, notification_id TEXT NOT NULL, sent_at TEXT NOT NULL, data TEXT,
     PRIMARY KEY (owner, sender, notification_id))`,
];

/**
 * The buyer's view of what senders told it: every accepted webhook, the latest status of each
 * task (ordered by the sender's `timestamp`, so an old retry arriving late changes nothing) and
 * the latest state of each persistent-channel notification.
 */
export const receivedWebhooks: Projection = {
  name: 'received-webhooks',
  // v4: rows keyed by the dedup scope (issue 45), not the sender name.
  version: 4,
  tables: ['webhook_endpoints', 'received_webhooks', 'received_task_status', 'received_notifications'],
  ddl: { sqlite: DDL, postgres: DDL },
  handles: ['WebhookEndpointRegistered', 'WebhookReceived'],
  evolve(stored): Sql[] {
    const e = stored as unknown as EndpointEvent | ReceivedEvent;
    if (e.type === 'WebhookEndpointRegistered') {
      const d = e.data;
      return [{ sql: 'INSERT INTO webhook_endpoints (endpoint_id, owner, agent_id, sender_domain, mode, created_at) VALUES (?, ?, ?, ?, ?, ?)', params: [d.endpoint_id, d.owner, d.agent_id, d.sender_domain, d.mode, d.at] }];
    }
    const d = e.data;
    // The body is the sender's: past the receiver's envelope checks any field may still have any
    // JSON type, and a row this projection cannot write would stall every projection behind it.
    // Columns take strings or null, never whatever came.
    const payload = JSON.parse(d.body) as Record<string, any>;
    const format = detectFormat(payload) ?? d.format;
    const data = extractData(payload, format);
    // An A2A Task names itself by `id`; a TaskStatusUpdateEvent its task by `taskId`.
    const taskId = text(format === 'mcp' ? payload.task_id : payload.kind === 'status-update' ? payload.taskId : payload.id);
    const status = text(format === 'mcp' ? payload.status : payload.status?.state);
    const sentAt = text(format === 'mcp' ? payload.timestamp : payload.status?.timestamp) ?? d.received_at;
    const taskType = text(payload.task_type ?? (data as { task_type?: unknown } | null)?.task_type);
    // A2A says it in its status message's text.
    const message = format === 'mcp' ? text(payload.message) : text((Array.isArray(payload.status?.message?.parts) ? (payload.status.message.parts as { kind?: unknown; text?: unknown }[]) : []).find((p) => p?.kind === 'text')?.text);
    const notificationId = text(payload.notification_id);
    const dataJson = data === null || data === undefined ? null : JSON.stringify(data);
    const out: Sql[] = [
      {
        sql: `INSERT INTO received_webhooks (dedup_scope, dedup_key, sender, owner, endpoint_id, task_id, task_type, status, notification_id, notification_type, sent_at, received_at, data)
              VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (dedup_scope, dedup_key) DO NOTHING`,
        params: [d.dedup_scope, d.dedup_key, d.sender, d.owner, d.endpoint_id, taskId, taskType, status, notificationId, text((data as { notification_type?: unknown } | null)?.notification_type), sentAt, d.received_at, dataJson],
      },
    ];
    if (notificationId) {
      out.push({
        sql: `INSERT INTO received_notifications (owner, sender, notification_id, sent_at, data) VALUES (?, ?, ?, ?, ?)
              ON CONFLICT (owner, sender, notification_id) DO UPDATE SET sent_at = excluded.sent_at, data = excluded.data WHERE excluded.sent_at > received_notifications.sent_at`,
        params: [d.owner, d.sender, notificationId, sentAt, dataJson],
      });
    } else if (taskId && status) {
      out.push({
        sql: `INSERT INTO received_task_status (owner, sender, task_id, task_type, status, status_rank, sent_at, message, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
              ON CONFLICT (owner, sender, task_id) DO UPDATE SET status = excluded.status, status_rank = excluded.status_rank, sent_at = excluded.sent_at, message = excluded.message, data = excluded.data
              WHERE excluded.sent_at > received_task_status.sent_at
                 OR (excluded.sent_at = received_task_status.sent_at AND excluded.status_rank > received_task_status.status_rank)`,
        params: [d.owner, d.sender, taskId, taskType, status, statusRank(status), sentAt, message, dataJson],
      });
    }
    return out;
  },
};

/** A string field of the sender's body, or null when it is absent, of another type, or holds U+0000 (PostgreSQL refuses it). */
const text = (v: unknown): string | null => (typeof v === 'string' && !v.includes('\u0000') ? v : null);

const parse = <T extends { data: string | null }>(r: T) => ({ ...r, data: r.data === null ? null : (JSON.parse(r.data) as unknown) });

export const receivedQueries = {
  endpoint: async (rm: ReadModelStore, endpointId: string) =>
    (await rm.query<{ endpoint_id: string; owner: string; agent_id: string; sender_domain: string; mode: string }>('SELECT * FROM webhook_endpoints WHERE endpoint_id = ?', [endpointId]))[0],
  list: async (rm: ReadModelStore, owner: string, opts: { taskId?: string; limit: number }) =>
    (
      await rm.query<{ sender: string; dedup_key: string; task_id: string | null; task_type: string | null; status: string | null; notification_id: string | null; notification_type: string | null; sent_at: string; received_at: string; data: string | null }>(
        `SELECT sender, dedup_key, task_id, task_type, status, notification_id, notification_type, sent_at, received_at, data FROM received_webhooks
         WHERE owner = ?${opts.taskId ? ' AND task_id = ?' : ''} ORDER BY received_at DESC, dedup_key LIMIT ?`,
        opts.taskId ? [owner, opts.taskId, opts.limit] : [owner, opts.limit],
      )
    ).map(parse),
  taskStatus: async (rm: ReadModelStore, owner: string, taskId: string) =>
    (await rm.query<{ sender: string; task_id: string; task_type: string | null; status: string; sent_at: string; message: string | null; data: string | null }>(
      'SELECT sender, task_id, task_type, status, sent_at, message, data FROM received_task_status WHERE owner = ? AND task_id = ?',
      [owner, taskId],
    )).map(parse),
  notification: async (rm: ReadModelStore, owner: string, notificationId: string) =>
    (await rm.query<{ sender: string; notification_id: string; sent_at: string; data: string | null }>(
      'SELECT sender, notification_id, sent_at, data FROM received_notifications WHERE owner = ? AND notification_id = ?',
      [owner, notificationId],
    )).map(parse),
  /** The owner's accepted webhooks with the endpoint each came to, newest first. */
  recent: async (rm: ReadModelStore, owner: string, opts: { taskId?: string; limit: number }) =>
    (
      await rm.query<{ dedup_scope: string; sender: string; dedup_key: string; endpoint_id: string; task_id: string | null; task_type: string | null; status: string | null; notification_id: string | null; notification_type: string | null; sent_at: string; received_at: string; data: string | null }>(
        `SELECT dedup_scope, sender, dedup_key, endpoint_id, task_id, task_type, status, notification_id, notification_type, sent_at, received_at, data FROM received_webhooks
         WHERE owner = ?${opts.taskId ? ' AND task_id = ?' : ''} ORDER BY received_at DESC, dedup_key LIMIT ?`,
        opts.taskId ? [owner, opts.taskId, opts.limit] : [owner, opts.limit],
      )
    ).map(parse),
};
