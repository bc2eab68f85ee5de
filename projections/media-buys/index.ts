import type { MediaBuyEvent, MediaBuyTerms } from '../../src/domain/media-buy/media-buy';
import type { TaskEvent } from '../../src/domain/task/task';
import type { Projection } from '../../src/projections/projection';
import type { ReadModelStore, Sql } from '../../src/readmodel/port';

// Buy ids order bytewise in both engines (PostgreSQL's default collation may be linguistic), so
// pages, cursors and the per-buy cache (which sorts in JS) agree: SQLite's default is bytewise.
const ddl = (big: string, bytewise: string) => [
  `CREATE TABLE IF NOT EXISTS media_buys (
     media_buy_id TEXT${bytewise} PRIMARY KEY, owner TEXT NOT NULL, buyer_ref TEXT NOT NULL, status TEXT NOT NULL,
     task_id TEXT, revision INTEGER NOT NULL, terms TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, position ${big} NOT NULL,
     forced_status TEXT, activated INTEGER NOT NULL DEFAULT 0, confirmed_at TEXT, last_position ${big} NOT NULL)`,
  'CREATE INDEX IF NOT EXISTS media_buys_owner ON media_buys (owner, created_at)',
  `CREATE TABLE IF NOT EXISTS tasks (
     task_id TEXT PRIMARY KEY, owner TEXT NOT NULL, task_type TEXT NOT NULL, status TEXT NOT NULL, resource_id TEXT NOT NULL,
     message TEXT NOT NULL, result TEXT, push_notification_config TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
     last_position ${big} NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS task_history (
     task_id TEXT NOT NULL, position ${big} NOT NULL, status TEXT NOT NULL, message TEXT NOT NULL, actor TEXT NOT NULL, at TEXT NOT NULL,
     PRIMARY KEY (task_id, position))`,
];

/**
 * Read models never hold callback secrets: legacy HMAC / Bearer credentials stay in the event
 * log, where the delivery worker reads them, and are dropped from every row here.
 */
function withoutCredentials<T extends { push_notification_config?: Record<string, unknown>; reporting_webhook?: Record<string, unknown> }>(terms: T): T {
  // A push config's `token` (AdCP 3.1, echoed in its webhooks) is a credential too.
  const strip = (c?: Record<string, unknown>) => {
    if (!c) return c;
    const { token: _token, ...config } = c;
    if (!config.authentication) return config;
    const { credentials: _secret, ...auth } = config.authentication as Record<string, unknown>;
    return { ...config, authentication: auth };
  };
  return {
    ...terms,
    ...(terms.push_notification_config ? { push_notification_config: strip(terms.push_notification_config) } : {}),
    ...(terms.reporting_webhook ? { reporting_webhook: strip(terms.reporting_webhook) } : {}),
  };
}

/** An update of a buy by the event at `position`: applied once (the row moves past it), a new revision. */
function buyUpdate(set: string, params: unknown[], mediaBuyId: string, position: number): Sql {
  return {
    sql: `UPDATE media_buys SET ${set}, revision = revision + 1, last_position = ? WHERE media_buy_id = ? AND last_position < ?`,
    params: [...params, position, mediaBuyId, position],
  };
}

/**
 * Media buys and the asynchronous tasks that gate them, as buyers and operators read them. Inline
 * (see Projection.consistency): a create's answer and the buyer's next read come from these rows,
 * so on PostgreSQL they commit with the append. Every statement applies an event once, however
 * often it is run: inserts do nothing when the row exists, updates only move a row whose
 * `last_position` is behind the event (a buy's events are its stream's, a task's its own, so
 * they commit in position order).
 */
