import { z } from 'zod';
import { buyerCatalogQueries } from '../../../projections/buyer-catalogs';
import { eventSourceQueries } from '../../../projections/event-sources';
import { accountQueries } from '../../../projections/accounts';
import { buyerCatalogDecider, buyerCatalogStream, catalogPlatformId, reviewItem, type CatalogItem, type ItemIssue } from '../../domain/buyer-catalog/buyer-catalog';
import { eventSourceDecider, eventSourceSellerId, eventSourceStream, type Conversion, type EventSourceTerms } from '../../domain/event-source/event-source';
import { inUserGraph, type IdType } from '../../domain/audience/audience';
import { AppError } from '../../shared/errors';
import { handleCommand } from '../command-handler';
import { withIdempotency } from '../idempotency';
import { resolveAccount, type ResolvedAccount } from '../accounts';
import { idempotencyKeyInput, sha256HexInput } from '../validation';
import { defineTask, type TaskContext } from './context';

/**
 * The commerce side of a seller (AdCP 3.0 sales-catalog-driven and sales-social): the buyer's
 * catalogs (`sync_catalogs`), its conversion event sources (`sync_event_sources`) and the
 * conversions it reports (`log_event`). Each is kept per account, each change an event.
 */

const CATALOG_TYPES = ['offering', 'product', 'inventory', 'store', 'promotion', 'hotel', 'flight', 'job', 'vehicle', 'real_estate', 'education', 'destination', 'app'] as const;
export const EVENT_TYPES = [
  'page_view', 'view_content', 'select_content', 'select_item', 'search', 'share', 'add_to_cart', 'remove_from_cart', 'viewed_cart', 'add_to_wishlist', 'initiate_checkout', 'add_payment_info',
  'purchase', 'refund', 'lead', 'qualify_lead', 'close_convert_lead', 'disqualify_lead', 'complete_registration', 'subscribe', 'start_trial', 'app_install', 'app_launch', 'contact', 'schedule',
  'donate', 'submit_application', 'custom',
] as const;
const domainName = z.string().regex(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/i, 'must be a domain name');

const catalogInput = z
  .object({
    catalog_id: z.string().min(1).max(255).optional(),
    type: z.enum(CATALOG_TYPES),
    name: z.string().min(1).max(500).optional(),
    url: z.string().optional(),
    items: z.array(z.record(z.string(), z.unknown())).max(10_000).optional(),
    content_id_type: z.string().min(1).max(64).optional(),
    tags: z.array(z.string().min(1).max(100)).max(50).optional(),
  })
  .passthrough();

const syncCatalogsInput = z
  .object({
    account: z.unknown(),
    catalogs: z.array(catalogInput).min(1).max(50).optional(),
    catalog_ids: z.array(z.string().min(1)).min(1).max(50).optional(),
    delete_missing: z.boolean().optional(),
    dry_run: z.boolean().optional(),
    validation_mode: z.enum(['strict', 'lenient']).default('strict'),
    idempotency_key: idempotencyKeyInput,
  })
  .passthrough()
  .superRefine((r, ctx) => {
    if (r.account === undefined) ctx.addIssue({ code: 'custom', path: ['account'], message: 'is required: catalogs belong to an account' });
    if (r.delete_missing && !r.catalogs) ctx.addIssue({ code: 'custom', path: ['delete_missing'], message: 'needs a catalogs array (without one it would delete every catalog)' });
    const ids = (r.catalogs ?? []).map((c) => c.catalog_id);
    const dup = ids.findIndex((id, i) => id !== undefined && ids.indexOf(id) !== i);
    if (dup >= 0) ctx.addIssue({ code: 'custom', path: ['catalogs', dup, 'catalog_id'], message: 'appears twice in this request' });
  });

const itemIdOf = (item: Record<string, unknown>): string | undefined => {
  for (const k of ['item_id', 'offering_id', 'store_id', 'id']) if (typeof item[k] === 'string' && (item[k] as string).length > 0 && (item[k] as string).length <= 255) return item[k] as string;
  return undefined;
};

