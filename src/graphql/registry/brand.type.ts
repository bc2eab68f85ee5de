import { Field, InputType, ObjectType, registerEnumType } from 'type-graphql';
import type { ResolvedBrand } from '../../domain/brands/resolve';

export enum BrandSource {
  HOSTED = 'hosted',
  BRAND_JSON = 'brand_json',
}
registerEnumType(BrandSource, { name: 'BrandSource', description: 'Where an identity came from: an operator’s registration (HOSTED, outranks crawls) or the domain’s brand.json (BRAND_JSON).' });

export enum BrandRelationship {
  INLINE = 'inline',
  MUTUAL = 'mutual',
  LEAF_ONLY = 'leaf_only',
  HOUSE_ONLY = 'house_only',
  STANDALONE = 'standalone',
  UNVERIFIABLE = 'unverifiable',
}
registerEnumType(BrandRelationship, {
  name: 'BrandRelationship',
  description:
    'How the brand’s place in a house portfolio was established: INLINE (the house’s brand.json lists it), MUTUAL (brand and house name each other), LEAF_ONLY (the brand claims a house that does not confirm it), HOUSE_ONLY, STANDALONE (no house), UNVERIFIABLE (the claimed house could not be read).',
});

@ObjectType({ description: 'A brand name in one language.' })
export class BrandName {
  @Field({ description: 'Language tag (en, fr, …).' })
  language!: string;

  @Field()
  name!: string;
}

@ObjectType({ description: 'One named color of the brand (primary, secondary, …).' })
export class BrandColor {
  @Field({ description: 'What the color is for, as the brand.json names it.' })
  role!: string;

  @Field({ description: 'The color as given (e.g. #ff0000).' })
  value!: string;
}

@ObjectType({ description: 'An agent the brand’s brand.json declares.' })
export class BrandAgent {
  @Field(() => String, { nullable: true, description: 'brand, creative, …' })
  type!: string | null;

  @Field(() => String, { nullable: true })
  id!: string | null;

  @Field()
  url!: string;
}

@ObjectType({ description: 'The house (corporate parent) a brand belongs to, or claims to.' })
export class BrandHouse {
  @Field()
  domain!: string;

  @Field(() => String, { nullable: true })
  name!: string | null;

  @Field({ description: 'Whether the house confirms the brand (its brand.json lists or references it, or an operator registered it so); false: only the brand claims it.' })
  confirmed!: boolean;
}

@ObjectType({ description: 'What the registry knows of a domain’s brand: its canonical identity, or `found: false`.' })
export class Brand {
  @Field({ description: 'The domain asked about (normalized: trimmed, lowercased).' })
  domain!: string;

  @Field({ description: 'False when no identity is known (never crawled or registered, or its brand.json names no brand); the other fields are then null or empty.' })
  found!: boolean;

  @Field(() => String, { nullable: true, description: 'The brand’s canonical id (brand.json `id`).' })
  canonicalId!: string | null;

  @Field(() => String, { nullable: true, description: 'The brand’s name (its first name in brand.json).' })
  name!: string | null;

  @Field(() => [BrandName], { description: 'Its names, per language.' })
  names!: BrandName[];

  @Field(() => String, { nullable: true, description: 'Its place in the portfolio: master, sub_brand, endorsed, independent, …' })
  kellerType!: string | null;

  @Field(() => BrandRelationship, { nullable: true })
  relationship!: BrandRelationship | null;

  @Field(() => BrandHouse, { nullable: true, description: 'The house it belongs to (confirmed) or claims (not confirmed); null for a standalone brand.' })
  house!: BrandHouse | null;

  @Field(() => String, { nullable: true, description: 'The brand agent’s URL, if it declares one.' })
  brandAgentUrl!: string | null;

  @Field(() => String, { nullable: true, description: 'URL of its logo, if it declares one (not fetched by the registry).' })
  logoUrl!: string | null;

  @Field(() => [BrandColor], { description: 'Its named colors, if it declares them.' })
  colors!: BrandColor[];

