import { z } from 'zod';
import { assertNever, type Decider } from '../decider';

/**
 * The operator's catalog: products with pricing options, creative formats and publisher
 * properties, edited as a JSON file (CATALOG_FILE; the embedded start ships a demo). Publishing
 * a changed file appends one CatalogPublished event; the catalog projection serves it.
 */
/**
 * A format this seller defines itself (not the standard creative agent's) is written without an
 * `agent_url`. It is kept under OWN_FORMAT_AGENT (a reserved domain no one else can use) and
 * shown to buyers under this agent's own URL (`<origin>/mcp`); see application/formats.ts.
 */
export const OWN_FORMAT_AGENT = 'https://this-seller.invalid';

const formatId = z.object({ agent_url: z.string().url().default(OWN_FORMAT_AGENT), id: z.string().regex(/^[A-Za-z0-9_-]+$/) });

const pricingOption = z
  .object({
    pricing_option_id: z.string().min(1),
    pricing_model: z.string().min(1),
    price: z.number().positive().optional(),
    floor: z.number().nonnegative().optional(),
    currency: z.string().regex(/^[A-Z]{3}$/).default('USD'),
  })
  .passthrough()
  .refine((o) => o.price !== undefined || o.floor !== undefined, { message: 'needs a price (fixed) or a floor (auction)' });

const product = z
  .object({
    product_id: z.string().regex(/^[\w.-]{1,100}$/),
    name: z.string().min(1),
    description: z.string().min(1),
    publisher_domains: z.array(z.string().min(1)).min(1),
    channels: z.array(z.string().min(1)).min(1),
    delivery_type: z.enum(['guaranteed', 'non_guaranteed']),
    format_ids: z.array(formatId).min(1),
    targeting: z.record(z.string(), z.unknown()).default({}),
    pricing_options: z.array(pricingOption).min(1),
    delivery: z.object({ daily_impression_capacity: z.number().int().positive(), ctr: z.number().min(0).max(1) }),
    requires_approval: z.boolean().default(false),
  })
  .passthrough();

const format = z
  .object({
    format_id: formatId,
    name: z.string().min(1),
    type: z.string().min(1),
    dimensions: z.object({ width: z.number().int().positive(), height: z.number().int().positive() }).optional(),
    requirements: z.record(z.string(), z.unknown()).default({}),
    assets: z.array(z.object({ asset_id: z.string(), asset_type: z.string(), required: z.boolean() }).passthrough()).default([]),
  })
  .passthrough();

/**
 * A curated media plan: a channel mix the seller recommends, offered as a proposal beside a
 * brief's products. Each allocation names a channel and may name the product it prefers; it is
 * filled from the products the buyer's request can see (see application/tasks/proposals.ts).
 */
const plan = z
  .object({
    proposal_id: z.string().regex(/^[\w.-]{1,100}$/),
    name: z.string().min(1).max(500),
    description: z.string().min(1).max(2000).optional(),
    allocations: z
      .array(
        z.object({
          channel: z.string().min(1),
          allocation_percentage: z.number().positive().max(100),
          product_id: z.string().min(1).optional(),
          pricing_option_id: z.string().min(1).optional(),
          rationale: z.string().min(1).optional(),
        }),
      )
      .min(1),
  })
  .passthrough();

