import { hash } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';

/** Time-ordered ids (UUID v7) for events, so ids sort roughly by creation in every store. */
export function newEventId(): string {
  return uuidv7();
}

/**
 * Ids are global, but some are chosen by a buyer (the sandbox controller's forced task ids,
 * fixture account ids): those are kept under that buyer, stored as `<id>~<owner tag>` and shown
 * as `<id>`, so two buyers (or two runs of one script) naming the same id never collide. `~`
 * appears in no id this seller issues, and buyer-chosen ids may not contain it.
 */
export function ownerScopedId(owner: string, id: string): string {
  return `${id}~${hash('sha256', owner, 'base64url').slice(0, 12)}`;
}

/** An id as its buyer knows it. */
export function publicId(id: string): string {
  const cut = id.indexOf('~');
  return cut < 0 ? id : id.slice(0, cut);
}
