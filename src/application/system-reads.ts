import { eventStatsQueries, type EventTypeStat } from '../../projections/event-stats';
import type { BindingPorts } from './ports';

/** Where the log and the projections stand: readiness, /metrics, the operator's view of the log. */

/** A projection's position and how many events it is behind the log's head. */
export interface ProjectionLag {
  name: string;
  position: number;
  lag: number;
  /** The event that stopped this projection (its code throws on it); the others go on. */
  failed?: { position: number; type: string; error: string };
}

type Health = Pick<BindingPorts, 'store' | 'projectionHealth'>;

const lagsAt = (ports: Pick<BindingPorts, 'projectionHealth'>, head: number): ProjectionLag[] => ports.projectionHealth.status().map((p) => ({ ...p, lag: Math.max(0, head - p.position) }));

/**
 * The log's head, each projection's lag behind it, whether every projection has caught up with it,
 * and the projections an event stopped (not counted in `ready`: the gateway serves from the rest).
 */
export async function readiness(ports: Health): Promise<{ head: number; projections: ProjectionLag[]; ready: boolean; failed: string[] }> {
  const head = await ports.store.headPosition();
  const projections = lagsAt(ports, head);
  return { head, projections, ready: ports.projectionHealth.caughtUpWith(head), failed: projections.filter((p) => p.failed).map((p) => p.name) };
}

/** The event log as the operator sees it: the store, its head, each projection's lag and the events counted by type. */
export async function eventLogStatus(ports: Health & Pick<BindingPorts, 'readModels' | 'projections'>): Promise<{ store: string; headPosition: number; projections: ProjectionLag[]; eventTypes: EventTypeStat[] }> {
  // Commands do not wait for the counts ('eventual'): this read does, for what this instance appended.
  await ports.projections.applied(ports.store.appendedUpTo(), ['event-stats']).catch(() => {});
  const head = await ports.store.headPosition();
  const eventTypes = await ports.readModels.query<EventTypeStat>(eventStatsQueries.sql);
  return {
    store: ports.store.kind,
    headPosition: head,
    projections: lagsAt(ports, head),
    eventTypes: eventTypes.map((t) => ({ ...t, count: Number(t.count), lastPosition: Number(t.lastPosition) })),
  };
}
