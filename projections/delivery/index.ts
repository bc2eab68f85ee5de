import type { DeliveryEvent } from '../../src/domain/delivery/delivery';
import type { Projection } from '../../src/projections/projection';
import type { ReadModelStore } from '../../src/readmodel/port';

const ddl = (big: string) => [
  `CREATE TABLE IF NOT EXISTS delivery_hours (
     media_buy_id TEXT NOT NULL, package_id TEXT NOT NULL, hour_start TEXT NOT NULL, owner TEXT NOT NULL,
     impressions ${big} NOT NULL, clicks ${big} NOT NULL, spend_cents ${big} NOT NULL,
     PRIMARY KEY (media_buy_id, package_id, hour_start))`,
];

/** Hourly delivery per package (late restatements applied); totals, by-package and daily series are sums over it. */
export const delivery: Projection = {
  name: 'delivery',
  version: 2,
  tables: ['delivery_hours'],
  ddl: { sqlite: ddl('INTEGER'), postgres: ddl('BIGINT') },
  handles: ['DeliveryRecorded', 'DeliveryAdjusted'],
  evolve(stored) {
    const e = stored as unknown as DeliveryEvent;
    if (e.type === 'DeliveryAdjusted') {
      const { hour } = e.data;
      return [
        {
          sql: 'UPDATE delivery_hours SET impressions = ?, clicks = ?, spend_cents = ? WHERE media_buy_id = ? AND package_id = ? AND hour_start = ?',
          params: [hour.impressions, hour.clicks, hour.spend_cents, e.data.media_buy_id, hour.package_id, hour.hour_start],
        },
      ];
    }
    if (e.type !== 'DeliveryRecorded') return [];
    const d = e.data;
    return d.hours.map((h) => ({
      sql: 'INSERT INTO delivery_hours (media_buy_id, package_id, hour_start, owner, impressions, clicks, spend_cents) VALUES (?, ?, ?, ?, ?, ?, ?)',
      params: [d.media_buy_id, h.package_id, h.hour_start, d.owner, h.impressions, h.clicks, h.spend_cents],
    }));
  },
};

export interface DeliveryRow {
  package_id: string;
  hour_start: string;
  impressions: number;
  clicks: number;
  spend_cents: number;
}

export const deliveryQueries = {
  hours: async (rm: ReadModelStore, owner: string, mediaBuyId: string, from?: string, to?: string) =>
    (
      await rm.query<DeliveryRow>(
        `SELECT package_id, hour_start, impressions, clicks, spend_cents FROM delivery_hours
          WHERE owner = ? AND media_buy_id = ?${from ? ' AND hour_start >= ?' : ''}${to ? ' AND hour_start < ?' : ''} ORDER BY hour_start, package_id`,
        [owner, mediaBuyId, ...(from ? [from] : []), ...(to ? [to] : [])],
      )
    ).map((r) => ({ ...r, impressions: Number(r.impressions), clicks: Number(r.clicks), spend_cents: Number(r.spend_cents) })),
  /** The recorded hours of several buys at once (whose reader may see them: checked by the caller), by buy. */
  hoursOfBuys: async (rm: ReadModelStore, mediaBuyIds: readonly string[], from?: string, to?: string): Promise<Map<string, DeliveryRow[]>> => {
    const byBuy = new Map<string, DeliveryRow[]>(mediaBuyIds.map((id) => [id, []]));
    if (mediaBuyIds.length === 0) return byBuy;
    const rows = await rm.query<DeliveryRow & { media_buy_id: string }>(
      `SELECT media_buy_id, package_id, hour_start, impressions, clicks, spend_cents FROM delivery_hours
        WHERE media_buy_id IN (${mediaBuyIds.map(() => '?').join(', ')})${from ? ' AND hour_start >= ?' : ''}${to ? ' AND hour_start < ?' : ''} ORDER BY hour_start, package_id`,
      [...mediaBuyIds, ...(from ? [from] : []), ...(to ? [to] : [])],
    );
    for (const r of rows) byBuy.get(r.media_buy_id)?.push({ package_id: r.package_id, hour_start: r.hour_start, impressions: Number(r.impressions), clicks: Number(r.clicks), spend_cents: Number(r.spend_cents) });
    return byBuy;
  },
  /** Spend (cents) of these buys from `from` (inclusive) to `to` (exclusive). */
  spendCents: async (rm: ReadModelStore, owner: string, mediaBuyIds: readonly string[], from: string, to: string) => {
    if (mediaBuyIds.length === 0) return 0;
    const [row] = await rm.query<{ cents: number | string | null }>(
      `SELECT SUM(spend_cents) AS cents FROM delivery_hours WHERE owner = ? AND media_buy_id IN (${mediaBuyIds.map(() => '?').join(', ')}) AND hour_start >= ? AND hour_start < ?`,
      [owner, ...mediaBuyIds, from, to],
    );
    return Number(row?.cents ?? 0);
  },
};