/** A catalog's items after review: those approved, and an issue for each rejected one. */
function review(type: string, items: Record<string, unknown>[]): { approved: CatalogItem[]; issues: ItemIssue[] } {
  const approved: CatalogItem[] = [];
  const issues: ItemIssue[] = [];
  const seen = new Set<string>();
  items.forEach((item, i) => {
    const id = itemIdOf(item);
    const reasons = id === undefined ? ['item_id is required'] : seen.has(id) ? ['item_id appears twice in this catalog'] : reviewItem(type, item);
    if (id !== undefined) seen.add(id);
    if (reasons.length) issues.push({ item_id: id ?? `#${i}`, status: 'rejected', reasons });
    else approved.push({ ...item, item_id: id! });
  });
  return { approved, issues };
}

function catalogResult(catalogId: string, accountId: string, action: string, approved: number, issues: readonly ItemIssue[], syncedAt: string) {
  return {
    catalog_id: catalogId,
    action,
    platform_id: catalogPlatformId(accountId, catalogId),
    item_count: approved + issues.length,
    items_approved: approved,
    items_pending: 0,
    items_rejected: issues.length,
    ...(issues.length ? { item_issues: issues } : {}),
    last_synced_at: syncedAt,
  };
}

const cmdContext = (ctx: TaskContext, now: string, attempt?: string) => ({ now, principal: ctx.principal.keyId, correlationId: ctx.requestId, ...(attempt ? { idempotency: attempt } : {}) });

export const syncCatalogs = defineTask({
  mutating: true,
  description: 'Creates, replaces or deletes the buyer\'s catalogs (products, offerings, stores…) on an account, reviewing each item; without catalogs, lists them.',
  input: syncCatalogsInput,
  async run(input, ctx) {
    const owner = ctx.principal.org;
    return withIdempotency(ctx.ports.store, owner, 'sync_catalogs', input as Record<string, unknown>, async (attempt) => {
      const account = await resolveAccount(ctx, input.account);
      const accountId = account.account_id;
      const sandbox = account.sandbox ? { sandbox: true } : {};
      const existing = await buyerCatalogQueries.list(ctx.ports.readModels, owner, accountId);
      if (!input.catalogs) {
        const wanted = input.catalog_ids && new Set(input.catalog_ids);
        const listed = existing.filter((c) => !wanted || wanted.has(c.catalog_id));
        return { catalogs: listed.map((c) => catalogResult(c.catalog_id, accountId, 'unchanged', c.item_count - c.items_rejected, c.issues, c.synced_at)), ...sandbox };
      }
      // Catalog-level problems: in strict mode (the default) any one refuses the whole request.
      const problems = input.catalogs.map((c): string | undefined =>
        c.catalog_id === undefined ? 'catalog_id is required to sync a catalog' : c.url !== undefined && !c.items ? 'feed URLs are not fetched by this seller: send the items inline' : !c.items ? 'items are required' : undefined,
      );
      const first = problems.findIndex((p) => p !== undefined);
      if (first >= 0 && input.validation_mode === 'strict') throw new AppError(problems[first]!.startsWith('feed') ? 'UNSUPPORTED_FEATURE' : 'INVALID_REQUEST', problems[first]!, `catalogs[${first}]`);
      const now = ctx.ports.clock().toISOString();
      const out: Record<string, unknown>[] = [];
      for (const [i, c] of input.catalogs.entries()) {
        if (problems[i]) {
          out.push({ catalog_id: c.catalog_id ?? `#${i}`, action: 'failed', errors: [{ code: problems[i]!.startsWith('feed') ? 'UNSUPPORTED_FEATURE' : 'INVALID_REQUEST', message: problems[i]!, field: `catalogs[${i}]` }] });
          continue;
        }
        const { approved, issues } = review(c.type, c.items!);
        const terms = { type: c.type, ...(c.name ? { name: c.name } : {}), ...(c.content_id_type ? { content_id_type: c.content_id_type } : {}), ...(c.tags ? { tags: c.tags } : {}) };
        const key = { account_id: accountId, owner, catalog_id: c.catalog_id! };
        const before = existing.find((e) => e.catalog_id === c.catalog_id);
        if (input.dry_run) {
          out.push(catalogResult(key.catalog_id, accountId, before ? 'updated' : 'created', approved.length, issues, now));
          continue;
        }
        const { events, state } = await handleCommand(ctx.ports.store, buyerCatalogStream(accountId, key.catalog_id), buyerCatalogDecider, { type: 'SyncCatalog', key, terms, items: approved, issues, now }, cmdContext(ctx, now, attempt));
        const synced = events.find((e) => e.type === 'BuyerCatalogSynced');
        out.push(catalogResult(key.catalog_id, accountId, !synced ? 'unchanged' : synced.data.created ? 'created' : 'updated', approved.length, issues, state.syncedAt ?? now));
      }
      if (input.delete_missing) {
        const named = new Set(input.catalogs.map((c) => c.catalog_id));
        for (const c of existing) {
          if (named.has(c.catalog_id)) continue;
          if (!input.dry_run) {
            const key = { account_id: accountId, owner, catalog_id: c.catalog_id };
            await handleCommand(ctx.ports.store, buyerCatalogStream(accountId, c.catalog_id), buyerCatalogDecider, { type: 'DeleteCatalog', key, now }, cmdContext(ctx, now, attempt));
          }
          out.push({ catalog_id: c.catalog_id, action: 'deleted', platform_id: c.platform_id });
        }
      }
      return { catalogs: out, ...(input.dry_run ? { dry_run: true } : {}), ...sandbox };
    });
  },
});

