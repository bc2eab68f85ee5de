import type { JsonWebKey } from 'node:crypto';
import { fetchJson } from '../../shared/guarded-fetch';
import type { OriginOverrides } from '../../shared/origin-overrides';
import { RefreshingCache, type RefreshingCacheOptions } from '../../shared/refreshing-cache';

interface SenderKeys {
  keys: Map<string, JsonWebKey>;
  /** The sender agent's `url` in its brand.json (what publishers name in adagents.json). */
  agentUrl?: string;
}

/**
 * A sender's webhook keys, found the AdCP way: `https://{domain}/.well-known/brand.json`, the
 * `agents[]` entry with the expected id (else the first with a `jwks_uri`), then that JWKS. Cached
 * for five minutes and refreshed behind the requests that keep using it; an unknown kid refetches
 * at once, at most every 30 s per sender (key rotation without letting a stream of bogus kids
 * hammer the sender); while the sender's site is down the keys last fetched keep verifying for up
 * to a day (see RefreshingCache). With none fetched, resolving throws (the receiver answers 503).
 */
export class JwksResolver {
  private readonly senders: RefreshingCache<SenderKeys>;

  constructor(
    private readonly overrides: OriginOverrides,
    options: Partial<RefreshingCacheOptions> = {},
  ) {
    this.senders = new RefreshingCache({ ttlMs: 5 * 60_000, retryMs: 30_000, maxStaleMs: 24 * 3600_000, max: 10_000, ...options });
  }

  /** The sender agent's URL from its brand.json (for adagents.json signing-key pins). */
  async agentUrl(domain: string, agentId: string): Promise<string | undefined> {
    return available(await this.senders.get(`${domain}#${agentId}`, () => this.fetchKeys(domain, agentId))).agentUrl;
  }

  async resolve(domain: string, agentId: string, kid: string): Promise<JsonWebKey | undefined> {
    const load = () => this.fetchKeys(domain, agentId);
    const id = `${domain}#${agentId}`;
    const current = available(await this.senders.get(id, load));
    if (current.keys.has(kid)) return current.keys.get(kid);
    return available(await this.senders.refresh(id, load)).keys.get(kid);
  }

  private async fetchKeys(domain: string, agentId: string): Promise<SenderKeys> {
    const brand = (await fetchJson(`https://${domain}/.well-known/brand.json`, { overrides: this.overrides, maxBytes: 256 * 1024 })) as {
      agents?: { id?: string; jwks_uri?: string; url?: string }[];
    };
    const agents = Array.isArray(brand.agents) ? brand.agents : [];
    const agent = agents.find((a) => a.id === agentId && a.jwks_uri) ?? agents.find((a) => a.jwks_uri);
    const jwksUri = agent?.jwks_uri ?? `https://${domain}/.well-known/jwks.json`;
    const jwks = (await fetchJson(jwksUri, { overrides: this.overrides, maxBytes: 64 * 1024 })) as { keys?: (JsonWebKey & { kid?: string })[] };
    const keys = new Map<string, JsonWebKey>();
    for (const k of Array.isArray(jwks.keys) ? jwks.keys : []) if (typeof k.kid === 'string') keys.set(k.kid, k);
    return { keys, ...(typeof agent?.url === 'string' ? { agentUrl: agent.url } : {}) };
  }
}

/** The sender's keys, or the reason there are none (the receiver turns it into a 503). */
function available(entry: { value?: SenderKeys; error?: string }): SenderKeys {
  if (entry.value) return entry.value;
  throw new Error(entry.error ?? "the sender's keys are not available");
}
