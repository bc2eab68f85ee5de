import { z } from 'zod';
import { buyerCatalogQueries } from '../../../projections/buyer-catalogs';
import { buyerCatalogDecider, buyerCatalogStream, type CatalogItem } from '../../domain/buyer-catalog/buyer-catalog';
import type { Format } from '../../domain/catalog/catalog';
import { AppError } from '../../shared/errors';
import { loadState } from '../command-handler';
import { withIdempotency } from '../idempotency';
import { resolveAccount, type ResolvedAccount } from '../accounts';
import { formatsFor } from '../sandbox/seeds';
import { httpUrlInput, idempotencyKeyInput } from '../validation';
import { defineTask, type TaskContext } from './context';
import { acceptFormat } from '../formats';
import { recordPreview } from './preview-tasks';

const formatId = z.object({ agent_url: httpUrlInput, id: z.string().regex(/^[A-Za-z0-9_-]{1,255}$/) }).passthrough();

const input = z
  .object({
    message: z.string().min(1).max(10_000).optional(),
    creative_manifest: z.object({ format_id: formatId.optional(), assets: z.record(z.string(), z.unknown()).optional() }).passthrough().optional(),
    creative_id: z.string().min(1).max(255).optional(),
    target_format_id: formatId.optional(),
    target_format_ids: z.array(formatId).min(1).max(10).optional(),
    account: z.unknown().optional(),
    brand: z.object({ domain: z.string().min(1).max(253) }).passthrough().optional(),
    quality: z.enum(['draft', 'production']).optional(),
    item_limit: z.number().int().min(1).max(50).optional(),
    include_preview: z.boolean().optional(),
    macro_values: z.record(z.string(), z.string().max(2000)).optional(),
    idempotency_key: idempotencyKeyInput,
  })
  .passthrough()
  .superRefine((r, ctx) => {
    if (!r.target_format_id && !r.target_format_ids && !r.creative_manifest?.format_id) ctx.addIssue({ code: 'custom', path: ['target_format_id'], message: 'is required (or target_format_ids, or creative_manifest.format_id)' });
    if (r.target_format_id && r.target_format_ids) ctx.addIssue({ code: 'custom', path: ['target_format_ids'], message: 'must not be given with target_format_id' });
  });

/**
 * RFC 3986 percent-encoding that leaves only unreserved characters (A-Z a-z 0-9 - . _ ~) as they
 * are: what AdCP requires of a catalog value substituted into a URL (encodeURIComponent alone
 * leaves ! ' ( ) * unescaped).
 */
export function encodeUnreserved(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** Catalog-item macros and the item field each stands for (AdCP universal macros). */
const ITEM_MACROS: Readonly<Record<string, (item: CatalogItem, contentIdType?: string) => unknown>> = {
  SKU: (i) => i.sku ?? i.item_id,
  GTIN: (i) => i.gtin,
  ITEM_ID: (i) => i.item_id,
  CONTENT_ID: (i, type) => (type && i[type] !== undefined ? i[type] : i.item_id),
  CATALOG_ITEM_ID: (i) => i.item_id,
};

/**
 * One substitution pass over a URL template: item macros by the item's values, other macros by
 * the caller's macro_values; every value percent-encoded, and never scanned again (a value that
 * itself looks like a macro stays literal: no nested expansion). Unknown macros are left for
 * the ad server to fill at serve time.
 */
export function substitute(template: string, item: CatalogItem | undefined, contentIdType: string | undefined, macroValues: Readonly<Record<string, string>>): string {
  return template.replace(/\{([A-Z][A-Z0-9_]*)\}/g, (whole, name: string) => {
    const fromItem = item && Object.hasOwn(ITEM_MACROS, name) ? ITEM_MACROS[name]!(item, contentIdType) : undefined;
    const value = fromItem ?? (Object.hasOwn(macroValues, name) ? macroValues[name] : undefined);
    return value === undefined || value === null ? whole : encodeUnreserved(String(value));
  });
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** The catalog a build names: a catalog asset in the manifest, else one of the account's catalogs the brief names. */
async function catalogOf(ctx: TaskContext, account: ResolvedAccount | undefined, message: string | undefined, assets: Record<string, unknown>) {
  if (!account) return undefined;
  const named = Object.values(assets).find((a): a is { catalog_id: string } => typeof a === 'object' && a !== null && (a as { asset_type?: unknown }).asset_type === 'catalog' && typeof (a as { catalog_id?: unknown }).catalog_id === 'string');
  const known = await buyerCatalogQueries.list(ctx.ports.readModels, ctx.principal.org, account.account_id);
  const id = named?.catalog_id ?? known.map((c) => c.catalog_id).sort((a, b) => b.length - a.length).find((c) => message?.includes(c));
  if (id === undefined) return undefined;
  const { state } = await loadState(ctx.ports.store, buyerCatalogStream(account.account_id, id), buyerCatalogDecider);
  if (!state.exists) throw new AppError('NOT_FOUND', `no catalog ${id} on this account: sync it with sync_catalogs`, 'creative_manifest.assets', { resource: 'catalog' });
  return { catalog_id: id, content_id_type: state.terms?.content_id_type, items: state.items };
}

/** A URL asset of the buyer's, or a tracker template from its brief ("use {SKU} in … tracker URLs"). */
function urlTemplates(assets: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, a] of Object.entries(assets)) {
    if (typeof a === 'object' && a !== null && (a as { asset_type?: unknown }).asset_type === 'url' && typeof (a as { url?: unknown }).url === 'string') out[k] = (a as { url: string }).url;
  }
  return out;
}