  @Field(() => [BrandAgent], { description: 'The agents it declares.' })
  agents!: BrandAgent[];

  @Field(() => BrandSource, { nullable: true })
  source!: BrandSource | null;

  @Field(() => String, { nullable: true, description: 'When the domain’s brand.json was last crawled (null: never).' })
  crawledAt!: string | null;
}

const text = (v: unknown): string | null => (typeof v === 'string' && v ? v : null);

/** A stored identity (the spec's ResolvedBrand, snake_case) as GraphQL's Brand; null: not found. */
export function toBrand(domain: string, identity: ResolvedBrand | null | undefined, crawledAt: string | null = null): Brand {
  const names = (identity?.names ?? []).flatMap((n) => Object.entries(n).filter(([, v]) => typeof v === 'string').map(([language, name]) => ({ language, name })));
  const colors = identity?.colors && typeof identity.colors === 'object' && !Array.isArray(identity.colors) ? Object.entries(identity.colors as Record<string, unknown>).filter(([, v]) => typeof v === 'string').map(([role, value]) => ({ role, value: value as string })) : [];
  const agents = (Array.isArray(identity?.agents) ? identity.agents : []).flatMap((a) => {
    const o = a && typeof a === 'object' ? (a as Record<string, unknown>) : {};
    return typeof o.url === 'string' ? [{ type: text(o.type), id: text(o.id), url: o.url }] : [];
  });
  const houseDomain = identity?.house_domain ?? identity?.claimed_house_domain;
  return {
    domain,
    found: Boolean(identity),
    canonicalId: text(identity?.canonical_id),
    name: text(identity?.brand_name),
    names,
    kellerType: text(identity?.keller_type),
    relationship: (identity?.relationship_trust as BrandRelationship | undefined) ?? null,
    house: houseDomain ? { domain: houseDomain, name: text(identity?.house_name), confirmed: Boolean(identity?.house_domain) } : null,
    brandAgentUrl: text(identity?.brand_agent_url),
    logoUrl: text(identity?.logo),
    colors,
    agents,
    source: (identity?.source as BrandSource | undefined) ?? null,
    crawledAt,
  };
}

@InputType({ description: 'A brand name in one language.' })
export class BrandNameInput {
  @Field({ description: 'Language tag (en, fr-CA, …).' })
  language!: string;

  @Field()
  name!: string;
}

@InputType({ description: 'One named color.' })
export class BrandColorInput {
  @Field({ description: 'What it is for: primary, secondary, accent, …' })
  role!: string;

  @Field({ description: 'A CSS hex color (#rgb or #rrggbb).' })
  value!: string;
}

@InputType({ description: 'A brand identity to register for a domain. Errors name the input field they are about in `extensions.field` (e.g. `identity.names[0].language`).' })
export class BrandIdentityInput {
  @Field({ description: 'The brand’s name.' })
  brandName!: string;

  @Field(() => String, { nullable: true, description: 'Its canonical id (letters, digits, _ . -); default: the domain.' })
  canonicalId?: string | null;

  @Field(() => [BrandNameInput], { nullable: true, description: 'Its names per language; default: brandName in English.' })
  names?: BrandNameInput[] | null;

  @Field(() => String, { nullable: true, description: 'master, sub_brand, endorsed, independent, …' })
  kellerType?: string | null;

  @Field(() => String, { nullable: true, description: 'The house (corporate parent) it belongs to; the registration confirms it.' })
  houseDomain?: string | null;

  @Field(() => String, { nullable: true, description: 'The house’s name.' })
  houseName?: string | null;

  @Field(() => String, { nullable: true, description: 'Its brand agent (an https URL).' })
  brandAgentUrl?: string | null;

  @Field(() => String, { nullable: true, description: 'Its logo (an https URL).' })
  logoUrl?: string | null;

  @Field(() => [BrandColorInput], { nullable: true })
  colors?: BrandColorInput[] | null;
}