const eventSourceInput = z
  .object({
    event_source_id: z.string().regex(/^[\w.:-]{1,255}$/, 'must be 1-255 of A-Z a-z 0-9 _ . : -'),
    name: z.string().min(1).max(500).optional(),
    event_types: z.array(z.enum(EVENT_TYPES)).min(1).max(EVENT_TYPES.length).optional(),
    allowed_domains: z.array(domainName).min(1).max(100).optional(),
  })
  .passthrough();

const syncEventSourcesInput = z
  .object({
    account: z.unknown(),
    event_sources: z.array(eventSourceInput).min(1).max(50).optional(),
    delete_missing: z.boolean().optional(),
    idempotency_key: idempotencyKeyInput,
  })
  .passthrough()
  .superRefine((r, ctx) => {
    if (r.account === undefined) ctx.addIssue({ code: 'custom', path: ['account'], message: 'is required: event sources belong to an account' });
    if (r.delete_missing && !r.event_sources) ctx.addIssue({ code: 'custom', path: ['delete_missing'], message: 'needs an event_sources array (without one it would delete every source)' });
    const ids = (r.event_sources ?? []).map((s) => s.event_source_id);
    const dup = ids.findIndex((id, i) => ids.indexOf(id) !== i);
    if (dup >= 0) ctx.addIssue({ code: 'custom', path: ['event_sources', dup, 'event_source_id'], message: 'appears twice in this request' });
  });

/**
 * How a source reaches this seller. Conversions arrive only server to server, through log_event
 * (there is no browser pixel to install): the snippet is that call.
 */
function setupFor(eventSourceId: string, terms: EventSourceTerms) {
  const example = { event_source_id: eventSourceId, idempotency_key: '<uuid>', events: [{ event_id: '<unique id>', event_type: terms.event_types?.[0] ?? 'purchase', event_time: '<ISO 8601>', user_match: { hashed_email: '<sha256 hex>' } }] };
  return {
    snippet: JSON.stringify({ tool: 'log_event', arguments: example }),
    snippet_type: 'server_only',
    instructions: 'Send conversions server to server with the log_event task (MCP tool or POST /api/tasks/log_event), one call per batch of up to 1,000 events; event_id deduplicates resends. No browser tag is needed.',
  };
}

function healthOf(row: { events_total: number; events_matched: number; last_event_at: string | null } | undefined, now: string) {
  const total = row?.events_total ?? 0;
  const rate = total ? Math.round((row!.events_matched / total) * 1000) / 1000 : 0;
  const status = total === 0 ? 'insufficient' : rate >= 0.7 ? 'excellent' : rate >= 0.5 ? 'good' : rate >= 0.2 ? 'minimum' : 'insufficient';
  return { status, ...(total ? { match_rate: rate } : {}), ...(row?.last_event_at ? { last_event_at: row.last_event_at } : {}), evaluated_at: now };
}

