import { createHash } from 'node:crypto';
import { assertNever, type Decider } from '../decider';

/**
 * A buyer's catalog on one of its accounts (AdCP `sync_catalogs`): products, offerings, stores…
 * whose items drive dynamic creatives (catalog-item macros such as {SKU}) and catalog packages.
 * Each sync replaces the catalog's items; items that fail review are kept out, with reasons.
 */
export type CatalogItem = Readonly<Record<string, unknown>> & { readonly item_id: string };

export interface ItemIssue {
  readonly item_id: string;
  readonly status: 'rejected';
  readonly reasons: readonly string[];
}

export interface BuyerCatalogTerms {
  readonly type: string;
  readonly name?: string;
  readonly content_id_type?: string;
  readonly tags?: readonly string[];
}

interface Key {
  readonly account_id: string;
  readonly owner: string;
  readonly catalog_id: string;
}

export type BuyerCatalogEvent =
  | { readonly type: 'BuyerCatalogSynced'; readonly data: Key & { readonly platform_id: string; readonly terms: BuyerCatalogTerms; readonly items: readonly CatalogItem[]; readonly issues: readonly ItemIssue[]; readonly created: boolean; readonly at: string } }
  | { readonly type: 'BuyerCatalogDeleted'; readonly data: Key & { readonly at: string } };

export type BuyerCatalogCommand =
  | { readonly type: 'SyncCatalog'; readonly key: Key; readonly terms: BuyerCatalogTerms; readonly items: readonly CatalogItem[]; readonly issues: readonly ItemIssue[]; readonly now: string }
  | { readonly type: 'DeleteCatalog'; readonly key: Key; readonly now: string };

export interface BuyerCatalogState {
  readonly exists: boolean;
  readonly terms?: BuyerCatalogTerms;
  readonly items: readonly CatalogItem[];
  readonly issues: readonly ItemIssue[];
  readonly syncedAt?: string;
}

export const catalogPlatformId = (accountId: string, catalogId: string) => `cat_${createHash('sha256').update(`${accountId}\u0000${catalogId}`).digest('base64url').slice(0, 22)}`;
export const buyerCatalogStream = (accountId: string, catalogId: string) => `buyer-catalog-${catalogPlatformId(accountId, catalogId).slice(4)}`;

/**
 * Review of one item, as a platform does before it may render it: an id, and for the types a
 * creative shows (product, offering) a title, a landing page and a price; URLs must be https.
 */
export function reviewItem(type: string, item: Readonly<Record<string, unknown>>): string[] {
  const reasons: string[] = [];
  const text = (k: string) => typeof item[k] === 'string' && (item[k] as string).trim().length > 0;
  if (type === 'product' || type === 'offering') {
    if (!text('title') && !text('name')) reasons.push('title is required');
    if (!text('url')) reasons.push('url (the landing page) is required');
    const price = item.price as { amount?: unknown; currency?: unknown } | undefined;
    if (type === 'product' && (typeof price !== 'object' || price === null || typeof price.amount !== 'number' || price.amount < 0 || typeof price.currency !== 'string' || !/^[A-Z]{3}$/.test(price.currency))) {
      reasons.push('price {amount ≥ 0, currency (ISO 4217)} is required');
    }
  }
  for (const k of ['url', 'image_url', 'video_url']) {
    if (item[k] === undefined) continue;
    try {
      if (new URL(String(item[k])).protocol !== 'https:') reasons.push(`${k} must be https`);
    } catch {
      reasons.push(`${k} is not a URL`);
    }
  }
  return reasons;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

export const buyerCatalogDecider: Decider<BuyerCatalogCommand, BuyerCatalogEvent, BuyerCatalogState> = {
  initialState: () => ({ exists: false, items: [], issues: [] }),
  decide(command, state) {
    switch (command.type) {
      case 'SyncCatalog': {
        if (state.exists && same(state.terms, command.terms) && same(state.items, command.items) && same(state.issues, command.issues)) return [];
        const { key } = command;
        return [{ type: 'BuyerCatalogSynced', data: { ...key, platform_id: catalogPlatformId(key.account_id, key.catalog_id), terms: command.terms, items: command.items, issues: command.issues, created: !state.exists, at: command.now } }];
      }
      case 'DeleteCatalog':
        return state.exists ? [{ type: 'BuyerCatalogDeleted', data: { ...command.key, at: command.now } }] : [];
      default:
        return assertNever(command);
    }
  },
  evolve(_state, event) {
    switch (event.type) {
      case 'BuyerCatalogSynced':
        return { exists: true, terms: event.data.terms, items: event.data.items, issues: event.data.issues, syncedAt: event.data.at };
      case 'BuyerCatalogDeleted':
        return buyerCatalogDecider.initialState();
      default:
        return assertNever(event);
    }
  },
};