export const mediaBuys: Projection = {
  name: 'media-buys',
  // 7: confirmed_at (when the seller confirmed the buy). 8: push configs keep no `token` (AdCP
  // 3.1's webhook token, echoed to the buyer, is a credential like `authentication.credentials`).
  // 9: inline: statements idempotent per event (last_position).
  version: 9,
  consistency: 'inline',
  tables: ['media_buys', 'tasks', 'task_history'],
  ddl: { sqlite: ddl('INTEGER', ''), postgres: ddl('BIGINT', ' COLLATE "C"') },
  handles: ['MediaBuyCreated', 'MediaBuyApproved', 'MediaBuyRejected', 'MediaBuyUpdated', 'MediaBuyStatusChanged', 'TaskSubmitted', 'TaskStatusChanged'],
  evolve(stored): Sql[] {
    const e = stored as unknown as MediaBuyEvent | TaskEvent;
    switch (e.type) {
      case 'MediaBuyCreated': {
        const { status, task_id, at, ...terms } = e.data;
        return [
          {
            sql: `INSERT INTO media_buys (media_buy_id, owner, buyer_ref, status, task_id, revision, terms, created_at, updated_at, position, confirmed_at, last_position)
                  VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?) ON CONFLICT (media_buy_id) DO NOTHING`,
            // Confirmed at once (active), or later by the seller's approval.
            params: [terms.media_buy_id, terms.owner, terms.buyer_ref, status, task_id ?? null, JSON.stringify(withoutCredentials(terms)), at, at, stored.position, status === 'active' ? at : null, stored.position],
          },
        ];
      }
      case 'MediaBuyApproved':
        return [buyUpdate("status = 'active', forced_status = NULL, updated_at = ?, confirmed_at = ?", [e.data.at, e.data.at], e.data.media_buy_id, stored.position)];
      case 'MediaBuyRejected':
        return [buyUpdate("status = 'rejected', forced_status = NULL, updated_at = ?", [e.data.at], e.data.media_buy_id, stored.position)];
      case 'MediaBuyUpdated':
        return [buyUpdate('terms = ?, updated_at = ?', [JSON.stringify(withoutCredentials(e.data.terms)), e.data.at], e.data.media_buy_id, stored.position)];
      case 'MediaBuyStatusChanged':
        // A real transition ends whatever the sandbox controller had forced.
        return [buyUpdate(`status = ?, forced_status = ?, updated_at = ?${e.data.status === 'paused' ? ', activated = 1' : ''}`, [e.data.status, e.data.forced_status ?? null, e.data.at], e.data.media_buy_id, stored.position)];
      case 'TaskSubmitted': {
        const d = e.data;
        return [
          {
            sql: `INSERT INTO tasks (task_id, owner, task_type, status, resource_id, message, push_notification_config, created_at, updated_at, last_position)
                  VALUES (?, ?, ?, 'submitted', ?, ?, ?, ?, ?, ?) ON CONFLICT (task_id) DO NOTHING`,
            params: [d.task_id, d.owner, d.task_type, d.resource_id, d.message, d.push_notification_config ? JSON.stringify(withoutCredentials({ push_notification_config: d.push_notification_config }).push_notification_config) : null, d.at, d.at, stored.position],
          },
          { sql: "INSERT INTO task_history (task_id, position, status, message, actor, at) VALUES (?, ?, 'submitted', ?, 'system', ?) ON CONFLICT (task_id, position) DO NOTHING", params: [d.task_id, stored.position, d.message, d.at] },
        ];
      }
      case 'TaskStatusChanged': {
        const d = e.data;
        return [
          {
            sql: 'UPDATE tasks SET status = ?, message = ?, result = ?, updated_at = ?, last_position = ? WHERE task_id = ? AND last_position < ?',
            params: [d.status, d.message, d.result ? JSON.stringify(d.result) : null, d.at, stored.position, d.task_id, stored.position],
          },
          { sql: 'INSERT INTO task_history (task_id, position, status, message, actor, at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (task_id, position) DO NOTHING', params: [d.task_id, stored.position, d.status, d.message, d.actor, d.at] },
        ];
      }
      default:
        return [];
    }
  },
};

export interface MediaBuyRow {
  media_buy_id: string;
  owner: string;
  buyer_ref: string;
  status: string;
  task_id: string | null;
  revision: number;
  terms: MediaBuyTerms;
  created_at: string;
  updated_at: string;
  /** The AdCP 3.0 status the sandbox controller forced, until the next real transition. */
  forced_status?: string | null;
  /** 1 once the buy was paused: it has left AdCP 3.0's pre-flight states for good. */
  activated?: number;
  /** When the seller confirmed the buy: its creation when confirmed at once, else its approval; null while it waits (or rejected). */
  confirmed_at?: string | null;
}

/** What a task list may be narrowed by (each absent field: no narrowing). */
export interface TaskFilter {
  statuses?: readonly string[];
  types?: readonly string[];
  /** Stored task ids (the owner-scoped form included). */
  taskIds?: readonly string[];
  createdAfter?: string;
  createdBefore?: string;
  updatedAfter?: string;
  updatedBefore?: string;
  hasWebhook?: boolean;
  /** Text the task's resource id (a media buy's id, the buyer's for creatives) contains. */
  resourceContains?: string;
}

