import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { errors as joseErrors, jwtVerify, type JWSHeaderParameters, type JWTPayload } from 'jose';
import type { Principal } from '../application/api-keys';
import { ROLES, type Role } from '../domain/api-key/api-key';
import type { OAuthConfig } from '../config';
import type { SigningKeystore } from '../signing/keystore';
import { fetchJson } from '../shared/guarded-fetch';
import type { OriginOverrides } from '../shared/origin-overrides';
import { RefreshingCache, type RefreshingCacheOptions } from '../shared/refreshing-cache';

/** Three base64url segments: worth handing to the JWT verifier rather than the API-key lookup. */
export const looksLikeJwt = (token: string) => /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);

/** Why a token was refused, in words safe to show the caller (never the token). */
export class InvalidAccessToken extends Error {}

/** The gateway's APIs, each an RFC 8707 resource of its own: `<origin>/<api>`. */
export const API_RESOURCES = ['api', 'mcp', 'a2a', 'graphql'] as const;
export type ApiResource = (typeof API_RESOURCES)[number];

/**
 * The API an audience is for, by the last segment of its path (`https://gw.example/mcp` → mcp),
 * or undefined: an audience that names the gateway as a whole (`adcp-gateway`, an origin).
 */
export function apiOfAudience(audience: string): ApiResource | undefined {
  if (!URL.canParse(audience)) return undefined;
  const last = new URL(audience).pathname.replace(/\/+$/, '').split('/').pop() ?? '';
  return (API_RESOURCES as readonly string[]).includes(last) ? (last as ApiResource) : undefined;
}

/** The audiences a verifier accepts, with the API each is bound to (undefined: every API). */
export interface ExpectedAudiences {
  issuer: string;
  audiences: string[];
  apiOf: ReadonlyMap<string, ApiResource | undefined>;
  /** The resource identifier of an API, for saying which one a token is not for. */
  resourceOf(api: ApiResource): string;
}

export interface VerifiedAccessToken {
  principal: Principal;
  claims: JWTPayload;
  clientId?: string;
  scopes: string[];
  /** The embedded server's grant family the token was issued from (its `sid`), if it says. */
  grant?: string;
}

/** Where verification keys come from: the embedded server's own keystore, or the issuer's JWKS. */
export interface TokenKeys {
  key(header: JWSHeaderParameters): Promise<KeyObject>;
}

export class LocalTokenKeys implements TokenKeys {
  private readonly imported = new Map<string, KeyObject>();
  constructor(private readonly keystore: SigningKeystore) {}