/**
 * AdCP `build_creative` on this seller: a manifest for one of its formats from the buyer's brief,
 * its assets and, for catalog-driven formats, the items of a synced catalog. This seller's
 * builder is a template, not a model: the headline is the brief's first sentence (or the item's
 * title), the image and landing page the item's, and every URL template of the buyer's is filled
 * per item by one pass of percent-encoded substitution.
 */
export const buildCreative = defineTask({
  mutating: true,
  description: 'Builds a creative manifest for one of this seller\'s formats from a brief, the buyer\'s assets and (catalog-driven) a synced catalog; a preview on request.',
  input,
  async run(i, ctx) {
    return withIdempotency(ctx.ports.store, ctx.principal.org, 'build_creative', i as Record<string, unknown>, async () => {
      const account = i.account !== undefined ? await resolveAccount(ctx, i.account) : undefined;
      const formats = await formatsFor(ctx, account);
      const targets = i.target_format_ids ?? [i.target_format_id ?? i.creative_manifest!.format_id!];
      const resolved = targets.map((t, n) => {
        // The rule sync_creatives and preview_creative apply too (placeholder agents in a sandbox only).
        const taken = acceptFormat(formats, t, ctx.origin, account?.sandbox === true);
        if ('refusal' in taken) {
          const field = i.target_format_ids ? `target_format_ids[${n}]` : i.target_format_id ? 'target_format_id' : 'creative_manifest.format_id';
          throw new AppError('VALIDATION_ERROR', taken.refusal.message, field, { accepted_values: taken.refusal.accepted_values });
        }
        return { requested: t, format: taken.format };
      });
      const given = i.creative_manifest?.assets ?? {};
      const catalog = await catalogOf(ctx, account, i.message, given);
      const items = catalog ? catalog.items.slice(0, i.item_limit ?? 3) : [];
      const templates = urlTemplates(given);
      const headline = (i.message?.split(/(?<=[.!?])\s/)[0] ?? '').slice(0, 200);
      const manifests = await Promise.all(
        resolved.map(async ({ requested, format }) => {
          const built = manifestFor(format, requested, headline, items, catalog?.content_id_type, templates, i.macro_values ?? {});
          // A catalog-driven build carries its catalog: the ad server renders from it at serve time.
          if (catalog) built.assets.catalog = { asset_type: 'catalog', catalog_id: catalog.catalog_id, type: 'product', ...(catalog.content_id_type ? { content_id_type: catalog.content_id_type } : {}) };
          const preview = i.include_preview ? await recordPreview(ctx, { name: headline || 'Built creative', format_id: requested, assets: built.assets }, format) : undefined;
          return { manifest: { format_id: { agent_url: requested.agent_url, id: requested.id }, assets: built.assets, preview_html: built.html }, preview };
        }),
      );
      const sandbox = account?.sandbox ? { sandbox: true } : {};
      if (!i.target_format_ids) return { creative_manifest: manifests[0]!.manifest, ...(manifests[0]!.preview ? { preview: manifests[0]!.preview } : {}), ...sandbox };
      return { creative_manifests: manifests.map((m) => m.manifest), ...(manifests[0]!.preview ? { preview: manifests[0]!.preview } : {}), ...sandbox };
    });
  },
});

function manifestFor(
  format: Format,
  requested: { agent_url: string; id: string },
  headline: string,
  items: readonly CatalogItem[],
  contentIdType: string | undefined,
  templates: Readonly<Record<string, string>>,
  macroValues: Readonly<Record<string, string>>,
): { assets: Record<string, unknown>; html: string } {
  const first = items[0];
  const title = headline || (typeof first?.title === 'string' ? first.title : '') || format.name;
  const assets: Record<string, unknown> = { headline: { asset_type: 'text', content: title } };
  if (first && typeof first.image_url === 'string' && format.dimensions) {
    assets.image = { asset_type: 'image', url: first.image_url, width: format.dimensions.width, height: format.dimensions.height };
  }
  if (first && typeof first.url === 'string') assets.click_url = { asset_type: 'url', url: first.url, url_type: 'clickthrough' };
  // The buyer's URL templates, filled for the first item (the manifest) and for each item (the HTML).
  for (const [k, t] of Object.entries(templates)) assets[k] = { asset_type: 'url', url: substitute(t, first, contentIdType, macroValues) };
  const cards = (items.length ? items : [undefined]).map((item) => {
    const href = typeof item?.url === 'string' ? substitute(item.url, item, contentIdType, macroValues) : '#';
    const pixels = Object.values(templates).map((t) => `<img alt="" width="1" height="1" src="${escapeHtml(substitute(t, item, contentIdType, macroValues))}">`);
    const label = typeof item?.title === 'string' ? item.title : title;
    const img = typeof item?.image_url === 'string' ? `<img alt="${escapeHtml(label)}" src="${escapeHtml(item.image_url)}">` : '';
    return `<a href="${escapeHtml(href)}">${img}<span>${escapeHtml(label)}</span></a>${pixels.join('')}`;
  });
  const size = format.dimensions ? ` style="width:${format.dimensions.width}px;height:${format.dimensions.height}px;overflow:hidden"` : '';
  const html = `<div class="adcp-creative" data-format="${escapeHtml(requested.id)}"${size}>${cards.join('')}</div>`;
  assets.html = { asset_type: 'html', content: html };
  return { assets, html };
}
