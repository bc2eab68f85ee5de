/** AdCP's canonical brand identity (the reference registry's ResolvedBrand, trimmed to what we derive). */
export interface ResolvedBrand {
  canonical_id: string;
  canonical_domain: string;
  brand_name: string;
  names: Record<string, string>[];
  keller_type?: string;
  house_domain?: string;
  claimed_house_domain?: string;
  house_name?: string;
  relationship_trust: 'inline' | 'mutual' | 'leaf_only' | 'house_only' | 'standalone' | 'unverifiable';
  brand_agent_url?: string;
  logo?: string;
  colors?: unknown;
  agents?: unknown[];
  source: 'hosted' | 'brand_json';
}

type Doc = Record<string, any>;
/** Fetches a brand.json by URL (SSRF-guarded by the caller); throws when it cannot. */
export type FetchDoc = (url: string) => Promise<unknown>;

export const MAX_BRAND_HOPS = 3;
const wellKnown = (domain: string) => `https://${domain}/.well-known/brand.json`;

function nameOf(brand: Doc, fallback: string): string {
  const first = Array.isArray(brand.names) ? brand.names[0] : undefined;
  const v = first && typeof first === 'object' ? Object.values(first)[0] : undefined;
  return typeof v === 'string' ? v : typeof brand.id === 'string' ? brand.id : fallback;
}

function identityOf(brand: Doc, domain: string, extra: Partial<ResolvedBrand>): ResolvedBrand {
  const agents = Array.isArray(brand.agents) ? brand.agents : undefined;
  const agentUrl = brand.brand_agent?.url ?? agents?.find((a: Doc) => a?.type === 'brand')?.url;
  const logo = Array.isArray(brand.logos) ? brand.logos.find((l: Doc) => typeof l?.url === 'string')?.url : undefined;
  return {
    canonical_id: String(brand.id ?? domain),
    canonical_domain: domain,
    brand_name: nameOf(brand, domain),
    names: Array.isArray(brand.names) ? brand.names.filter((n: unknown) => n && typeof n === 'object') : [],
    ...(typeof brand.keller_type === 'string' ? { keller_type: brand.keller_type } : {}),
    relationship_trust: 'standalone',
    ...(agentUrl ? { brand_agent_url: agentUrl } : {}),
    ...(logo ? { logo } : {}),
    ...(brand.colors ? { colors: brand.colors } : {}),
    ...(agents ? { agents } : {}),
    source: 'brand_json',
    ...extra,
  };
}

/** The brand of a house portfolio that owns `domain` as a property (or by its url). */
function brandForDomain(doc: Doc, domain: string): Doc | undefined {
  const brands: Doc[] = Array.isArray(doc.brands) ? doc.brands : [];
  return brands.find(
    (b) =>
      (Array.isArray(b.properties) && b.properties.some((p: Doc) => typeof p?.identifier === 'string' && p.identifier.toLowerCase() === domain)) ||
      (typeof b.url === 'string' && safeHost(b.url) === domain),
  );
}

function safeHost(url: string): string | undefined {
  try {
    return new URL(url).hostname.toLowerCase();
  } catch {
    return undefined;
  }
}

/**
 * Resolves a domain to its canonical brand identity from `https://{domain}/.well-known/brand.json`,
 * following the AdCP variants (reference §3.6): `authoritative_location` and `house` redirects
 * (at most three hops), a house portfolio (the brand that owns the domain: `inline`; the house
 * domain itself: its master brand), a brand canonical document (`standalone`, or `mutual` /
 * `leaf_only` once its `house_domain` is checked for a reciprocating `brand_refs[]` entry), or a
 * brand-agent document. Null when the document names no brand for the domain.
 */
export async function resolveBrand(domain: string, fetchDoc: FetchDoc): Promise<ResolvedBrand | null> {
  let doc = (await fetchDoc(wellKnown(domain))) as Doc;
  let claimedHouse: string | undefined;
  for (let hops = 0; ; hops++) {
    if (!doc || typeof doc !== 'object' || Array.isArray(doc)) return null;
    if (hops > MAX_BRAND_HOPS) return null;
    if (typeof doc.authoritative_location === 'string') {
      doc = (await fetchDoc(doc.authoritative_location)) as Doc;
      continue;
    }
    if (typeof doc.house === 'string') {
      claimedHouse = doc.house.toLowerCase();
      doc = (await fetchDoc(wellKnown(claimedHouse!))) as Doc;
      continue;
    }
    if (doc.house && typeof doc.house === 'object' && (Array.isArray(doc.brands) || Array.isArray(doc.brand_refs))) {
      const house = doc.house as Doc;
      const houseDomain = String(house.domain ?? '').toLowerCase();
      const owned = brandForDomain(doc, domain);
      const houseFields = { house_domain: houseDomain, ...(typeof house.name === 'string' ? { house_name: house.name } : {}) };
      if (owned) return identityOf(owned, domain, { relationship_trust: 'inline', ...houseFields, ...(owned.agents || !house.agents ? {} : { agents: house.agents }) });
      if (houseDomain === domain) {
        const brands: Doc[] = Array.isArray(doc.brands) ? doc.brands : [];
        const master = brands.find((b) => b.keller_type === 'master') ?? brands[0];
        return master ? identityOf(master, domain, { relationship_trust: 'inline', ...houseFields }) : null;
      }
      // A house that does not name the domain: the domain's own claim, if it made one, is all there is.
      return claimedHouse ? { canonical_id: domain, canonical_domain: domain, brand_name: domain, names: [], relationship_trust: 'leaf_only', claimed_house_domain: claimedHouse, source: 'brand_json' } : null;
    }
    if (typeof doc.id === 'string' && Array.isArray(doc.names)) {
      if (typeof doc.house_domain !== 'string') return identityOf(doc, domain, {});
      const houseDomain = doc.house_domain.toLowerCase();
      let house: Doc | undefined;
      try {
        house = (await fetchDoc(wellKnown(houseDomain))) as Doc;
      } catch {
        return identityOf(doc, domain, { relationship_trust: 'unverifiable', claimed_house_domain: houseDomain });
      }
      const refs: Doc[] = Array.isArray(house?.brand_refs) ? house.brand_refs : [];
      const reciprocated = refs.some((r) => r?.brand_id === doc.id || (typeof r?.domain === 'string' && r.domain.toLowerCase() === domain));
      return reciprocated
        ? identityOf(doc, domain, { relationship_trust: 'mutual', house_domain: houseDomain, ...(typeof house?.house?.name === 'string' ? { house_name: house.house.name } : {}) })
        : identityOf(doc, domain, { relationship_trust: 'leaf_only', claimed_house_domain: houseDomain });
    }
    if (doc.brand_agent || Array.isArray(doc.agents)) {
      return identityOf({ ...doc, id: domain, names: [] }, domain, {});
    }
    return null;
  }
}

/** A bare, multi-label DNS name (what bulk resolution accepts), normalized; undefined if not one. */
export function normalizeDomain(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const d = value.trim().toLowerCase();
  return d.length <= 253 && /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$/.test(d) && !/^[\d.]+$/.test(d) ? d : undefined;
}