export const catalogFileSchema = z
  .object({
    publisher_properties: z.array(z.object({ publisher_domain: z.string().min(1) }).passthrough()).min(1),
    formats: z.array(format).min(1),
    products: z.array(product).min(1),
    proposals: z.array(plan).default([]),
    approval: z.object({ budget_threshold: z.number().positive().optional() }).default({}),
  })
  .superRefine((c, ctx) => {
    const formats = new Set(c.formats.map((f) => `${f.format_id.agent_url}#${f.format_id.id}`));
    const domains = new Set(c.publisher_properties.map((p) => p.publisher_domain));
    const ids = new Set<string>();
    c.products.forEach((p, i) => {
      if (ids.has(p.product_id)) ctx.addIssue({ code: 'custom', path: ['products', i, 'product_id'], message: 'duplicate product_id' });
      ids.add(p.product_id);
      p.format_ids.forEach((f, j) => {
        if (!formats.has(`${f.agent_url}#${f.id}`)) {
          ctx.addIssue({ code: 'custom', path: ['products', i, 'format_ids', j], message: `format ${f.id} is not in formats[]` });
        }
      });
      p.publisher_domains.forEach((d, j) => {
        if (!domains.has(d)) ctx.addIssue({ code: 'custom', path: ['products', i, 'publisher_domains', j], message: `${d} is not in publisher_properties[]` });
      });
    });
    const plans = new Set<string>();
    c.proposals.forEach((pl, i) => {
      if (plans.has(pl.proposal_id)) ctx.addIssue({ code: 'custom', path: ['proposals', i, 'proposal_id'], message: 'duplicate proposal_id' });
      plans.add(pl.proposal_id);
      const sum = pl.allocations.reduce((s, a) => s + a.allocation_percentage, 0);
      if (Math.abs(sum - 100) > 0.01) ctx.addIssue({ code: 'custom', path: ['proposals', i, 'allocations'], message: `allocation percentages must sum to 100 (they sum to ${sum})` });
      pl.allocations.forEach((a, j) => {
        const at = ['proposals', i, 'allocations', j];
        if (a.pricing_option_id !== undefined && a.product_id === undefined) ctx.addIssue({ code: 'custom', path: [...at, 'pricing_option_id'], message: 'names a pricing option of no product (add product_id)' });
        if (a.product_id === undefined) return;
        const prod = c.products.find((p) => p.product_id === a.product_id);
        if (!prod) ctx.addIssue({ code: 'custom', path: [...at, 'product_id'], message: `${a.product_id} is not in products[]` });
        else if (!prod.channels.includes(a.channel)) ctx.addIssue({ code: 'custom', path: [...at, 'product_id'], message: `${a.product_id} is not sold in channel ${a.channel}` });
        else if (a.pricing_option_id !== undefined && !prod.pricing_options.some((o) => o.pricing_option_id === a.pricing_option_id)) {
          ctx.addIssue({ code: 'custom', path: [...at, 'pricing_option_id'], message: `${a.product_id} has no pricing option ${a.pricing_option_id}` });
        }
      });
    });
  });

export type Catalog = z.infer<typeof catalogFileSchema>;
export type Product = Catalog['products'][number];
export type Format = Catalog['formats'][number];
export type PricingOption = Product['pricing_options'][number];
export type Plan = Catalog['proposals'][number];

export const CATALOG_STREAM = 'catalog';

export type CatalogEvent = {
  readonly type: 'CatalogPublished';
  readonly data: { readonly hash: string; readonly source: string; readonly catalog: Catalog; readonly publishedAt: string };
};
export type CatalogCommand = {
  readonly type: 'PublishCatalog';
  readonly hash: string;
  readonly source: string;
  readonly catalog: Catalog;
  readonly now: string;
};
export type CatalogState = { readonly hash: string | null };

export const catalogDecider: Decider<CatalogCommand, CatalogEvent, CatalogState> = {
  initialState: () => ({ hash: null }),
  decide(command, state) {
    switch (command.type) {
      case 'PublishCatalog':
        // Restarts with an unchanged file append nothing.
        if (state.hash === command.hash) return [];
        return [{ type: 'CatalogPublished', data: { hash: command.hash, source: command.source, catalog: command.catalog, publishedAt: command.now } }];
      default:
        return assertNever(command.type);
    }
  },
  evolve(_state, event) {
    switch (event.type) {
      case 'CatalogPublished':
        return { hash: event.data.hash };
      default:
        return assertNever(event.type);
    }
  },
};

/** `cpm-auction` style models price by bid; everything else carries a fixed price. */
export function isAuction(option: PricingOption): boolean {
  return option.price === undefined;
}
