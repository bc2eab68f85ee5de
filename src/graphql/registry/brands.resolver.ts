import { GraphQLJSONObject } from 'graphql-scalars';
import { Arg, Ctx, Mutation, Query, Resolver } from 'type-graphql';
import { brandQueries } from '../../../projections/brands';
import { registerBrand } from '../../application/brands';
import { normalizeDomain } from '../../domain/brands/resolve';
import { AppError } from '../../shared/errors';
import type { GraphQLContext } from '../context';

function requireAdmin(ctx: GraphQLContext) {
  if (!ctx.principal) throw new AppError('UNAUTHENTICATED', 'a Bearer API key is required');
  if (ctx.principal.role !== 'admin') throw new AppError('FORBIDDEN', 'admin role required');
  return ctx.principal;
}

function domainArg(value: string): string {
  const d = normalizeDomain(value);
  if (!d) throw new AppError('VALIDATION_ERROR', 'domain must be a bare multi-label DNS name', 'domain');
  return d;
}

/** Brand identities in the registry: what crawls found and what operators registered. */
@Resolver()
export class BrandResolver {
  @Query(() => GraphQLJSONObject, { description: 'Canonical brand identities by domain (null: unknown). Public, like the REST bulk endpoint.' })
  async brands(@Ctx() ctx: GraphQLContext, @Arg('domains', () => [String]) domains: string[]) {
    if (domains.length > 100) throw new AppError('VALIDATION_ERROR', 'at most 100 domains', 'domains');
    const normalized = [...new Set(domains.map(domainArg))];
    const known = await brandQueries.resolve(ctx.app.readModels, normalized);
    return Object.fromEntries(normalized.map((d) => [d, known.get(d)?.identity ?? null]));
  }

  @Mutation(() => GraphQLJSONObject, { nullable: true, description: 'Fetches https://{domain}/.well-known/brand.json now and records what it names (admin).' })
  async crawlBrand(@Ctx() ctx: GraphQLContext, @Arg('domain') domain: string) {
    requireAdmin(ctx);
    const identity = await ctx.app.brandCrawler.crawl(domainArg(domain));
    await ctx.app.projections.waitFor(ctx.app.store.appendedUpTo());
    return identity;
  }

  @Mutation(() => GraphQLJSONObject, { description: 'Registers a brand identity for a domain (source hosted; outranks crawls). identity: {canonical_id, brand_name, names, …} (admin).' })
  async registerBrand(@Ctx() ctx: GraphQLContext, @Arg('domain') domain: string, @Arg('identity', () => GraphQLJSONObject) identity: Record<string, unknown>) {
    const principal = requireAdmin(ctx);
    if (typeof identity.brand_name !== 'string' || !identity.brand_name) throw new AppError('VALIDATION_ERROR', 'identity.brand_name is required', 'identity.brandName');
    const d = domainArg(domain);
    const full = await registerBrand(
      ctx.app.store,
      d,
      { relationship_trust: 'standalone', names: [], canonical_id: d, ...identity } as never,
      new Date().toISOString(),
      principal.keyId,
    );
    await ctx.app.projections.waitFor(ctx.app.store.appendedUpTo());
    return full;
  }
}