  async key(header: JWSHeaderParameters): Promise<KeyObject> {
    const jwk = this.keystore.publicJwks().keys.find((k) => k.kid === header.kid);
    if (!jwk) throw new InvalidAccessToken('token signed with an unknown key');
    let key = this.imported.get(header.kid!);
    if (!key) this.imported.set(header.kid!, (key = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' })));
    return key;
  }
}

/** The issuer's keys cannot be had right now (and none are cached): a 503, not the caller's fault. */
export class TokenKeysUnavailable extends Error {}

/**
 * An outside issuer's JWKS, fetched with the SSRF-guarded client (https, public addresses, a byte
 * cap). Cached five minutes; an unknown kid refetches, and a failed fetch is retried, at most
 * every 30 s, so neither a stream of bogus kids nor an outage hammers the issuer. While the issuer
 * is unreachable the keys last fetched keep working for up to a day (see RefreshingCache).
 */
export class RemoteTokenKeys implements TokenKeys {
  private readonly sets: RefreshingCache<Map<string, KeyObject>>;

  constructor(
    private readonly jwksUri: () => Promise<string>,
    private readonly overrides: OriginOverrides,
    options: Partial<RefreshingCacheOptions> = {},
  ) {
    this.sets = new RefreshingCache({ ttlMs: 5 * 60_000, retryMs: 30_000, maxStaleMs: 24 * 3600_000, max: 1, ...options });
  }

  async key(header: JWSHeaderParameters): Promise<KeyObject> {
    let set = await this.sets.get('issuer', this.load);
    let key = set.value && pick(set.value, header);
    if (key) return key;
    set = await this.sets.refresh('issuer', this.load);
    key = set.value && pick(set.value, header);
    if (key) return key;
    if (!set.value && set.error) throw new TokenKeysUnavailable(`the issuer's keys could not be fetched (${set.error})`);
    throw new InvalidAccessToken('token signed with a key the issuer does not publish');
  }

  private readonly load = async (): Promise<Map<string, KeyObject>> => {
    const set = (await fetchJson(await this.jwksUri(), { overrides: this.overrides, maxBytes: 64 * 1024 })) as { keys?: (JsonWebKey & { kid?: string; use?: string })[] };
    const keys = new Map<string, KeyObject>();
    for (const [i, jwk] of (Array.isArray(set.keys) ? set.keys : []).entries()) {
      if (jwk.use !== undefined && jwk.use !== 'sig') continue;
      try {
        keys.set(typeof jwk.kid === 'string' ? jwk.kid : `#${i}`, createPublicKey({ key: jwk, format: 'jwk' }));
      } catch {
        // A key this runtime cannot import cannot have signed a token we accept.
      }
    }
    return keys;
  };
}

/** The key a JWS header names; without a kid, the issuer's only key. */
function pick(keys: Map<string, KeyObject>, header: JWSHeaderParameters): KeyObject | undefined {
  if (header.kid !== undefined) return keys.get(header.kid);
  return keys.size === 1 ? [...keys.values()][0] : undefined;
}

/**
 * Checks a user JWT (spec §5.1) the way a resource server must: signature by a key of the
 * configured issuer, an allowed algorithm (never `none`, never HMAC), `iss`, `aud` naming this
 * gateway, `exp`/`nbf` with 30 s of leeway, and a `sub`. Then maps its claims to a principal: an
 * administrator when the configured claim says so, else the `adcp_role` claim (buyer or seller),
 * else a buyer; the organization is the `org` claim, else the user itself.
 */
export class AccessTokenVerifier {
  constructor(
    private readonly config: OAuthConfig,
    private readonly keys: TokenKeys,
    /** The issuer and audiences are known once the server listens (its origin may be ephemeral). */
    private readonly expected: () => ExpectedAudiences | undefined,
    private readonly embedded: boolean,
  ) {}

  /**
   * Throws InvalidAccessToken (a 401) or TokenKeysUnavailable (a 503). `api`: the API the token is
   * presented to; it must be among the token's audiences (RFC 8707), unless one of them names the
   * gateway as a whole.
   */
  async verify(token: string, api?: ApiResource): Promise<VerifiedAccessToken> {
    const expected = this.expected();
    if (!expected) throw new InvalidAccessToken('the authorization server is not ready');
    let claims: JWTPayload;
    try {
      ({ payload: claims } = await jwtVerify(token, (header) => this.keys.key(header), {
        issuer: expected.issuer,
        audience: expected.audiences,
        algorithms: this.config.algorithms,
        clockTolerance: 30,
        requiredClaims: ['exp', 'sub'],
        // Our own access tokens say what they are (RFC 9068); outside issuers often do not.
        ...(this.embedded ? { typ: 'at+jwt' } : {}),
      }));
    } catch (err) {
      if (err instanceof TokenKeysUnavailable) throw err;
      throw new InvalidAccessToken(describe(err));
    }
    if (api !== undefined) checkAudience(claims, api, expected);
    const sub = claims.sub!;
    const role = this.roleOf(claims);
    const principal: Principal = {
      // The embedded server's subject is the API key the user signed in with; an outside
      // issuer's subjects get their own namespace so they can never collide with a key id.
      keyId: this.embedded ? sub : `oauth|${sub}`,
      org: typeof claims.org === 'string' && claims.org.length > 0 ? claims.org : `user:${sub}`,
      role,
    };
    const scope = typeof claims.scope === 'string' ? claims.scope.split(' ').filter(Boolean) : [];
    return {
      principal,
      claims,
      scopes: scope,
      ...(typeof claims.client_id === 'string' ? { clientId: claims.client_id } : {}),
      ...(this.embedded && typeof claims.sid === 'string' ? { grant: claims.sid } : {}),
    };
  }

  private roleOf(claims: JWTPayload): Role {
    const { claim, value } = this.config.adminClaim;
    const held = claims[claim];
    if (held === value || (Array.isArray(held) && held.includes(value))) return 'admin';
    const stated = claims.adcp_role;
    return typeof stated === 'string' && stated !== 'admin' && (ROLES as readonly string[]).includes(stated) ? (stated as Role) : 'buyer';
  }
}

/** The token is for `api` when one of its audiences (jose checked that some are ours) is bound to it or to no API in particular. */
function checkAudience(claims: JWTPayload, api: ApiResource, expected: ExpectedAudiences): void {
  const ours = (typeof claims.aud === 'string' ? [claims.aud] : (claims.aud ?? [])).filter((a) => expected.apiOf.has(a));
  for (const audience of ours) {
    const bound = expected.apiOf.get(audience);
    if (bound === undefined || bound === api) return;
  }
  throw new InvalidAccessToken(`the token's audience (${ours.join(', ')}) does not include ${expected.resourceOf(api)}: ask for a token for this resource`);
}

function describe(err: unknown): string {
  if (err instanceof InvalidAccessToken) return err.message;
  if (err instanceof joseErrors.JWTExpired) return 'token expired';
  if (err instanceof joseErrors.JWTClaimValidationFailed) return `token claim "${err.claim}" is not acceptable (${err.reason})`;
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return 'token algorithm not allowed';
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return 'token signature invalid';
  if (err instanceof joseErrors.JOSEError) return `token invalid (${err.code})`;
  return 'token invalid';
}

/**
 * RFC 8414 discovery of an outside issuer's `jwks_uri`: its authorization-server metadata (path
 * inserted after the well-known prefix), else its OpenID configuration. The metadata must name
 * the same issuer.
 */
export async function discoverJwksUri(issuer: string, overrides: OriginOverrides): Promise<string> {
  const url = new URL(issuer);
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '');
  const candidates = [`${url.origin}/.well-known/oauth-authorization-server${path}`, `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`];
  let lastError: unknown;
  for (const candidate of candidates) {
    try {
      const metadata = (await fetchJson(candidate, { overrides, maxBytes: 256 * 1024 })) as { issuer?: unknown; jwks_uri?: unknown };
      if (metadata.issuer !== issuer) throw new Error(`${candidate} names issuer ${JSON.stringify(metadata.issuer)}`);
      if (typeof metadata.jwks_uri !== 'string') throw new Error(`${candidate} has no jwks_uri`);
      return metadata.jwks_uri;
    } catch (err) {
      lastError = err;
    }
  }
  throw lastError;
}
