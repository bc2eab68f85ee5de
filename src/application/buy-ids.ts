import { mediaBuyQueries, type MediaBuyRow } from '../../projections/media-buys';
import { mediaBuyStream } from '../domain/media-buy/media-buy';
import { ownerScopedId } from '../shared/ids';
import type { EventLog, TaskPorts } from './ports';

/** The ids this seller issues for media buys (`mb_` and 22 base64url characters of a hash). */
const ISSUED_BUY_ID = /^mb_[A-Za-z0-9_-]{22}$/;

/** True for an id of the shape this seller issues: a fixture may not choose one. */
export function looksIssued(mediaBuyId: string): boolean {
  return ISSUED_BUY_ID.test(mediaBuyId);
}

/**
 * Where a buyer-chosen media buy id (a sandbox fixture's, e.g. `pagination_integrity_mb_1`) is
 * kept: under that buyer, so every buyer may seed the same fixture ids and none learns of another's.
 * Shown as given (`publicId`).
 */
export function storedFixtureBuyId(owner: string, mediaBuyId: string): string {
  return ownerScopedId(owner, mediaBuyId);
}

/**
 * The stored ids a media_buy_id sent by `owner` may name, most likely first: an issued id (or a
 * stored one, with its `~` scope) is itself; any other is a fixture id, kept under its buyer (or,
 * seeded before fixture ids were scoped, as given).
 */
export function storedBuyIds(owner: string, mediaBuyId: string): string[] {
  return looksIssued(mediaBuyId) || mediaBuyId.includes('~') ? [mediaBuyId] : [storedFixtureBuyId(owner, mediaBuyId), mediaBuyId];
}

/**
 * The stored id of `owner`'s media buy that `mediaBuyId` names, read from the log (so a buy
 * created a moment ago on another instance is found too); the id as given when none of theirs
 * has it, for the caller's usual not-found answer.
 */
export async function resolveBuyId(store: Pick<EventLog, 'readStream'>, owner: string, mediaBuyId: string): Promise<string> {
  const candidates = storedBuyIds(owner, mediaBuyId);
  if (candidates.length === 1) return mediaBuyId;
  for (const id of candidates) {
    const [first] = await store.readStream(mediaBuyStream(id), { limit: 1 });
    if ((first?.data as { owner?: string } | undefined)?.owner === owner) return id;
  }
  return mediaBuyId;
}

/** The caller's media buy that `mediaBuyId` names, from the read models; undefined when none of theirs. */
export async function ownedBuy(ctx: { ports: Pick<TaskPorts, 'readModels'>; principal: { org: string } }, mediaBuyId: string): Promise<MediaBuyRow | undefined> {
  for (const id of storedBuyIds(ctx.principal.org, mediaBuyId)) {
    const row = await mediaBuyQueries.byId(ctx.ports.readModels, ctx.principal.org, id);
    if (row) return row;
  }
  return undefined;
}
