import type { JsonWebKey } from 'node:crypto';
import { fetchJson, type OriginOverrides } from '../../shared/guarded-fetch';

interface CachedSet {
  keys: Map<string, JsonWebKey>;
  /** The sender agent's `url` in its brand.json (what publishers name in adagents.json). */
  agentUrl?: string;
  fetchedAt: number;
}

/**
 * A sender's webhook keys, found the AdCP way: `https://{domain}/.well-known/brand.json`, the
 * `agents[]` entry with the expected id (else the first with a `jwks_uri`), then that JWKS. Cached
 * for five minutes; an unknown kid refetches once, at most every 30 s per sender (key rotation
 * without letting a stream of bogus kids hammer the sender).
 */
export class JwksResolver {
  private cache = new Map<string, CachedSet>();
  private inflight = new Map<string, Promise<CachedSet>>();

  constructor(
    private readonly overrides: OriginOverrides,
    private readonly ttlMs = 5 * 60_000,
    private readonly refetchCooldownMs = 30_000,
  ) {}

  /** The sender agent's URL from its brand.json (for adagents.json signing-key pins). */
  async agentUrl(domain: string, agentId: string): Promise<string | undefined> {
    return (await this.current(domain, agentId)).agentUrl;
  }

  async resolve(domain: string, agentId: string, kid: string): Promise<JsonWebKey | undefined> {
    const set = await this.current(domain, agentId);
    if (set.keys.has(kid)) return set.keys.get(kid);
    if (Date.now() - set.fetchedAt < this.refetchCooldownMs) return undefined;
    return (await this.load(`${domain}#${agentId}`, domain, agentId)).keys.get(kid);
  }

  /** The cached set, fetched again once it is older than the TTL. */
  private async current(domain: string, agentId: string): Promise<CachedSet> {
    const id = `${domain}#${agentId}`;
    const set = this.cache.get(id);
    return set && Date.now() - set.fetchedAt <= this.ttlMs ? set : this.load(id, domain, agentId);
  }

  private load(id: string, domain: string, agentId: string): Promise<CachedSet> {
    let p = this.inflight.get(id);
    if (!p) {
      p = this.fetchSet(domain, agentId).finally(() => this.inflight.delete(id));
      this.inflight.set(id, p);
    }
    return p.then((set) => {
      this.cache.set(id, set);
      return set;
    });
  }

  private async fetchSet(domain: string, agentId: string): Promise<CachedSet> {
    const brand = (await fetchJson(`https://${domain}/.well-known/brand.json`, { overrides: this.overrides, maxBytes: 256 * 1024 })) as {
      agents?: { id?: string; jwks_uri?: string; url?: string }[];
    };
    const agents = Array.isArray(brand.agents) ? brand.agents : [];
    const agent = agents.find((a) => a.id === agentId && a.jwks_uri) ?? agents.find((a) => a.jwks_uri);
    const jwksUri = agent?.jwks_uri ?? `https://${domain}/.well-known/jwks.json`;
    const jwks = (await fetchJson(jwksUri, { overrides: this.overrides, maxBytes: 64 * 1024 })) as { keys?: (JsonWebKey & { kid?: string })[] };
    const keys = new Map<string, JsonWebKey>();
    for (const k of Array.isArray(jwks.keys) ? jwks.keys : []) if (typeof k.kid === 'string') keys.set(k.kid, k);
    return { keys, ...(typeof agent?.url === 'string' ? { agentUrl: agent.url } : {}), fetchedAt: Date.now() };
  }
}
