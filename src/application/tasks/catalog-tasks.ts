import MiniSearch from 'minisearch';
import { z } from 'zod';
import { catalogQueries, formatKey } from '../../../projections/catalog';
import { AppError } from '../../shared/errors';
import type { Format, Product } from '../../domain/catalog/catalog';
import { httpUrlInput, paginationInput } from '../validation';
import { defineTask } from './context';
import type { TaskPorts } from '../ports';
import { resolveAccount } from '../accounts';
import { catalogFor } from '../sandbox/seeds';
import { forcedDiscoveryArm, staleAdvisory } from '../sandbox/discovery';
import { sandboxCatalogQueries } from '../../../projections/sandbox-catalog';
import { proposalsForBrief, refine, refineEntry } from './proposals';
import { publicFormatId, resolveFormat } from '../formats';

const brandManifest = z.union([
  z.object({ url: httpUrlInput }).passthrough(),
  z
    .object({
      name: z.string().min(1),
      url: httpUrlInput.optional(),
      tagline: z.string().optional(),
      colors: z.record(z.string(), z.string().regex(/^#[0-9a-fA-F]{3,8}$/, 'must be a hex colour')).optional(),
    })
    .passthrough(),
]);
export const brandManifestSchema = brandManifest;

const getProductsInput = z
  .object({
    buying_mode: z.enum(['brief', 'wholesale', 'refine']).optional(),
    brief: z.string().max(10_000).optional(),
    refine: z.array(refineEntry).min(1).max(50).optional(),
    brand_manifest: brandManifest.optional(),
    filters: z
      .object({
        channels: z.array(z.string().min(1)).optional(),
        budget_range: z
          .object({ min: z.number().nonnegative().optional(), max: z.number().positive().optional() })
          .refine((r) => r.min === undefined || r.max === undefined || r.min <= r.max, { message: 'min must not exceed max', path: ['min'] })
          .optional(),
        delivery_type: z.enum(['guaranteed', 'non_guaranteed']).optional(),
        format_types: z.array(z.string().min(1)).optional(),
      })
      .passthrough()
      .optional(),
    account: z.unknown().optional(),
  })
  .passthrough()
  .superRefine((r, ctx) => {
    if (r.buying_mode === 'refine' && !r.refine) ctx.addIssue({ code: 'custom', path: ['refine'], message: 'is required when buying_mode is refine' });
    if (r.refine && r.buying_mode !== 'refine') ctx.addIssue({ code: 'custom', path: ['buying_mode'], message: 'must be refine when refine is given' });
    if (r.buying_mode === 'wholesale' && r.brief !== undefined) ctx.addIssue({ code: 'custom', path: ['brief'], message: 'must not be given in wholesale mode (raw inventory, no curation)' });
  });

/** What a buyer sees of a product: the operator's simulation settings stay private. */
function toWire(p: Product, origin: string | undefined, relevance?: { score: number; terms: string[] }) {
  const { delivery: _delivery, publisher_domains, ...rest } = p;
  return {
    ...rest,
    format_ids: p.format_ids.map((id) => publicFormatId(id, origin)),
    publisher_properties: publisher_domains.map((d) => ({ publisher_domain: d, selection_type: 'all' })),
    ...(relevance ? { brief_relevance: relevance.terms.length ? `matches ${relevance.terms.join(', ')}` : 'no terms of the brief matched', relevance_score: Math.round(relevance.score * 1000) / 1000 } : {}),
  };
}

/** The whole catalog in its order as an operator sees it: the buyer's view of each product and its ad-server capacity. */
export async function operatorCatalog(ports: Pick<TaskPorts, 'readModels'>, origin: string | undefined) {
  return (await catalogQueries.products(ports.readModels)).map((p) => ({ ...toWire(p, origin), delivery: p.delivery }));
}

/** The least a package of this product can cost: a flat fee, or a stated minimum spend. */
function minimumSpend(p: Product): number {
  return Math.min(
    ...p.pricing_options.map((o) => Math.max(o.pricing_model === 'flat-fee' ? (o.price ?? 0) : 0, Number((o as { min_spend_per_package?: number }).min_spend_per_package ?? 0))),
  );
}

/**
 * BM25 (MiniSearch's BM25+) over name, description, channels and targeting text, with prefix and
 * light fuzzy matching so "sport" finds "sports". Products that match nothing keep catalog order
 * after the ranked ones: a brief narrows the order, the filters narrow the set.
 */
function rank(products: Product[], brief: string): { product: Product; score: number; terms: string[] }[] {
  const index = new MiniSearch<{ id: string; name: string; description: string; channels: string; targeting: string }>({
    fields: ['name', 'description', 'channels', 'targeting'],
    searchOptions: { boost: { name: 2, targeting: 1.5 }, prefix: true, fuzzy: 0.2, combineWith: 'OR' },
  });
  index.addAll(
    products.map((p) => ({
      id: p.product_id,
      name: p.name,
      description: p.description,
      channels: p.channels.join(' '),
      targeting: JSON.stringify(p.targeting).replace(/[{}[\]":,_]/g, ' '),
    })),
  );
  const hits = new Map(index.search(brief).map((h) => [String(h.id), h]));
  return products
    .map((product, order) => ({ product, order, score: hits.get(product.product_id)?.score ?? 0, terms: hits.get(product.product_id)?.terms ?? [] }))
    .sort((a, b) => b.score - a.score || a.order - b.order);
}

export const getProducts = defineTask({
  description: 'Products from the catalog, ranked against the brief (BM25) and filtered.',
  input: getProductsInput,
  async run(input, ctx) {
    const f = input.filters ?? {};
    const account = input.account !== undefined ? await resolveAccount(ctx, input.account) : undefined;
    const forced = await forcedDiscoveryArm(ctx, account, input.buying_mode, input as Record<string, unknown>);
    if (forced) return forced;
    const stale = await staleAdvisory(ctx, account);
    const advisories = stale ? { errors: [stale] } : {};
    const catalog = await catalogFor(ctx, account);
    // Whether this answer holds for every buyer (the published catalog) or only for this account:
    // what a buyer keys its cache by (the spec's `cache_scope`).
    const cache_scope = catalog.accountSpecific ? 'account' : 'public';
    const formats = new Map(catalog.formats.map((fm) => [`${fm.format_id.agent_url}#${fm.format_id.id}`, fm]));
    const filtered = catalog.products.filter((p) => {
      if (f.channels && !p.channels.some((c) => f.channels!.includes(c))) return false;
      if (f.delivery_type && p.delivery_type !== f.delivery_type) return false;
      if (f.format_types && !p.format_ids.some((id) => f.format_types!.includes(formats.get(`${id.agent_url}#${id.id}`)?.type ?? ''))) return false;
      if (f.budget_range?.max !== undefined && minimumSpend(p) > f.budget_range.max) return false;
      return true;
    });
    if (input.refine) {
      const refined = await refine(ctx, input.refine, filtered);
      const byId = new Map(filtered.map((p) => [p.product_id, p]));
      return { products: refined.productIds.map((id) => toWire(byId.get(id)!, ctx.origin)), proposals: refined.proposals, refinement_applied: refined.refinement_applied, cache_scope, ...advisories };
    }
    const brief = input.brief?.trim();
    if (!brief) return { products: filtered.map((p) => toWire(p, ctx.origin)), cache_scope, ...advisories };
    const ranked = rank(filtered, brief);
    // Proposals are the seller's curation: offered for a brief, never in wholesale mode.
    const proposals = await proposalsForBrief(ctx, filtered, new Map(ranked.map((r) => [r.product.product_id, r])));
    return { products: ranked.map((r) => toWire(r.product, ctx.origin, r)), ...(proposals.length ? { proposals } : {}), cache_scope, ...advisories };
  },
});

const emptyInput = z.object({}).passthrough();

export const listAuthorizedProperties = defineTask({
  description: 'The publisher domains this agent is authorized to sell.',
  input: emptyInput,
  async run(_input, { ports }) {
    const properties = await catalogQueries.properties(ports.readModels);
    return { publisher_domains: properties.map((p) => p.publisher_domain) };
  },
});

const listFormatsInput = z
  .object({
    format_types: z.array(z.string().min(1)).optional(),
    format_ids: z.array(z.object({ agent_url: z.string(), id: z.string() }).passthrough()).max(100).optional(),
    account: z.unknown().optional(),
    pagination: paginationInput.optional(),
  })
  .passthrough();

export const listCreativeFormats = defineTask({
  description: 'Creative formats: dimensions, requirements and asset schemas.',
  input: listFormatsInput,
  async run(input, ctx) {
    const account = input.account !== undefined ? await resolveAccount(ctx, input.account) : undefined;
    let formats: Format[] = (await catalogFor(ctx, account)).formats;
    // A lookup by id resolves any format the caller's products name, its sandbox fixtures too.
    if (input.format_ids && !account) formats = [...formats, ...(await sandboxCatalogQueries.formats(ctx.ports.readModels, ctx.principal.org))];
    if (input.format_types) formats = formats.filter((f) => input.format_types!.includes(f.type));
    // Format ids compare by agent and id alone (a reference may carry dimensions too).
    if (input.format_ids) formats = formats.filter((f) => input.format_ids!.some((id) => resolveFormat([f], id, ctx.origin, { placeholders: false })));
    const shown = (list: Format[]) => list.map((f) => ({ ...f, format_id: publicFormatId(f.format_id, ctx.origin) }));
    if (!input.pagination) return { formats: shown(formats) };
    // The cursor names the last format of the page (base64url of its agent and id).
    const cursor = input.pagination.cursor;
    let start = 0;
    if (cursor !== undefined) {
      const key = Buffer.from(cursor, 'base64url').toString('utf8');
      start = formats.findIndex((f) => formatKey(f.format_id) === key) + 1;
      if (start === 0) throw new AppError('VALIDATION_ERROR', 'cursor is not one this agent issued (or its format is gone)', 'pagination.cursor');
    }
    const limit = input.pagination.max_results ?? 50;
    const page = formats.slice(start, start + limit);
    const hasMore = start + limit < formats.length;
    return {
      formats: shown(page),
      pagination: { has_more: hasMore, ...(hasMore ? { cursor: Buffer.from(formatKey(page[page.length - 1]!.format_id)).toString('base64url') } : {}), total_count: formats.length },
    };
  },
});
