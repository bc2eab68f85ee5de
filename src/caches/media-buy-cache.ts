import { LRUCache } from 'lru-cache';
import type { StoredEvent } from '../eventstore/port';
import { impairmentQueries } from '../../projections/impairments';
import { mediaBuyQueries, type MediaBuyRow } from '../../projections/media-buys';
import type { Impairment } from '../domain/impairment/impairment';
import type { ReadModelStore } from '../readmodel/port';

/**
 * The events that write a media_buys row (media-buys projection) or an impairments row
 * (impairments projection); each names its buy in `media_buy_id`. Task events write only tasks.
 */
export const CHANGES_CACHED_BUY = new Set([
  'MediaBuyCreated',
  'MediaBuyApproved',
  'MediaBuyRejected',
  'MediaBuyUpdated',
  'MediaBuyStatusChanged',
  'ImpairmentOpened',
  'ImpairmentResolved',
]);

export interface CachedBuy {
  row: MediaBuyRow;
  /** Open impairments, oldest first. */
  impairments: Impairment[];
}

/**
 * Media buys by id with their open impairments, as get_media_buys answers them. Buyers poll
 * their buys (the spec's two-minute backup poll, dashboards) far more often than a buy changes,
 * and a read costs two SQL queries; a buy changes only through events that name it. So an entry
 * lives until this instance's projections write an event for that buy, or until the projection
 * runner finds the read models moved under it (another instance applied events, a rebuild): then
 * everything goes. The five-minute TTL (longer than the backup poll) bounds what a missed signal
 * could cost, e.g. while this instance's runner is stuck and another keeps applying. Entries are
 * shared: never mutate them.
 */
export class MediaBuyCache {
  private readonly entries: LRUCache<string, CachedBuy>;
  /** Bumped by every invalidation: a load that raced one is returned but not kept. */
  private generation = 0;

  constructor(options: { max?: number; ttlMs?: number } = {}) {
    this.entries = new LRUCache({ max: options.max ?? 20_000, ttl: options.ttlMs ?? 5 * 60_000 });
  }

  /** The caller's buys among `ids` (another owner's id reads as absent, like the SQL filter). */
  /** Entries held now (for /metrics). */
  get size(): number {
    return this.entries.size;
  }

  async get(rm: ReadModelStore, owner: string, ids: readonly string[]): Promise<Map<string, CachedBuy>> {
    const found = new Map<string, CachedBuy>();
    const missing: string[] = [];
    for (const id of new Set(ids)) {
      const hit = this.entries.get(id);
      if (!hit) missing.push(id);
      else if (hit.row.owner === owner) found.set(id, hit);
    }
    if (missing.length === 0) return found;
    const generation = this.generation;
    const rows = await mediaBuyQueries.list(rm, owner, { ids: missing, limit: missing.length });
    const open = await impairmentQueries.openFor(rm, owner, rows.map((r) => r.media_buy_id));
    for (const row of rows) {
      const entry = { row, impairments: open.filter((i) => i.media_buy_id === row.media_buy_id) };
      found.set(row.media_buy_id, entry);
      // Absent ids are not remembered: the buy may be created (or projected) a moment later.
      if (generation === this.generation) this.entries.set(row.media_buy_id, entry);
    }
    return found;
  }

  /** Drops what these events change (ProjectionRunner.onWritten). */
  written(events: readonly StoredEvent[]): void {
    for (const e of events) {
      if (!CHANGES_CACHED_BUY.has(e.type)) continue;
      const id = (e.data as { media_buy_id?: unknown }).media_buy_id;
      if (typeof id === 'string') this.drop(id);
      else this.clear(); // an event that does not name its buy: drop everything rather than guess
    }
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
  }

  private drop(id: string): void {
    this.generation++;
    this.entries.delete(id);
  }
}
