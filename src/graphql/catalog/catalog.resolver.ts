import { GraphQLJSONObject } from '../json-object';
import { Arg, Ctx, Mutation, Query, Resolver } from 'type-graphql';
import type { Format } from '../../domain/catalog/catalog';
import { operatorCatalog } from '../../application/tasks/catalog-tasks';
import { AppError } from '../../shared/errors';
import { isOperator } from '../buys/media-buy-change';
import { runTask } from '../tasks';
import type { GraphQLContext } from '../context';
import { CreativeFormat, Product, ProductFiltersInput, Proposal, RefineInput, Refinement, type ProductTargeting } from './catalog.type';

type WireProduct = Record<string, any>;

const formatId = (f: { agent_url: string; id: string }) => ({ agentUrl: f.agent_url, id: f.id });

const texts = (v: unknown): string[] => (Array.isArray(v) ? v : v === undefined || v === null ? [] : [v]).map((x) => (typeof x === 'string' ? x : JSON.stringify(x)));

/** The catalog's open targeting record: the three dimensions buyers filter on by name, the rest as text. */
function toTargeting(t: Record<string, unknown> | undefined): ProductTargeting {
  const { geo_countries, audiences, keywords, ...other } = t ?? {};
  return { geoCountries: texts(geo_countries), audiences: texts(audiences), keywords: texts(keywords), other: Object.entries(other).map(([key, v]) => ({ key, values: texts(v) })) };
}

function toProduct(p: WireProduct): Product {
  return {
    productId: p.product_id,
    name: p.name,
    description: p.description,
    channels: p.channels,
    deliveryType: p.delivery_type,
    formatIds: p.format_ids.map(formatId),
    pricingOptions: p.pricing_options.map((o: Record<string, any>) => ({
      pricingOptionId: o.pricing_option_id,
      pricingModel: o.pricing_model,
      price: o.price,
      floor: o.floor,
      currency: o.currency,
    })),
    publisherProperties: p.publisher_properties.map((x: Record<string, string>) => ({ publisherDomain: x.publisher_domain, selectionType: x.selection_type })),
    targeting: toTargeting(p.targeting),
    requiresApproval: p.requires_approval,
    briefRelevance: p.brief_relevance,
    relevanceScore: p.relevance_score,
  };
}

function toProposal(p: WireProduct): Proposal {
  return {
    proposalId: p.proposal_id,
    name: p.name,
    description: p.description,
    allocations: p.allocations.map((a: Record<string, any>) => ({ productId: a.product_id, pricingOptionId: a.pricing_option_id, allocationPercentage: a.allocation_percentage, rationale: a.rationale })),
    proposalStatus: p.proposal_status,
    expiresAt: p.expires_at,
    briefAlignment: p.brief_alignment,
  };
}

const filtersOf = (filters?: ProductFiltersInput) =>
  filters
    ? { channels: filters.channels, budget_range: filters.budgetRange ? { ...filters.budgetRange } : undefined, delivery_type: filters.deliveryType, format_types: filters.formatTypes }
    : undefined;

/** GraphQL faces of get_products, list_creative_formats and list_authorized_properties. */
@Resolver()
export class CatalogResolver {
  @Query(() => [Product], { description: 'get_products: the catalog ranked against the brief, then filtered. Buyer key required.' })
  async products(
    @Ctx() ctx: GraphQLContext,
    @Arg('brief', () => String, { nullable: true }) brief?: string,
    @Arg('brandManifest', () => GraphQLJSONObject, { nullable: true }) brandManifest?: Record<string, unknown>,
    @Arg('filters', () => ProductFiltersInput, { nullable: true }) filters?: ProductFiltersInput,
  ): Promise<Product[]> {
    const input = { brief: brief ?? undefined, brand_manifest: brandManifest ?? undefined, filters: filtersOf(filters) };
    const result = await runTask(ctx, 'get_products', input);
    return (result.products as WireProduct[]).map(toProduct);
  }

  @Query(() => [Product], { description: 'The seller’s whole catalog in its order, with each product’s delivery capacity. Seller or admin key.' })
  async catalog(@Ctx() ctx: GraphQLContext): Promise<Product[]> {
    if (!ctx.principal) throw new AppError('UNAUTHENTICATED', 'a Bearer API key is required');
    if (!isOperator(ctx.principal)) throw new AppError('FORBIDDEN', 'the catalog with its capacity is for seller and admin keys');
    return (await operatorCatalog(ctx.app.ports, ctx.origin)).map((p) => ({ ...toProduct(p), capacity: { dailyImpressions: p.delivery.daily_impression_capacity, ctr: p.delivery.ctr } }));
  }

  @Query(() => [Proposal], { description: 'get_products\' proposals: the seller\'s curated plans for a brief, as this buyer refined them. Buyer key required.' })
  async proposals(
    @Ctx() ctx: GraphQLContext,
    @Arg('brief', () => String) brief: string,
    @Arg('filters', () => ProductFiltersInput, { nullable: true }) filters?: ProductFiltersInput,
  ): Promise<Proposal[]> {
    const result = await runTask(ctx, 'get_products', { buying_mode: 'brief', brief, filters: filtersOf(filters) });
    return ((result.proposals ?? []) as WireProduct[]).map(toProposal);
  }

  @Mutation(() => Refinement, { description: 'get_products in refine mode: product and proposal changes, finalizing a proposal (a hold). Recorded per buyer. Buyer key required.' })
  async refineProducts(
    @Ctx() ctx: GraphQLContext,
    @Arg('refine', () => [RefineInput]) refine: RefineInput[],
    @Arg('filters', () => ProductFiltersInput, { nullable: true }) filters?: ProductFiltersInput,
  ): Promise<Refinement> {
    // Only the fields given: each scope's entry is a closed shape.
    const entries = refine.map((r) => Object.fromEntries(Object.entries({ scope: r.scope, product_id: r.productId, proposal_id: r.proposalId, action: r.action, ask: r.ask }).filter(([, v]) => v != null)));
    const result = await runTask(ctx, 'get_products', { buying_mode: 'refine', refine: entries, filters: filtersOf(filters) });
    return {
      products: (result.products as WireProduct[]).map(toProduct),
      proposals: (result.proposals as WireProduct[]).map(toProposal),
      refinementApplied: (result.refinement_applied as WireProduct[]).map((o) => ({ scope: o.scope, productId: o.product_id, proposalId: o.proposal_id, status: o.status, notes: o.notes })),
    };
  }

  @Query(() => [CreativeFormat], { description: 'list_creative_formats. Buyer key required.' })
  async creativeFormats(
    @Ctx() ctx: GraphQLContext,
    @Arg('formatTypes', () => [String], { nullable: true }) formatTypes?: string[],
  ): Promise<CreativeFormat[]> {
    const result = await runTask(ctx, 'list_creative_formats', { format_types: formatTypes ?? undefined });
    return (result.formats as Format[]).map((f) => ({ ...f, formatId: formatId(f.format_id), requirements: f.requirements, assets: f.assets }));
  }

  @Query(() => [String], { description: 'list_authorized_properties: the publisher domains this agent sells. Buyer key required.' })
  async authorizedProperties(@Ctx() ctx: GraphQLContext): Promise<string[]> {
    return (await runTask(ctx, 'list_authorized_properties', {})).publisher_domains as string[];
  }
}
