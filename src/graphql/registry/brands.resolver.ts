import { Arg, Ctx, Mutation, Query, Resolver } from 'type-graphql';
import { resolveBrands } from '../../application/brand-reads';
import { registerBrand } from '../../application/brands';
import { untilProjected } from '../../application/projected';
import { normalizeDomain, type ResolvedBrand } from '../../domain/brands/resolve';
import { AppError } from '../../shared/errors';
import type { GraphQLContext } from '../context';
import { Brand, BrandIdentityInput, toBrand } from './brand.type';

export function requireAdmin(ctx: GraphQLContext) {
  if (!ctx.principal) throw new AppError('UNAUTHENTICATED', 'a Bearer API key is required');
  if (ctx.principal.role !== 'admin') throw new AppError('FORBIDDEN', 'admin role required');
  return ctx.principal;
}

export function domainArg(value: string, field = 'domain'): string {
  if (value.trim().length > 253) throw new AppError('VALIDATION_ERROR', `${field} is longer than 253 characters, the most DNS allows`, field);
  const d = normalizeDomain(value);
  if (!d) throw new AppError('VALIDATION_ERROR', `${field} must be a bare multi-label DNS name`, field);
  return d;
}

const LANGUAGE = /^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$/;
const CANONICAL_ID = /^[A-Za-z0-9_.-]{1,100}$/;
const KELLER_TYPE = /^[a-z_]{1,40}$/;
const COLOR = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i;

function words(value: string, field: string, max = 200): string {
  const v = value.trim();
  if (!v) throw new AppError('VALIDATION_ERROR', `${field} must not be empty`, field);
  if (v.length > max) throw new AppError('VALIDATION_ERROR', `${field} is longer than ${max} characters`, field);
  return v;
}

function httpsUrl(value: string, field: string): string {
  let url: URL | undefined;
  try {
    url = new URL(value.trim());
  } catch {
    url = undefined;
  }
  if (!url || url.protocol !== 'https:' || value.length > 2048) throw new AppError('VALIDATION_ERROR', `${field} must be an https URL`, field);
  return url.href;
}

function matching(value: string, pattern: RegExp, field: string, what: string): string {
  const v = value.trim();
  if (!pattern.test(v)) throw new AppError('VALIDATION_ERROR', `${field} must be ${what}`, field);
  return v;
}

/** The registration as the stored identity (the spec's ResolvedBrand), each bad value refused at its input field. */
function identityOf(domain: string, input: BrandIdentityInput): Omit<ResolvedBrand, 'source' | 'canonical_domain'> {
  const brandName = words(input.brandName, 'identity.brandName');
  if ((input.names?.length ?? 0) > 20) throw new AppError('VALIDATION_ERROR', 'identity.names holds at most 20 names', 'identity.names');
  if ((input.colors?.length ?? 0) > 10) throw new AppError('VALIDATION_ERROR', 'identity.colors holds at most 10 colors', 'identity.colors');
  const names = input.names?.length
    ? input.names.map((n, i) => ({ [matching(n.language, LANGUAGE, `identity.names[${i}].language`, 'a language tag such as en or fr-CA')]: words(n.name, `identity.names[${i}].name`) }))
    : [{ en: brandName }];
  const colors = input.colors?.length
    ? Object.fromEntries(input.colors.map((c, i) => [matching(c.role, KELLER_TYPE, `identity.colors[${i}].role`, 'lowercase letters and _'), matching(c.value, COLOR, `identity.colors[${i}].value`, 'a hex color such as #ff0000')]))
    : undefined;
  const houseDomain = input.houseDomain ? domainArg(input.houseDomain, 'identity.houseDomain') : undefined;
  return {
    canonical_id: input.canonicalId ? matching(input.canonicalId, CANONICAL_ID, 'identity.canonicalId', '1 to 100 letters, digits, _ . or -') : domain,
    brand_name: brandName,
    names,
    ...(input.kellerType ? { keller_type: matching(input.kellerType, KELLER_TYPE, 'identity.kellerType', 'lowercase letters and _ (master, sub_brand, …)') } : {}),
    // An operator registering the brand under a house speaks for both: the relationship is confirmed.
    relationship_trust: houseDomain ? 'inline' : 'standalone',
    ...(houseDomain ? { house_domain: houseDomain } : {}),
    ...(input.houseName ? { house_name: words(input.houseName, 'identity.houseName') } : {}),
    ...(input.brandAgentUrl ? { brand_agent_url: httpsUrl(input.brandAgentUrl, 'identity.brandAgentUrl') } : {}),
    ...(input.logoUrl ? { logo: httpsUrl(input.logoUrl, 'identity.logoUrl') } : {}),
    ...(colors ? { colors } : {}),
  };
}

/** Brand identities in the registry: what crawls found and what operators registered. */
@Resolver()
export class BrandResolver {
  @Query(() => [Brand], { description: 'Canonical brand identities by domain, one per distinct domain in the order asked (`found: false`: unknown). Public, like the REST bulk endpoint.' })
  async brands(@Ctx() ctx: GraphQLContext, @Arg('domains', () => [String], { description: 'At most 100 bare DNS names.' }) domains: string[]): Promise<Brand[]> {
    if (domains.length > 100) throw new AppError('VALIDATION_ERROR', 'at most 100 domains', 'domains');
    const normalized = [...new Set(domains.map((d, i) => domainArg(d, `domains[${i}]`)))];
    const known = await resolveBrands(ctx.app.ports, normalized);
    return normalized.map((d) => toBrand(d, known.get(d)?.identity, known.get(d)?.crawled_at ?? null));
  }

  @Mutation(() => Brand, { description: 'Fetches https://{domain}/.well-known/brand.json now, records what it names and answers it (`found: false`: it names no brand or could not be read) (admin).' })
  async crawlBrand(@Ctx() ctx: GraphQLContext, @Arg('domain') domain: string): Promise<Brand> {
    requireAdmin(ctx);
    const d = domainArg(domain);
    const identity = await ctx.app.brandCrawler.crawl(d);
    await untilProjected(ctx.app.ports);
    const known = await resolveBrands(ctx.app.ports, [d]);
    // What the crawl found (found: false when brand.json names no brand), even where a registration outranks it.
    return toBrand(d, identity, known.get(d)?.crawled_at ?? null);
  }

  @Mutation(() => Brand, { description: 'Registers a brand identity for a domain (source HOSTED; outranks crawls) (admin).' })
  async registerBrand(@Ctx() ctx: GraphQLContext, @Arg('domain') domain: string, @Arg('identity', () => BrandIdentityInput) identity: BrandIdentityInput): Promise<Brand> {
    const principal = requireAdmin(ctx);
    const d = domainArg(domain);
    const full = await registerBrand(ctx.app.ports.store, d, identityOf(d, identity), new Date().toISOString(), principal.keyId);
    await untilProjected(ctx.app.ports);
    const known = await resolveBrands(ctx.app.ports, [d]);
    return toBrand(d, full, known.get(d)?.crawled_at ?? null);
  }
}