export const syncEventSources = defineTask({
  mutating: true,
  description: 'Registers the buyer\'s conversion event sources on an account (how log_event reaches this seller); without event_sources, lists them.',
  input: syncEventSourcesInput,
  async run(input, ctx) {
    const owner = ctx.principal.org;
    return withIdempotency(ctx.ports.store, owner, 'sync_event_sources', input as Record<string, unknown>, async (attempt) => {
      const account = await resolveAccount(ctx, input.account);
      const accountId = account.account_id;
      const sandbox = account.sandbox ? { sandbox: true } : {};
      const now = ctx.ports.clock().toISOString();
      const existing = await eventSourceQueries.list(ctx.ports.readModels, owner, accountId);
      const view = (id: string, terms: EventSourceTerms, action: string) => ({
        event_source_id: id,
        ...(terms.name ? { name: terms.name } : {}),
        seller_id: eventSourceSellerId(accountId, id),
        ...(terms.event_types ? { event_types: terms.event_types } : {}),
        managed_by: 'buyer',
        setup: setupFor(id, terms),
        action,
        health: healthOf(existing.find((e) => e.event_source_id === id), now),
      });
      if (!input.event_sources) return { event_sources: existing.map((e) => view(e.event_source_id, e.terms, 'unchanged')), ...sandbox };
      const out: Record<string, unknown>[] = [];
      for (const s of input.event_sources) {
        const terms: EventSourceTerms = { ...(s.name ? { name: s.name } : {}), ...(s.event_types ? { event_types: s.event_types } : {}), ...(s.allowed_domains ? { allowed_domains: s.allowed_domains.map((d) => d.toLowerCase()) } : {}) };
        const key = { account_id: accountId, owner, event_source_id: s.event_source_id };
        const { events } = await handleCommand(ctx.ports.store, eventSourceStream(accountId, s.event_source_id), eventSourceDecider, { type: 'SyncEventSource', key, terms, now }, cmdContext(ctx, now, attempt));
        const synced = events.find((e) => e.type === 'EventSourceSynced');
        out.push(view(s.event_source_id, terms, !synced ? 'unchanged' : synced.data.created ? 'created' : 'updated'));
      }
      if (input.delete_missing) {
        const named = new Set(input.event_sources.map((s) => s.event_source_id));
        for (const e of existing) {
          if (named.has(e.event_source_id)) continue;
          const key = { account_id: accountId, owner, event_source_id: e.event_source_id };
          await handleCommand(ctx.ports.store, eventSourceStream(accountId, e.event_source_id), eventSourceDecider, { type: 'DeleteEventSource', key, now }, cmdContext(ctx, now, attempt));
          out.push({ event_source_id: e.event_source_id, seller_id: e.seller_id, action: 'deleted' });
        }
      }
      return { event_sources: out, ...sandbox };
    });
  },
});

const logEventInput = z
  .object({
    event_source_id: z.string().min(1).max(255),
    account: z.unknown().optional(),
    test_event_code: z.string().min(1).max(100).optional(),
    events: z
      .array(
        z
          .object({
            event_id: z.string().min(1).max(255),
            event_type: z.string().min(1).max(64),
            event_time: z.string().datetime({ offset: true }),
            user_match: z
              .object({
                hashed_email: sha256HexInput.optional(),
                hashed_phone: sha256HexInput.optional(),
                uids: z.array(z.object({ type: z.string().min(1), value: z.string().min(1).max(1000) }).passthrough()).max(20).optional(),
                click_id: z.string().min(1).max(500).optional(),
              })
              .passthrough()
              .optional(),
            custom_data: z.object({ value: z.number().optional(), currency: z.string().regex(/^[A-Z]{3}$/).optional() }).passthrough().optional(),
            value: z.number().optional(),
            currency: z.string().regex(/^[A-Z]{3}$/).optional(),
            custom_event_name: z.string().min(1).max(100).optional(),
          })
          .passthrough(),
      )
      .min(1)
      .max(1000),
    idempotency_key: idempotencyKeyInput,
  })
  .passthrough();

/** Whether the seller recognises the user an event names (the same user graph audiences match against). */
function recognised(m: z.infer<typeof logEventInput>['events'][number]['user_match']): boolean {
  if (!m) return false;
  if (m.hashed_email && inUserGraph('hashed_email', m.hashed_email)) return true;
  if (m.hashed_phone && inUserGraph('hashed_phone', m.hashed_phone)) return true;
  const known: readonly string[] = ['rampid', 'id5', 'uid2', 'euid', 'pairid', 'maid'];
  return (m.uids ?? []).some((u) => known.includes(u.type) && inUserGraph(u.type as IdType, u.value)) || m.click_id !== undefined;
}

/** The caller's event source a log_event names: in the account given, else its only one by that id. */
/**
 * The buyer's event source an id names. AdCP 3.0's log_event carries no account: the id finds
 * the source among the buyer's. An account, where given, only chooses between sources of the same
 * id on several accounts (a source the buyer has once is found whatever account is named).
 */
