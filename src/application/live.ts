import type { StoredEvent } from '../eventstore/port';
import { liveEvents } from './live-events';
import type { BindingPorts, StreamOrigin } from './ports';

export type { StoredEvent } from '../eventstore/port';
export type { StreamOrigin } from './ports';

/**
 * The log as its live readers see it (GraphQL subscriptions, A2A task streams): where it ends
 * now, each event after a position as one subscriber selects it, and who an event belongs to.
 */

/** The position of the last event in the log. */
export function logHead(ports: Pick<BindingPorts, 'store'>): Promise<number> {
  return ports.store.headPosition();
}

/**
 * Each event after `after` (default: from now on) that `select` turns into a payload, in log
 * order, as an async iterator; a subscriber that falls too far behind is ended with an error
 * naming the position to resume from (./live-events.ts).
 */
export function followLog<T>(ports: Pick<BindingPorts, 'live'>, after: number | undefined, select: (event: StoredEvent) => Promise<T | undefined> | T | undefined): AsyncIterableIterator<T> & { ready: Promise<void> } {
  return liveEvents(ports.live, after, select);
}

/** The org an event belongs to: its own `owner`, else its stream's (undefined: nobody's). */
export function ownerOfEvent(ports: Pick<BindingPorts, 'live'>, event: StoredEvent): Promise<string | undefined> {
  return ports.live.ownerOf(event);
}

/** What a stream's first event says of it (its owner; a task's type and subject; a webhook's notification). */
export function streamOrigin(ports: Pick<BindingPorts, 'live'>, streamId: string): Promise<StreamOrigin> {
  return ports.live.streamOrigin(streamId);
}