/** The columns a task list sorts by (then by task_id, the same way, so the order is total). */
export interface TaskSort {
  column: 'created_at' | 'updated_at' | 'status' | 'task_type';
  direction: 'asc' | 'desc';
}

export interface TaskRow {
  task_id: string;
  owner: string;
  task_type: string;
  status: string;
  resource_id: string;
  message: string;
  result: Record<string, unknown> | null;
  /** Its webhook registration (credentials removed), JSON; null without one. */
  push_notification_config: string | null;
  created_at: string;
  updated_at: string;
  history: { status: string; message: string; at: string }[];
}

const parseBuy = (r: Omit<MediaBuyRow, 'terms'> & { terms: string }): MediaBuyRow => ({ ...r, terms: JSON.parse(r.terms) as MediaBuyTerms });

export const mediaBuyQueries = {
  /** Owner-scoped: another buyer's id reads as absent (404), never as forbidden. */
  byId: async (rm: ReadModelStore, owner: string, id: string) =>
    (await rm.query<Omit<MediaBuyRow, 'terms'> & { terms: string }>('SELECT * FROM media_buys WHERE media_buy_id = ? AND owner = ?', [id, owner])).map(parseBuy)[0],
  /** The owner's buys (every buyer's when `owner` is null: an operator's view), by id after `after`. */
  list: async (rm: ReadModelStore, owner: string | null, opts: { ids?: string[]; statuses?: string[]; limit: number; after?: string }) => {
    const where = owner === null ? ['1 = 1'] : ['owner = ?'];
    const params: unknown[] = owner === null ? [] : [owner];
    if (opts.ids?.length) {
      where.push(`media_buy_id IN (${opts.ids.map(() => '?').join(', ')})`);
      params.push(...opts.ids);
    }
    if (opts.statuses?.length) {
      where.push(`status IN (${opts.statuses.map(() => '?').join(', ')})`);
      params.push(...opts.statuses);
    }
    if (opts.after) {
      where.push('media_buy_id > ?');
      params.push(opts.after);
    }
    params.push(opts.limit);
    return (await rm.query<Omit<MediaBuyRow, 'terms'> & { terms: string }>(`SELECT * FROM media_buys WHERE ${where.join(' AND ')} ORDER BY media_buy_id LIMIT ?`, params)).map(parseBuy);
  },
  /** Several buys by id, whoever owns them (the caller decides who may see which). */
  byIds: async (rm: ReadModelStore, ids: readonly string[]) =>
    ids.length === 0 ? [] : (await rm.query<Omit<MediaBuyRow, 'terms'> & { terms: string }>(`SELECT * FROM media_buys WHERE media_buy_id IN (${ids.map(() => '?').join(', ')})`, [...ids])).map(parseBuy),
  /** Several tasks by id with their histories, in two queries. */
  tasksByIds: async (rm: ReadModelStore, ids: readonly string[]): Promise<TaskRow[]> => {
    if (ids.length === 0) return [];
    const marks = ids.map(() => '?').join(', ');
    const rows = await rm.query<Omit<TaskRow, 'history' | 'result'> & { result: string | null }>(
      `SELECT task_id, owner, task_type, status, resource_id, message, result, push_notification_config, created_at, updated_at FROM tasks WHERE task_id IN (${marks})`,
      [...ids],
    );
    const history = await rm.query<{ task_id: string; status: string; message: string; at: string }>(`SELECT task_id, status, message, at FROM task_history WHERE task_id IN (${marks}) ORDER BY task_id, position`, [...ids]);
    return rows.map((row) => ({
      ...row,
      result: row.result ? (JSON.parse(row.result) as Record<string, unknown>) : null,
      history: history.filter((h) => h.task_id === row.task_id).map(({ status, message, at }) => ({ status, message, at })),
    }));
  },
  /** Every buyer's tasks in these statuses, oldest first (the seller's inbox), at most `limit`. */
  waitingTasks: async (rm: ReadModelStore, statuses: readonly string[], limit: number): Promise<TaskRow[]> => {
    const ids = await rm.query<{ task_id: string }>(
      `SELECT task_id FROM tasks WHERE status IN (${statuses.map(() => '?').join(', ')}) ORDER BY created_at, task_id LIMIT ${Math.floor(limit)}`,
      [...statuses],
    );
    const rows = new Map((await mediaBuyQueries.tasksByIds(rm, ids.map((r) => r.task_id))).map((t) => [t.task_id, t]));
    return ids.map((r) => rows.get(r.task_id)).filter((t): t is TaskRow => t !== undefined);
  },
  /**
   * Buys the ad server delivers (active) or keeps the clock for (paused), across buyers, read a
   * page at a time by id: a long-lived seller has hundreds of thousands, which must never sit in
   * memory at once (the soak's gateway died of them at ~200,000 buys).
   */
  live: async function* (rm: ReadModelStore, pageSize = 500): AsyncGenerator<MediaBuyRow> {
    for (let after = ''; ; ) {
      const page = await rm.query<Omit<MediaBuyRow, 'terms'> & { terms: string }>(
        `SELECT * FROM media_buys WHERE status IN ('active', 'paused') AND media_buy_id > ? ORDER BY media_buy_id LIMIT ${Math.floor(pageSize)}`,
        [after],
      );
      for (const row of page) yield parseBuy(row);
      if (page.length < pageSize) return;
      after = page.at(-1)!.media_buy_id;
    }
  },
  /**
   * The owner's tasks matching `f`, in `sort` order (newest first unless told), after a keyset
   * cursor (the last row's sort value and task_id), at most `limit`; `total` counts every match.
   */
  tasks: async (rm: ReadModelStore, owner: string, f: TaskFilter & { sort?: TaskSort; after?: { value: string; task_id: string }; limit: number }) => {
    const where = ['owner = ?'];
    const params: unknown[] = [owner];
    const oneOf = (column: string, values: readonly string[] | undefined) => {
      if (!values?.length) return;
      where.push(`${column} IN (${values.map(() => '?').join(', ')})`);
      params.push(...values);
    };
    const compare = (column: string, op: '<' | '>', value: string | undefined) => {
      if (value === undefined) return;
      where.push(`${column} ${op} ?`);
      params.push(value);
    };
    oneOf('status', f.statuses);
    oneOf('task_type', f.types);
    oneOf('task_id', f.taskIds);
    compare('created_at', '>', f.createdAfter);
    compare('created_at', '<', f.createdBefore);
    compare('updated_at', '>', f.updatedAfter);
    compare('updated_at', '<', f.updatedBefore);
    if (f.hasWebhook !== undefined) where.push(f.hasWebhook ? 'push_notification_config IS NOT NULL' : 'push_notification_config IS NULL');
    if (f.resourceContains !== undefined) {
      // A substring, never a pattern: LIKE's wildcards in the text are matched literally.
      where.push("resource_id LIKE ? ESCAPE '\\'");
      params.push(`%${f.resourceContains.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
    }
    // The total counts every task the filter matches; the cursor only pages through them.
    const [{ n }] = await rm.query<{ n: number | string }>(`SELECT COUNT(*) AS n FROM tasks WHERE ${where.join(' AND ')}`, params);
    const column = f.sort?.column ?? 'created_at';
    const desc = f.sort?.direction !== 'asc';
    if (f.after) {
      const op = desc ? '<' : '>';
      where.push(`(${column} ${op} ? OR (${column} = ? AND task_id ${op} ?))`);
      params.push(f.after.value, f.after.value, f.after.task_id);
    }
    const dir = desc ? 'DESC' : 'ASC';
    const rows = await rm.query<Omit<TaskRow, 'history' | 'result'>>(
      `SELECT task_id, owner, task_type, status, resource_id, message, push_notification_config, created_at, updated_at FROM tasks WHERE ${where.join(' AND ')} ORDER BY ${column} ${dir}, task_id ${dir} LIMIT ${Math.floor(f.limit)}`,
      params,
    );
    return { rows, total: Number(n) };
  },
  task: async (rm: ReadModelStore, taskId: string, owner?: string): Promise<TaskRow | undefined> => {
    const rows = await rm.query<Omit<TaskRow, 'history' | 'result'> & { result: string | null }>(
      `SELECT task_id, owner, task_type, status, resource_id, message, result, push_notification_config, created_at, updated_at FROM tasks WHERE task_id = ?${owner ? ' AND owner = ?' : ''}`,
      owner ? [taskId, owner] : [taskId],
    );
    const row = rows[0];
    if (!row) return undefined;
    const history = await rm.query<{ status: string; message: string; at: string }>('SELECT status, message, at FROM task_history WHERE task_id = ? ORDER BY position', [taskId]);
    return { ...row, result: row.result ? (JSON.parse(row.result) as Record<string, unknown>) : null, history };
  },
};
