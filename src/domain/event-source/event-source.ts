import { createHash } from 'node:crypto';
import { assertNever, type Decider } from '../decider';

/**
 * A buyer's conversion event source on one of its accounts (AdCP `sync_event_sources`), and the
 * conversions logged against it (`log_event`). Events are deduplicated by event_id per source;
 * what is kept of each is what attribution needs (type, time, value), never the user identifiers
 * it was matched by.
 */
export interface EventSourceTerms {
  readonly name?: string;
  readonly event_types?: readonly string[];
  readonly allowed_domains?: readonly string[];
}

export interface Conversion {
  readonly event_id: string;
  readonly event_type: string;
  readonly event_time: string;
  readonly value?: number;
  readonly currency?: string;
  /** Whether the user was recognised (an identifier in the user graph). */
  readonly matched: boolean;
  readonly test?: boolean;
}

interface Key {
  readonly account_id: string;
  readonly owner: string;
  readonly event_source_id: string;
}

export type EventSourceEvent =
  | { readonly type: 'EventSourceSynced'; readonly data: Key & { readonly seller_id: string; readonly terms: EventSourceTerms; readonly created: boolean; readonly at: string } }
  | { readonly type: 'EventSourceDeleted'; readonly data: Key & { readonly at: string } }
  | { readonly type: 'ConversionsLogged'; readonly data: Key & { readonly conversions: readonly Conversion[]; readonly at: string } };

export type EventSourceCommand =
  | { readonly type: 'SyncEventSource'; readonly key: Key; readonly terms: EventSourceTerms; readonly now: string }
  | { readonly type: 'DeleteEventSource'; readonly key: Key; readonly now: string }
  | { readonly type: 'LogConversions'; readonly key: Key; readonly conversions: readonly Conversion[]; readonly now: string };

export interface EventSourceState {
  readonly exists: boolean;
  readonly terms?: EventSourceTerms;
  readonly seen: ReadonlySet<string>;
  readonly lastEventAt?: string;
}

export const eventSourceSellerId = (accountId: string, id: string) => `es_${createHash('sha256').update(`${accountId}\u0000${id}`).digest('base64url').slice(0, 22)}`;
export const eventSourceStream = (accountId: string, id: string) => `event-source-${eventSourceSellerId(accountId, id).slice(3)}`;

export const eventSourceDecider: Decider<EventSourceCommand, EventSourceEvent, EventSourceState> = {
  initialState: () => ({ exists: false, seen: new Set() }),
  decide(command, state) {
    switch (command.type) {
      case 'SyncEventSource': {
        if (state.exists && JSON.stringify(state.terms) === JSON.stringify(command.terms)) return [];
        const { key } = command;
        return [{ type: 'EventSourceSynced', data: { ...key, seller_id: eventSourceSellerId(key.account_id, key.event_source_id), terms: command.terms, created: !state.exists, at: command.now } }];
      }
      case 'DeleteEventSource':
        return state.exists ? [{ type: 'EventSourceDeleted', data: { ...command.key, at: command.now } }] : [];
      case 'LogConversions': {
        // Only events never seen on this source (a resend of an event_id counts once).
        const fresh = new Set<string>();
        const conversions = command.conversions.filter((c) => !state.seen.has(c.event_id) && !fresh.has(c.event_id) && fresh.add(c.event_id));
        return conversions.length ? [{ type: 'ConversionsLogged', data: { ...command.key, conversions, at: command.now } }] : [];
      }
      default:
        return assertNever(command);
    }
  },
  evolve(state, event) {
    switch (event.type) {
      case 'EventSourceSynced':
        return { ...state, exists: true, terms: event.data.terms };
      case 'EventSourceDeleted':
        return { ...state, exists: false, terms: undefined };
      case 'ConversionsLogged':
        return { ...state, seen: new Set([...state.seen, ...event.data.conversions.map((c) => c.event_id)]), lastEventAt: event.data.at };
      default:
        return assertNever(event);
    }
  },
};
