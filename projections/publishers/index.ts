import type { RevalidationResult } from '../../src/domain/adagents/revalidation';
import type { PublisherEvent } from '../../src/domain/adagents/events';
import type { Projection } from '../../src/projections/projection';
import type { ReadModelStore, Sql } from '../../src/readmodel/port';

const DDL = [
  `CREATE TABLE IF NOT EXISTS publishers (
     domain TEXT PRIMARY KEY, adagents_valid INTEGER NOT NULL, checked_at TEXT NOT NULL, last_result TEXT NOT NULL, manifest TEXT,
     discovery_method TEXT, authority TEXT, manager_domain TEXT)`,
  `CREATE TABLE IF NOT EXISTS authorized_agents (
     publisher_domain TEXT NOT NULL, agent_url TEXT NOT NULL, authorized_for TEXT, authorization_type TEXT, doc TEXT NOT NULL,
     PRIMARY KEY (publisher_domain, agent_url))`,
  'CREATE INDEX IF NOT EXISTS authorized_agents_agent ON authorized_agents (agent_url)',
  `CREATE TABLE IF NOT EXISTS publisher_properties (
     publisher_domain TEXT NOT NULL, ordinal INTEGER NOT NULL, property_id TEXT, property_type TEXT, name TEXT, owner_domain TEXT, doc TEXT NOT NULL,
     PRIMARY KEY (publisher_domain, ordinal))`,
];

/**
 * Publishers' adagents.json verdicts, the agents they authorize and the properties they declare.
 * A transient failure only records the latest check; a valid file replaces authorizations and
 * properties; an authoritative negative withdraws them.
 */
export const publishers: Projection = {
  name: 'publishers',
  version: 2,
  tables: ['publishers', 'authorized_agents', 'publisher_properties'],
  ddl: { sqlite: DDL, postgres: DDL },
  handles: ['AdagentsRevalidated'],
  evolve(stored): Sql[] {
    const e = stored as unknown as PublisherEvent;
    if (e.type !== 'AdagentsRevalidated') return [];
    const { domain, result, manifest, transient } = e.data;
    if (transient) {
      return [
        {
          sql: `INSERT INTO publishers (domain, adagents_valid, checked_at, last_result) VALUES (?, 0, ?, ?)
                ON CONFLICT (domain) DO UPDATE SET checked_at = excluded.checked_at, last_result = excluded.last_result`,
          params: [domain, result.checked_at, JSON.stringify(result)],
        },
      ];
    }
    const out: Sql[] = [
      {
        sql: `INSERT INTO publishers (domain, adagents_valid, checked_at, last_result, manifest, discovery_method, authority, manager_domain) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
              ON CONFLICT (domain) DO UPDATE SET adagents_valid = excluded.adagents_valid, checked_at = excluded.checked_at, last_result = excluded.last_result,
                manifest = excluded.manifest, discovery_method = excluded.discovery_method, authority = excluded.authority, manager_domain = excluded.manager_domain`,
        params: [domain, result.adagents_valid ? 1 : 0, result.checked_at, JSON.stringify(result), manifest ? JSON.stringify(manifest) : null, result.discovery_method, result.authority, result.manager_domain ?? null],
      },
      { sql: 'DELETE FROM authorized_agents WHERE publisher_domain = ?', params: [domain] },
      { sql: 'DELETE FROM publisher_properties WHERE publisher_domain = ?', params: [domain] },
    ];
    const properties = result.adagents_valid && Array.isArray(manifest?.properties) ? (manifest!.properties as Record<string, unknown>[]) : [];
    properties.forEach((p, i) => {
      const text = (v: unknown) => (typeof v === 'string' ? v : null);
      out.push({
        sql: 'INSERT INTO publisher_properties (publisher_domain, ordinal, property_id, property_type, name, owner_domain, doc) VALUES (?, ?, ?, ?, ?, ?, ?)',
        params: [domain, i, text(p?.property_id), text(p?.property_type), text(p?.name), text(p?.publisher_domain) ?? domain, JSON.stringify(p)],
      });
    });
    const agents = Array.isArray(manifest?.authorized_agents) ? (manifest!.authorized_agents as Record<string, unknown>[]) : [];
    for (const a of agents) {
      if (typeof a?.url !== 'string') continue;
      out.push({
        sql: 'INSERT INTO authorized_agents (publisher_domain, agent_url, authorized_for, authorization_type, doc) VALUES (?, ?, ?, ?, ?) ON CONFLICT (publisher_domain, agent_url) DO NOTHING',
        params: [domain, a.url, typeof a.authorized_for === 'string' ? a.authorized_for : null, typeof a.authorization_type === 'string' ? a.authorization_type : null, JSON.stringify(a)],
      });
    }
    return out;
  },
};

export const publisherQueries = {
  publisher: async (rm: ReadModelStore, domain: string) =>
    (await rm.query<{ domain: string; adagents_valid: number; checked_at: string; discovery_method: string | null; authority: string | null }>('SELECT domain, adagents_valid, checked_at, discovery_method, authority FROM publishers WHERE domain = ?', [domain]))[0],
  /** The last revalidation's result as recorded (its findings, fetch metadata), transient failures included. */
  lastResult: async (rm: ReadModelStore, domain: string) => {
    const row = (await rm.query<{ last_result: string }>('SELECT last_result FROM publishers WHERE domain = ?', [domain]))[0];
    return row ? (JSON.parse(row.last_result) as RevalidationResult) : undefined;
  },
  agents: (rm: ReadModelStore, domain: string) => rm.query<{ agent_url: string; authorized_for: string | null; authorization_type: string | null }>('SELECT agent_url, authorized_for, authorization_type FROM authorized_agents WHERE publisher_domain = ? ORDER BY agent_url', [domain]),
  /** The properties the publisher's last valid file declares, in file order. */
  properties: async (rm: ReadModelStore, domain: string) =>
    (await rm.query<{ doc: string }>('SELECT doc FROM publisher_properties WHERE publisher_domain = ? ORDER BY ordinal', [domain])).map((r) => JSON.parse(r.doc) as Record<string, unknown>),
  /** One authorization as the publisher's file states it (signing_keys included). */
  agent: async (rm: ReadModelStore, domain: string, agentUrl: string) => {
    const row = (await rm.query<{ doc: string }>('SELECT doc FROM authorized_agents WHERE publisher_domain = ? AND agent_url = ?', [domain, agentUrl]))[0];
    return row ? (JSON.parse(row.doc) as Record<string, unknown>) : undefined;
  },
};