async function sourceFor(ctx: TaskContext, id: string, accountRef: unknown): Promise<{ account: ResolvedAccount | undefined; accountId: string; terms: EventSourceTerms }> {
  const all = await eventSourceQueries.byId(ctx.ports.readModels, ctx.principal.org, id);
  if (all.length === 0) throw new AppError('NOT_FOUND', `no event source ${id}: register it with sync_event_sources`, 'event_source_id', { resource: 'event_source' });
  let rows = all;
  let account: ResolvedAccount | undefined;
  if (all.length > 1) {
    if (accountRef === undefined) throw new AppError('INVALID_REQUEST', `event source ${id} exists on ${all.length} of your accounts: name the account`, 'account');
    account = await resolveAccount(ctx, accountRef);
    rows = all.filter((r) => r.account_id === account!.account_id);
    if (rows.length === 0) throw new AppError('NOT_FOUND', `no event source ${id} on this account: register it with sync_event_sources`, 'event_source_id', { resource: 'event_source' });
  }
  if (!account) {
    const row = await accountQueries.byId(ctx.ports.readModels, ctx.principal.org, rows[0]!.account_id);
    account = row ? { account_id: row.account_id, sandbox: row.terms.sandbox, status: row.status } : undefined;
  }
  return { account, accountId: rows[0]!.account_id, terms: rows[0]!.terms };
}

export const logEvent = defineTask({
  mutating: true,
  description: 'Records conversion events against a registered event source: deduplicated by event_id, matched to users for attribution (identifiers are not kept).',
  input: logEventInput,
  async run(input, ctx) {
    const owner = ctx.principal.org;
    return withIdempotency(ctx.ports.store, owner, 'log_event', input as Record<string, unknown>, async (attempt) => {
      const { account, accountId, terms } = await sourceFor(ctx, input.event_source_id, input.account);
      const now = ctx.ports.clock().toISOString();
      const partial_failures: { event_id: string; code: string; message: string }[] = [];
      const accepted: Conversion[] = [];
      const test = input.test_event_code !== undefined;
      for (const e of input.events) {
        if (!(EVENT_TYPES as readonly string[]).includes(e.event_type)) {
          partial_failures.push({ event_id: e.event_id, code: 'VALIDATION_ERROR', message: `event_type ${e.event_type} is not an AdCP event type` });
        } else if (terms.event_types && !terms.event_types.includes(e.event_type)) {
          partial_failures.push({ event_id: e.event_id, code: 'VALIDATION_ERROR', message: `event source ${input.event_source_id} is registered for ${terms.event_types.join(', ')}, not ${e.event_type}` });
        } else if (Date.parse(e.event_time) > Date.parse(now) + 5 * 60_000) {
          partial_failures.push({ event_id: e.event_id, code: 'VALIDATION_ERROR', message: 'event_time is in the future' });
        } else {
          const value = e.custom_data?.value ?? e.value;
          const currency = e.custom_data?.currency ?? e.currency;
          accepted.push({ event_id: e.event_id, event_type: e.event_type, event_time: new Date(e.event_time).toISOString(), ...(value !== undefined ? { value } : {}), ...(currency ? { currency } : {}), matched: recognised(e.user_match), ...(test ? { test: true } : {}) });
        }
      }
      const key = { account_id: accountId, owner, event_source_id: input.event_source_id };
      const { events } = await handleCommand(ctx.ports.store, eventSourceStream(accountId, input.event_source_id), eventSourceDecider, { type: 'LogConversions', key, conversions: accepted, now }, cmdContext(ctx, now, attempt));
      const logged = events.find((e) => e.type === 'ConversionsLogged')?.data.conversions ?? [];
      const duplicates = accepted.length - logged.length;
      const withIds = input.events.filter((e) => e.user_match).length;
      return {
        events_received: input.events.length,
        events_processed: logged.length,
        ...(partial_failures.length ? { partial_failures } : {}),
        ...(duplicates || test ? { warnings: [...(duplicates ? [`${duplicates} event(s) already received (same event_id): counted once`] : []), ...(test ? ['test events (test_event_code): recorded, never attributed'] : [])] } : {}),
        // Share of the events that named a user which the seller recognised (0 when none named one).
        match_quality: withIds ? Math.round((accepted.filter((c) => c.matched).length / withIds) * 1000) / 1000 : 0,
        ...(account?.sandbox ? { sandbox: true } : {}),
      };
    });
  },
});
