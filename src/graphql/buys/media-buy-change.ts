import type { Principal } from '../../application/api-keys';
import type { StoredEvent } from '../../application/live';

/** Operators (seller, admin) see every buyer's buys, tasks and webhooks: they approve and send them. */
export const isOperator = (p: Principal) => p.role === 'seller' || p.role === 'admin';

/** Whether the principal may read what `owner` owns. */
export const mayRead = (p: Principal, owner: string | undefined) => isOperator(p) || owner === p.org;

/** One event of a media buy's stream as a change: what happened, the status it set, what changed. */
export interface MediaBuyChange {
  position: number;
  event: string;
  status: string | null;
  previousStatus: string | null;
  changed: string[];
  note: string | null;
  at: string;
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/** The timeline entry of `MediaBuy.timeline` and the payload of `mediaBuyUpdated`, from one event. */
export function mediaBuyChange(event: StoredEvent): MediaBuyChange {
  const d = event.data as Record<string, unknown>;
  return {
    position: event.position,
    event: event.type,
    status: event.type === 'MediaBuyApproved' ? 'active' : event.type === 'MediaBuyRejected' ? 'rejected' : str(d.status),
    previousStatus: str(d.from),
    changed: Array.isArray(d.changed) ? d.changed.map(String) : [],
    note: str(d.reason) ?? str(d.note),
    at: str(d.at) ?? event.metadata.time,
  };
}
