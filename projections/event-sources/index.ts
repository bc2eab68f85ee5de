import type { EventSourceEvent, EventSourceTerms } from '../../src/domain/event-source/event-source';
import type { Projection } from '../../src/projections/projection';
import type { ReadModelStore } from '../../src/readmodel/port';

const ddl = (collate: string, big: string) => [
  `CREATE TABLE IF NOT EXISTS event_sources (
  account_id TEXT NOT NULL, event_source_id TEXT${collate} NOT NULL, owner TEXT NOT NULL, doc TEXT NOT NULL,
  events_total ${big} NOT NULL DEFAULT 0, events_matched ${big} NOT NULL DEFAULT 0, last_event_at TEXT,
  PRIMARY KEY (account_id, event_source_id))`,
  'CREATE INDEX IF NOT EXISTS event_sources_owner ON event_sources (owner, event_source_id)',
];

export interface EventSourceRow {
  account_id: string;
  event_source_id: string;
  seller_id: string;
  terms: EventSourceTerms;
  events_total: number;
  events_matched: number;
  last_event_at: string | null;
}

/** Each account's conversion event sources, with what they have received. */
export const eventSources: Projection = {
  name: 'event-sources',
  version: 1,
  tables: ['event_sources'],
  ddl: { sqlite: ddl('', 'INTEGER'), postgres: ddl(' COLLATE "C"', 'BIGINT') },
  handles: ['EventSourceSynced', 'EventSourceDeleted', 'ConversionsLogged'],
  evolve(stored) {
    const e = stored as unknown as EventSourceEvent;
    switch (e.type) {
      case 'EventSourceSynced': {
        const d = e.data;
        return [
          {
            sql: `INSERT INTO event_sources (account_id, event_source_id, owner, doc) VALUES (?, ?, ?, ?)
                  ON CONFLICT (account_id, event_source_id) DO UPDATE SET doc = excluded.doc`,
            params: [d.account_id, d.event_source_id, d.owner, JSON.stringify({ seller_id: d.seller_id, terms: d.terms })],
          },
        ];
      }
      case 'EventSourceDeleted':
        return [{ sql: 'DELETE FROM event_sources WHERE account_id = ? AND event_source_id = ?', params: [e.data.account_id, e.data.event_source_id] }];
      case 'ConversionsLogged': {
        const live = e.data.conversions.filter((c) => !c.test);
        return [
          {
            sql: 'UPDATE event_sources SET events_total = events_total + ?, events_matched = events_matched + ?, last_event_at = ? WHERE account_id = ? AND event_source_id = ?',
            params: [live.length, live.filter((c) => c.matched).length, e.data.at, e.data.account_id, e.data.event_source_id],
          },
        ];
      }
      default:
        return [];
    }
  },
};

type Raw = { account_id: string; event_source_id: string; doc: string; events_total: number | string; events_matched: number | string; last_event_at: string | null };
const row = (r: Raw): EventSourceRow => {
  const doc = JSON.parse(r.doc) as { seller_id: string; terms: EventSourceTerms };
  return { account_id: r.account_id, event_source_id: r.event_source_id, seller_id: doc.seller_id, terms: doc.terms, events_total: Number(r.events_total), events_matched: Number(r.events_matched), last_event_at: r.last_event_at };
};

export const eventSourceQueries = {
  list: async (rm: ReadModelStore, owner: string, accountId: string) =>
    (await rm.query<Raw>('SELECT account_id, event_source_id, doc, events_total, events_matched, last_event_at FROM event_sources WHERE owner = ? AND account_id = ? ORDER BY event_source_id', [owner, accountId])).map(row),
  /** A buyer's sources with this id, across its accounts. */
  byId: async (rm: ReadModelStore, owner: string, id: string) =>
    (await rm.query<Raw>('SELECT account_id, event_source_id, doc, events_total, events_matched, last_event_at FROM event_sources WHERE owner = ? AND event_source_id = ?', [owner, id])).map(row),
};
