import { deliveryQueries, type DeliveryRow } from '../../projections/delivery';
import { impairmentQueries } from '../../projections/impairments';
import { mediaBuyQueries, type MediaBuyRow, type TaskRow } from '../../projections/media-buys';
import { mediaBuyStream } from '../domain/media-buy/media-buy';
import type { StoredEvent } from '../eventstore/port';
import type { TaskPorts } from './ports';

export type { DeliveryRow } from '../../projections/delivery';
export type { MediaBuyRow, TaskRow } from '../../projections/media-buys';

/**
 * Media buys as the typed APIs read them, batched by id (GraphQL's per-request loaders): the
 * buys, their tasks, their delivery hours, their impairments, and a buy's history from the log.
 * Callers check the caller may read what comes back (the rows name their owner).
 */

type Reads = Pick<TaskPorts, 'readModels'>;

/** These buys by stored id (any owner's); ids with no buy are left out. */
export function mediaBuysByIds(ports: Reads, ids: readonly string[]): Promise<MediaBuyRow[]> {
  return mediaBuyQueries.byIds(ports.readModels, ids);
}

/** A page of buys by id: one owner's, or every owner's (null), optionally of some statuses, after a cursor id. */
export function listMediaBuys(ports: Reads, owner: string | null, opts: { statuses?: string[]; limit: number; after?: string }): Promise<MediaBuyRow[]> {
  return mediaBuyQueries.list(ports.readModels, owner, opts);
}

/** These tasks by id (any owner's); ids with no task are left out. */
export function tasksByIds(ports: Reads, ids: readonly string[]): Promise<TaskRow[]> {
  return mediaBuyQueries.tasksByIds(ports.readModels, ids);
}

/** Every buyer's tasks in these statuses, oldest first (the seller's approvals inbox). */
export function waitingTasks(ports: Reads, statuses: readonly string[], limit: number): Promise<TaskRow[]> {
  return mediaBuyQueries.waitingTasks(ports.readModels, statuses, limit);
}

/** The recorded delivery hours of these buys in [from, to) (either open), by buy id. */
export function deliveryHoursOfBuys(ports: Reads, mediaBuyIds: readonly string[], from?: string, to?: string): Promise<Map<string, DeliveryRow[]>> {
  return deliveryQueries.hoursOfBuys(ports.readModels, mediaBuyIds, from, to);
}

/** Every impairment of these buys, open or resolved, oldest first: the stored document and when it was resolved. */
export function impairmentsOfBuys(ports: Reads, mediaBuyIds: readonly string[]): Promise<{ media_buy_id: string; doc: string; resolved_at: string | null }[]> {
  return impairmentQueries.ofBuys(ports.readModels, mediaBuyIds);
}

/** A buy's events from the log, oldest first (its timeline). */
export function mediaBuyHistory(ports: Pick<TaskPorts, 'store'>, mediaBuyId: string): Promise<StoredEvent[]> {
  return ports.store.readStream(mediaBuyStream(mediaBuyId));
}
