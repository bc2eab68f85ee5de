import type { SignInThrottle } from './authorization-server';
import type { Express } from 'express';
import type { Config } from '../config';
import type { EventStore } from '../eventstore/port';
import type { Logger } from 'pino';
import type { ReadModelStore } from '../readmodel/port';
import type { QueryCache } from '../caches/query-cache';
import { SigningKeystore } from '../signing/keystore';
import { AccessTokenVerifier, apiOfAudience, discoverJwksUri, LocalTokenKeys, RemoteTokenKeys, type ApiResource, type ExpectedAudiences, type TokenKeys } from './access-tokens';
import { createAuthorizationServer, SCOPES } from './authorization-server';

/** The default audiences, in order: the registry's REST API first (the SDK router's resource). */
const API_ORDER: readonly ApiResource[] = ['api', 'mcp', 'a2a', 'graphql'];

/**
 * OAuth for the registry API (spec §5): who issues user JWTs and how they are checked. With
 * OAUTH_ISSUER unset the gateway is its own authorization server, whose issuer is its public
 * origin — known only once the server listens, hence `bindOrigin`.
 */
export class OAuthService {
  readonly verifier: AccessTokenVerifier;
  readonly embedded: boolean;
  private origin?: string;
  private handler?: Express;
  private disabledBecause?: string;
  private readonly keystore?: SigningKeystore;
  private readonly tokenKeys: TokenKeys;

  /** What every token check needs, worked out once the origin is known. */
  private expectedOnce?: ExpectedAudiences;

  constructor(
    private readonly deps: {
      config: Config;
      store: EventStore;
      readModels: ReadModelStore;
      cache: QueryCache;
      log: Logger;
      authFailures?: SignInThrottle;
      /** Resolves once the read models show what this instance has appended (a revocation the next request must see). */
      settled?: () => Promise<void>;
    },
  ) {
    const { oauth } = deps.config;
    this.embedded = oauth.issuer === undefined;
    if (this.embedded) {
      this.keystore = new SigningKeystore({ file: oauth.keysFile }, null, 'oauth signing keys');
      this.tokenKeys = new LocalTokenKeys(this.keystore);
    } else {
      const issuer = oauth.issuer!;
      let discovered: Promise<string> | undefined;
      const jwksUri = () =>
        oauth.jwksUri !== undefined
          ? Promise.resolve(oauth.jwksUri)
          : (discovered ??= discoverJwksUri(issuer, deps.config.originOverrides).catch((err) => {
              discovered = undefined; // try again on the next token
              throw err;
            }));
      this.tokenKeys = new RemoteTokenKeys(jwksUri, deps.config.originOverrides);
    }
    this.verifier = new AccessTokenVerifier(oauth, this.tokenKeys, () => this.expected(), this.embedded);
  }

  /** Called once the server listens: PUBLIC_URL if set, else the address it listens on. */
  bindOrigin(listenUrl: string): void {
    this.origin = this.deps.config.publicUrl ?? listenUrl;
    this.expectedOnce = undefined;
    if (!this.embedded) return;
    try {
      this.handler = createAuthorizationServer({
        ...this.deps,
        keys: this.keystore!,
        verifier: this.verifier,
        tokenKeys: this.tokenKeys,
        accessTokenTtlSeconds: this.deps.config.oauth.accessTokenTtlSeconds,
        trustProxy: this.deps.config.trustProxy,
        adminClaim: this.deps.config.oauth.adminClaim,
        issuer: this.issuer()!,
        audiences: this.audiences(),
        resources: this.resources(),
      });
    } catch (err) {
      // The SDK refuses a plain-http issuer other than localhost: say so once, keep serving API keys.
      this.disabledBecause = `the embedded authorization server is off: ${(err as Error).message} (set PUBLIC_URL to an https origin, or OAUTH_ISSUER)`;
      this.deps.log.warn(this.disabledBecause);
    }
  }

  /** The embedded server's HTTP handler (Express), or why there is none. */
  authorizationServer(): { handler: Express } | { unavailable: string } {
    if (this.handler) return { handler: this.handler };
    if (!this.embedded) return { unavailable: `this gateway is not an authorization server; tokens come from ${this.deps.config.oauth.issuer}` };
    return { unavailable: this.disabledBecause ?? 'the authorization server is starting' };
  }

  /** The `iss` tokens must carry. The embedded server's is its origin with a trailing slash, as the MCP SDK spells it. */
  issuer(): string | undefined {
    if (!this.embedded) return this.deps.config.oauth.issuer;
    return this.origin === undefined ? undefined : new URL(this.origin).href;
  }

  /**
   * The `aud` values this gateway accepts; the first is what the registry API calls itself. By
   * default one resource per API (RFC 8707), each accepted only by its own API; a token asked for
   * no resource carries them all.
   */
  audiences(): string[] {
    // In URL-normal form (`https://a.example` → `https://a.example/`), as resource parameters are compared.
    const configured = this.deps.config.oauth.audiences ?? (this.origin === undefined ? [] : API_ORDER.map((api) => `${this.origin}/${api}`));
    return configured.map((a) => (URL.canParse(a) ? new URL(a).href : a));
  }

  /**
   * The resources a client may ask a token for: the audiences and, by default, the base URL,
   * where A2A is served too (its RFC 9728 metadata at `/.well-known/oauth-protected-resource`
   * names the origin, so a client following it asks for that); a token for it serves A2A.
   */
  resources(): string[] {
    const audiences = this.audiences();
    if (this.deps.config.oauth.audiences || this.origin === undefined) return audiences;
    return [...audiences, new URL(this.origin).href];
  }

  /** RFC 9728 metadata for one of the APIs (`/.well-known/oauth-protected-resource/<api>`). */
  protectedResourceMetadata(api: ApiResource = 'api'): Record<string, unknown> | undefined {
    const issuer = this.issuer();
    if (!issuer || this.origin === undefined) return undefined;
    return {
      resource: `${this.origin}/${api}`,
      authorization_servers: [issuer],
      bearer_methods_supported: ['header'],
      scopes_supported: SCOPES,
      resource_name: api === 'graphql' ? 'adcp-gateway GraphQL API' : 'adcp-gateway registry API',
    };
  }

  private expected(): ExpectedAudiences | undefined {
    if (this.expectedOnce) return this.expectedOnce;
    const issuer = this.issuer();
    const audiences = this.resources();
    if (!issuer || audiences.length === 0 || this.origin === undefined) return undefined;
    const origin = this.origin;
    const base = new URL(origin).href;
    return (this.expectedOnce = {
      issuer,
      audiences,
      apiOf: new Map(audiences.map((a) => [a, apiOfAudience(a) ?? (a === base && !this.deps.config.oauth.audiences ? 'a2a' : undefined)])),
      resourceOf: (api) => `${origin}/${api}`,
    });
  }
}
