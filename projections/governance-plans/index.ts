import type { PlanEvent } from '../../src/domain/governance/plan';
import type { PlanTerms } from '../../src/domain/governance/types';
import type { Projection } from '../../src/projections/projection';
import type { ReadModelStore } from '../../src/readmodel/port';

const ddl = (collate: string) => [
  `CREATE TABLE IF NOT EXISTS governance_plans (
  plan_key TEXT${collate} PRIMARY KEY, owner TEXT NOT NULL, plan_id TEXT${collate} NOT NULL, brand_domain TEXT NOT NULL,
  flight_start TEXT NOT NULL, flight_end TEXT NOT NULL, version INTEGER NOT NULL, synced_at TEXT NOT NULL, doc TEXT NOT NULL)`,
  'CREATE INDEX IF NOT EXISTS governance_plans_brand ON governance_plans (owner, brand_domain, synced_at)',
];

export interface GovernancePlanRow {
  plan_key: string;
  plan_id: string;
  version: number;
  synced_at: string;
  terms: PlanTerms;
}

/** The plans each buyer has synced to this gateway's governance agent, findable by brand. */
export const governancePlans: Projection = {
  name: 'governance-plans',
  version: 1,
  tables: ['governance_plans'],
  ddl: { sqlite: ddl(''), postgres: ddl(' COLLATE "C"') },
  handles: ['PlanSynced'],
  evolve(stored) {
    const e = stored as unknown as PlanEvent;
    if (e.type !== 'PlanSynced') return [];
    const d = e.data;
    return [
      {
        sql: `INSERT INTO governance_plans (plan_key, owner, plan_id, brand_domain, flight_start, flight_end, version, synced_at, doc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
              ON CONFLICT (plan_key) DO UPDATE SET brand_domain = excluded.brand_domain, flight_start = excluded.flight_start, flight_end = excluded.flight_end,
              version = excluded.version, synced_at = excluded.synced_at, doc = excluded.doc`,
        params: [d.plan_key, d.owner, d.terms.plan_id, d.terms.brand.domain.toLowerCase(), d.terms.flight.start, d.terms.flight.end, d.version, d.at, JSON.stringify(d.terms)],
      },
    ];
  },
};

type Raw = { plan_key: string; plan_id: string; version: number | string; synced_at: string; doc: string };
const row = (r: Raw): GovernancePlanRow => ({ plan_key: r.plan_key, plan_id: r.plan_id, version: Number(r.version), synced_at: r.synced_at, terms: JSON.parse(r.doc) as PlanTerms });

export const governancePlanQueries = {
  /** A buyer's plans for a brand, the most recently synced first. */
  forBrand: async (rm: ReadModelStore, owner: string, brandDomain: string) =>
    (await rm.query<Raw>('SELECT plan_key, plan_id, version, synced_at, doc FROM governance_plans WHERE owner = ? AND brand_domain = ? ORDER BY synced_at DESC, plan_key', [owner, brandDomain.toLowerCase()])).map(row),
};
