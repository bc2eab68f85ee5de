import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import express, { type NextFunction, type Request, type Response } from 'express';
import { SignJWT, jwtVerify } from 'jose';
import type { OAuthRegisteredClientsStore } from '@modelcontextprotocol/sdk/server/auth/clients.js';
import {
  CustomOAuthError,
  InvalidClientMetadataError,
  InvalidGrantError,
  InvalidScopeError,
  InvalidTargetError,
  InvalidTokenError,
  TemporarilyUnavailableError,
} from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { AuthorizationParams, OAuthServerProvider } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import { createOAuthMetadata, mcpAuthRouter } from '@modelcontextprotocol/sdk/server/auth/router.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { OAuthClientInformationFull, OAuthTokenRevocationRequest, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { verifyApiKey } from '../application/api-keys';
import { appendOnce, handleCommand, loadState } from '../application/command-handler';
import { apiKeyDecider, apiKeyStream } from '../domain/api-key/api-key';
import {
  grantDecider,
  oauthClientStream,
  oauthFamilyStream,
  oauthGrantStream,
  type Grant,
  type OAuthClientEvent,
  type RegisteredClient,
} from '../domain/oauth/grants';
import { ConcurrencyError, type EventStore } from '../eventstore/port';
import type { Logger } from 'pino';
import type { ReadModelStore } from '../readmodel/port';
import type { QueryCache } from '../caches/query-cache';
import { AppError } from '../shared/errors';
import { jsonNestingDepth, MAX_JSON_DEPTH } from '../shared/json-depth';
import { hasUnstorableEscape } from '../shared/nul';
import type { SigningKeystore } from '../signing/keystore';
import type { AccessTokenVerifier, TokenKeys } from './access-tokens';
import { errorPage, loginPage, PAGE_HEADERS } from './login-page';

const CODE_TTL_MS = 60_000;
const REFRESH_TTL_MS = 30 * 24 * 3600_000;
const REQUEST_TTL = '10m';
export const SCOPES = ['openid', 'profile', 'email'];

const sha256 = (s: string) => createHash('sha256').update(s).digest('base64url');
const newToken = () => randomBytes(32).toString('base64url');

export interface AuthorizationServerDeps {
  store: EventStore;
  readModels: ReadModelStore;
  cache: QueryCache;
  keys: SigningKeystore;
  verifier: AccessTokenVerifier;
  /** The keys `keys` publishes, for checking the sign-in form's signed request. */
  tokenKeys: TokenKeys;
  log: Logger;
  accessTokenTtlSeconds: number;
  trustProxy: boolean | number | string;
  adminClaim: { claim: string; value: string };
  /** `https://host/` (the SDK's spelling of the issuer, trailing slash included). */
  issuer: string;
  /** The resources a token carries when it is asked for none (`aud`); the first is the registry API's. */
  audiences: string[];
  /** The resources a client may ask for (RFC 8707): the audiences, and the base URL A2A is served at. */
  resources: string[];
  /** Failed sign-ins count per client address with the API's failed credentials (docs/limits.md). */
  authFailures?: SignInThrottle;
  /** Resolves once the read models show this instance's appends: a revoked grant's access tokens are refused from then on. */
  settled?: () => Promise<void>;
}

/** What the sign-in form needs of the per-address failed-credential budget (http/request-limits). */
export interface SignInThrottle {
  blocked(address: string): { resetSeconds: number } | undefined | Promise<{ resetSeconds: number } | undefined>;
  record(address: string): void | Promise<void>;
}

/**
 * The embedded OAuth 2.1 authorization server (spec §5: authorization code + PKCE): the MCP SDK's
 * router does the protocol (metadata, dynamic client registration, PKCE S256 checks, token and
 * revocation endpoints, their errors and rate limits); this provider keeps its state as events —
 * clients, one-time codes and rotating refresh tokens, each under a hash of the credential — and
 * signs access tokens as RFC 9068 JWTs with the gateway's OAuth key. Users sign in with one of
 * their API keys; the token then acts as that key (same organization and role).
 */
export function createAuthorizationServer(deps: AuthorizationServerDeps): express.Express {
  const provider = new EventSourcedOAuthProvider(deps);
  const ex = express();
  ex.disable('x-powered-by');
  // The SDK's rate limits count by client address: the same proxies are trusted as for Fastify.
  ex.set('trust proxy', deps.trustProxy);
  const issuerUrl = new URL(deps.issuer);
  // The SDK's rate limiters keep in-process counters; their proxy-header checks only log noise here.
  const rateLimit = { validate: false } as const;
  const routerOptions = {
    provider,
    issuerUrl,
    scopesSupported: SCOPES,
    resourceServerUrl: new URL(deps.audiences[0]!),
    resourceName: 'adcp-gateway',
    authorizationOptions: { rateLimit },
    tokenOptions: { rateLimit },
    clientRegistrationOptions: { rateLimit },
    revocationOptions: { rateLimit },
  };
  const metadata = { ...createOAuthMetadata(routerOptions), jwks_uri: new URL('/oauth/jwks.json', issuerUrl).href };
  ex.get('/.well-known/oauth-authorization-server', (_req, res) => {
    res.set({ 'access-control-allow-origin': '*', 'cache-control': 'public, max-age=3600' }).json(metadata);
  });
  ex.get('/oauth/jwks.json', (_req, res) => {
    res.set({ 'access-control-allow-origin': '*', 'cache-control': 'public, max-age=300' }).type('application/jwk-set+json').send(deps.keys.publicJwks());
  });
  // The SDK reports a bad authorization request by redirecting to the client's redirect_uri, and
  // registration is open, so such a redirect could go anywhere a stranger registered (RFC 9700
  // §4.11.2): a malformed request gets an error page here instead, and never leaves this origin.
  ex.use('/authorize', express.urlencoded({ extended: false, limit: '16kb' }), (req, res, next) => {
    const params = ((req.method === 'POST' ? req.body : req.query) ?? {}) as Record<string, unknown>;
    const problem = authorizationRequestProblem(params, deps.resources);
    if (!problem) return next();
    res.status(400).set(PAGE_HEADERS).send(errorPage(`This sign-in link is not valid: ${problem}.`));
  });
  // Confidential clients present their secret here; only its hash is stored (see provider.clientsStore).
  ex.use(['/token', '/revoke'], express.urlencoded({ extended: false, limit: '16kb' }), (req, _res, next) => provider.checkClientSecret(req, next));
  ex.use(mcpAuthRouter(routerOptions));
  ex.post('/oauth/login', express.urlencoded({ extended: false, limit: '16kb' }), (req, res) => {
    provider.login(req, res).catch((err) => {
      deps.log.error({ err }, 'oauth sign-in failed');
      if (!res.headersSent) res.status(503).set(PAGE_HEADERS).send(errorPage('The sign-in service is unavailable; try again shortly.'));
    });
  });
  ex.use((req: Request, res: Response) => {
    res.status(404).json({ error: 'not_found', error_description: `no route for ${req.method} ${req.path}` });
  });
  // Body-parser errors (bad JSON, oversize forms) answer in OAuth's error shape, never a stack.
  ex.use((err: { status?: number; statusCode?: number; type?: string }, _req: Request, res: Response, _next: NextFunction) => {
    const status = err.status ?? err.statusCode ?? 500;
    if (status >= 500) deps.log.error({ err }, 'oauth endpoint failed');
    res.status(status >= 500 ? 500 : status).json({ error: status >= 500 ? 'server_error' : 'invalid_request', error_description: status === 413 ? 'request body too large' : 'malformed request' });
  });
  return ex;
}

/**
 * What is wrong with an authorization request's parameters, if anything (that client and
 * redirect_uri are registered together, the SDK checks after this).
 */
export function authorizationRequestProblem(params: Record<string, unknown>, audiences: readonly string[]): string | undefined {
  // The SDK lets a loopback redirect_uri differ from the registered one in its port, and compares
  // no fragment: one given here would ride along on the redirect (RFC 6749 §3.1.2 forbids it).
  if (typeof params.redirect_uri === 'string' && params.redirect_uri.includes('#')) return 'redirect_uri must not contain a fragment (#)';
  if (params.response_type !== 'code') return 'response_type must be code';
  if (typeof params.code_challenge !== 'string' || params.code_challenge.length === 0) return 'a PKCE code_challenge is required';
  if (params.code_challenge_method !== 'S256') return 'code_challenge_method must be S256';
  for (const name of ['scope', 'state'] as const) {
    if (params[name] !== undefined && typeof params[name] !== 'string') return `${name} must be given once`;
  }
  if (params.resource !== undefined && (typeof params.resource !== 'string' || !URL.canParse(params.resource) || !audiences.includes(new URL(params.resource).href))) {
    return `resource must be one of ${audiences.join(', ')}`;
  }
  return undefined;
}

class EventSourcedOAuthProvider implements OAuthServerProvider {
  /** The client secret a request presented, once checked against the stored hash. */
  private readonly verifiedSecret = new AsyncLocalStorage<{ clientId: string; secret: string }>();
  /** Stands in for a stored secret the request did not prove: never equal to anything presented. */
  private readonly unprovenSecret = `unproven-${randomBytes(32).toString('base64url')}`;

  constructor(private readonly deps: AuthorizationServerDeps) {}

  get clientsStore(): OAuthRegisteredClientsStore {
    return {
      getClient: async (clientId) => {
        const client = await this.loadClient(clientId);
        if (!client) return undefined;
        const proven = this.verifiedSecret.getStore();
        return {
          ...(client.metadata as Omit<OAuthClientInformationFull, 'client_id'>),
          client_id: client.clientId,
          client_id_issued_at: client.issuedAt,
          // The SDK compares secrets itself, in plain text; it only ever sees the secret this very
          // request proved (compared in constant time against the hash), or one nobody can present.
          ...(client.secret
            ? {
                client_secret: proven?.clientId === clientId ? proven.secret : this.unprovenSecret,
                ...(client.secret.expiresAt ? { client_secret_expires_at: client.secret.expiresAt } : {}),
              }
            : {}),
        } as OAuthClientInformationFull;
      },
      // The SDK generates client_id (and a secret for confidential clients) before calling this.
      registerClient: async (registration) => {
        const client = registration as OAuthClientInformationFull;
        const { client_id, client_secret, client_secret_expires_at, client_id_issued_at, ...metadata } = client;
        if (!Array.isArray(metadata.redirect_uris) || metadata.redirect_uris.length === 0) throw new InvalidClientMetadataError('redirect_uris is required');
        for (const uri of metadata.redirect_uris) {
          const problem = redirectUriProblem(uri);
          if (problem) throw new CustomOAuthError('invalid_redirect_uri', problem);
        }
        // This body skips the gateway's JSON parser: its depth and text limits apply here.
        const problem = unstorableMetadata(metadata);
        if (problem) throw new InvalidClientMetadataError(problem);
        const salt = randomBytes(16).toString('base64url');
        const registered: RegisteredClient = {
          clientId: client_id,
          metadata,
          issuedAt: client_id_issued_at ?? Math.floor(Date.now() / 1000),
          ...(client_secret ? { secret: { salt, hash: sha256(salt + client_secret), ...(client_secret_expires_at ? { expiresAt: client_secret_expires_at } : {}) } } : {}),
        };
        const event: OAuthClientEvent = { type: 'OAuthClientRegistered', data: registered };
        if (!(await appendOnce(this.deps.store, oauthClientStream(client_id), [{ type: event.type, data: event.data }]))) {
          throw new InvalidClientMetadataError('client_id already registered');
        }
        return client;
      },
    };
  }

  /** Express middleware step: remember a client secret that matches the stored hash. */
  checkClientSecret(req: Request, next: NextFunction): void {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const { client_id: clientId, client_secret: secret } = body;
    if (typeof clientId !== 'string' || typeof secret !== 'string') return next();
    this.loadClient(clientId).then(
      (client) => {
        if (!client?.secret) return next();
        const expected = Buffer.from(client.secret.hash);
        const actual = Buffer.from(sha256(client.secret.salt + secret));
        if (expected.length === actual.length && timingSafeEqual(expected, actual)) this.verifiedSecret.run({ clientId, secret }, next);
        else next();
      },
      (err) => next(err),
    );
  }

  async authorize(client: OAuthClientInformationFull, params: AuthorizationParams, res: Response): Promise<void> {
    // Refuse now what the code could never be exchanged for.
    if (params.resource && !this.deps.resources.includes(params.resource.href)) throw new InvalidTargetError(`resource must be one of ${this.deps.resources.join(', ')}`);
    const key = this.deps.keys.activeKey();
    const request = await new SignJWT({
      client_id: client.client_id,
      redirect_uri: params.redirectUri,
      code_challenge: params.codeChallenge,
      ...(params.state !== undefined ? { state: params.state } : {}),
      scopes: params.scopes ?? [],
      ...(params.resource ? { resource: params.resource.href } : {}),
    })
      .setProtectedHeader({ alg: jwsAlg(key.alg), kid: key.kid, typ: 'adcp-authz-request+jwt' })
      .setIssuer(this.deps.issuer)
      .setAudience(new URL('/oauth/login', this.deps.issuer).href)
      .setIssuedAt()
      .setExpirationTime(REQUEST_TTL)
      .sign(key.privateKey);
    res
      .status(200)
      .set(PAGE_HEADERS)
      .send(loginPage({ clientName: client.client_name ?? client.client_id, redirectHost: new URL(params.redirectUri).host, request, scopes: params.scopes ?? [] }));
  }

  /** POST /oauth/login: the signed request, the user's API key and their decision. */
  async login(req: Request, res: Response): Promise<void> {
    const body = (req.body ?? {}) as Record<string, unknown>;
    let request: { client_id: string; redirect_uri: string; code_challenge: string; state?: string; scopes: string[]; resource?: string };
    try {
      const { payload } = await jwtVerify(String(body.request ?? ''), (header) => this.deps.tokenKeys.key(header), {
        issuer: this.deps.issuer,
        audience: new URL('/oauth/login', this.deps.issuer).href,
        typ: 'adcp-authz-request+jwt',
      });
      request = payload as unknown as typeof request;
    } catch {
      res.status(400).set(PAGE_HEADERS).send(errorPage('This sign-in form has expired or was altered.'));
      return;
    }
    const back = new URL(request.redirect_uri);
    if (request.state !== undefined) back.searchParams.set('state', request.state);
    back.searchParams.set('iss', this.deps.issuer);
    if (body.decision === 'deny') {
      back.searchParams.set('error', 'access_denied');
      back.searchParams.set('error_description', 'the user denied the request');
      res.redirect(302, back.href);
      return;
    }
    // A key that verifies signs in whatever else its address sent; once the address has spent its
    // failures, every further failure is answered 429 (and no longer counted): see docs/limits.md.
    const address = req.ip ?? '';
    const principal = typeof body.api_key === 'string' ? await verifyApiKey(this.deps.readModels, this.deps.cache, body.api_key.trim()) : null;
    if (!principal) {
      const blocked = await this.deps.authFailures?.blocked(address);
      if (blocked) {
        res
          .status(429)
          .set({ ...PAGE_HEADERS, 'retry-after': String(blocked.resetSeconds) })
          .send(errorPage(`Too many failed sign-ins from this address. Try again in ${blocked.resetSeconds} seconds.`));
        return;
      }
      await this.deps.authFailures?.record(address);
    }
    const client = await this.loadClient(request.client_id);
    if (!principal || !client) {
      res
        .status(401)
        .set(PAGE_HEADERS)
        .send(
          loginPage({
            clientName: String(client?.metadata.client_name ?? request.client_id),
            redirectHost: back.host,
            request: String(body.request),
            scopes: request.scopes,
            error: client ? 'That API key is unknown or revoked.' : 'The application is no longer registered.',
          }),
        );
      return;
    }
    const code = newToken();
    await this.issueGrant(code, {
      kind: 'authorization_code',
      clientId: request.client_id,
      subject: { keyId: principal.keyId, org: principal.org, role: principal.role },
      scopes: request.scopes,
      ...(request.resource ? { resource: request.resource } : {}),
      codeChallenge: request.code_challenge,
      redirectUri: request.redirect_uri,
      family: randomUUID(),
      expiresAt: new Date(Date.now() + CODE_TTL_MS).toISOString(),
    });
    back.searchParams.set('code', code);
    res.redirect(302, back.href);
  }

  /**
   * Runs before the SDK checks the PKCE verifier: a used code still answers its challenge here,
   * and only a caller who also holds the verifier reaches the exchange, where a replay ends the
   * grant. A replay without the verifier is refused by the PKCE check and ends nothing.
   */
  async challengeForAuthorizationCode(client: OAuthClientInformationFull, code: string): Promise<string> {
    const grant = await this.grantOf(code, 'authorization_code', client, 'allow');
    return grant.codeChallenge!;
  }

  async exchangeAuthorizationCode(client: OAuthClientInformationFull, code: string, _verifier?: string, redirectUri?: string, resource?: URL): Promise<OAuthTokens> {
    const grant = await this.grantOf(code, 'authorization_code', client, 'revoke');
    if (redirectUri !== undefined && redirectUri !== grant.redirectUri) throw new InvalidGrantError('redirect_uri does not match the authorization request');
    // Every check before the code is spent: a malformed request must not cost the user the grant.
    const audience = this.audienceFor(grant, resource);
    await this.use(code, grant);
    return this.issueTokens(client, grant, grant.scopes, audience);
  }

  async exchangeRefreshToken(client: OAuthClientInformationFull, refreshToken: string, scopes?: string[], resource?: URL): Promise<OAuthTokens> {
    const grant = await this.grantOf(refreshToken, 'refresh_token', client, 'revoke');
    if (scopes?.some((s) => !grant.scopes.includes(s))) throw new InvalidScopeError('a refresh cannot widen the granted scopes');
    const audience = this.audienceFor(grant, resource);
    await this.use(refreshToken, grant);
    // The new refresh token keeps the grant's scopes (RFC 6749 §6); only this access token is narrowed.
    return this.issueTokens(client, grant, scopes ?? grant.scopes, audience);
  }

  /** The `aud` for tokens from this grant: the resource it was granted for (RFC 8707), one of ours. */
  private audienceFor(grant: Grant, resource: URL | undefined): string | undefined {
    if (resource && grant.resource && resource.href !== grant.resource) throw new InvalidTargetError('resource does not match the one this grant is for');
    const audience = resource?.href ?? grant.resource;
    if (audience !== undefined && !this.deps.resources.includes(audience)) throw new InvalidTargetError(`resource must be one of ${this.deps.resources.join(', ')}`);
    return audience;
  }

  async verifyAccessToken(token: string): Promise<AuthInfo> {
    try {
      const verified = await this.deps.verifier.verify(token);
      return {
        token,
        clientId: verified.clientId ?? '',
        scopes: verified.scopes,
        ...(verified.claims.exp ? { expiresAt: verified.claims.exp } : {}),
        extra: { principal: verified.principal },
      };
    } catch (err) {
      throw new InvalidTokenError((err as Error).message);
    }
  }

  /** Revoking a refresh token ends its whole family, the access tokens issued from it included (RFC 7009 §2.1). */
  async revokeToken(client: OAuthClientInformationFull, request: OAuthTokenRevocationRequest): Promise<void> {
    const { state } = await loadState(this.deps.store, oauthGrantStream(sha256(request.token)), grantDecider);
    if (state.status === 'none' || state.grant.kind !== 'refresh_token' || state.grant.clientId !== client.client_id) return;
    await this.revokeFamily(state.grant.family, 'revoked by the client');
  }

  private async loadClient(clientId: string): Promise<RegisteredClient | undefined> {
    if (!/^[\w-]{1,128}$/.test(clientId)) return undefined;
    const events = await this.deps.store.readStream(oauthClientStream(clientId));
    return (events[0] as unknown as OAuthClientEvent | undefined)?.data;
  }

  /** `onReuse`: a used credential presented again ends its whole grant family, or (for the PKCE lookup) passes. */
  private async grantOf(token: string, kind: Grant['kind'], client: OAuthClientInformationFull, onReuse: 'revoke' | 'allow'): Promise<Grant> {
    const { state } = await loadState(this.deps.store, oauthGrantStream(sha256(token)), grantDecider);
    if (state.status === 'none' || state.grant.kind !== kind || state.grant.clientId !== client.client_id) throw new InvalidGrantError(`unknown ${kind.replace('_', ' ')}`);
    if (Date.parse(state.grant.expiresAt) <= Date.now()) throw new InvalidGrantError(`${kind.replace('_', ' ')} expired`);
    if ((await this.deps.store.readStream(oauthFamilyStream(state.grant.family))).length > 0) throw new InvalidGrantError('this grant was revoked');
    if (state.status === 'used') {
      if (onReuse === 'allow') return state.grant;
      // A second use means the credential leaked (RFC 9700 §4.14): end everything it led to.
      await this.revokeFamily(state.grant.family, `${kind} reused`);
      throw new InvalidGrantError(`${kind.replace('_', ' ')} already used; every token from this grant is revoked`);
    }
    return state.grant;
  }

  /** Marks the credential used; of two concurrent uses exactly one wins (the append is conditional). */
  private async use(token: string, grant: Grant): Promise<void> {
    try {
      await handleCommand(this.deps.store, oauthGrantStream(sha256(token)), grantDecider, { type: 'UseGrant', now: new Date().toISOString() }, { now: new Date().toISOString() }, 0);
    } catch (err) {
      if (err instanceof AppError || err instanceof ConcurrencyError) {
        await this.revokeFamily(grant.family, `${grant.kind} reused`);
        throw new InvalidGrantError('grant already used');
      }
      throw new TemporarilyUnavailableError('the grant store is unavailable');
    }
  }

  private async issueTokens(client: OAuthClientInformationFull, grant: Grant, scopes: readonly string[], resource: string | undefined): Promise<OAuthTokens> {
    // A revoked key ends the user's access at the next refresh.
    const { state: key } = await loadState(this.deps.store, apiKeyStream(grant.subject.keyId), apiKeyDecider);
    if (key.status !== 'active') {
      await this.revokeFamily(grant.family, 'the API key behind this grant was revoked');
      throw new InvalidGrantError('the API key behind this grant was revoked');
    }
    const refreshToken = newToken();
    await this.issueGrant(refreshToken, {
      kind: 'refresh_token',
      clientId: client.client_id,
      subject: grant.subject,
      scopes: [...grant.scopes],
      ...(resource ? { resource } : {}),
      family: grant.family,
      expiresAt: new Date(Date.now() + REFRESH_TTL_MS).toISOString(),
    });
    return {
      access_token: await this.accessToken(client.client_id, grant, scopes, resource),
      token_type: 'Bearer',
      expires_in: this.deps.accessTokenTtlSeconds,
      refresh_token: refreshToken,
      ...(scopes.length ? { scope: scopes.join(' ') } : {}),
    };
  }

  /**
   * RFC 9068 access token: `sub` is the API key, `org` and `adcp_role` its organization and role,
   * `sid` the grant family it comes from (the token check refuses it once the family is revoked).
   * Without a resource its `aud` is every API of the gateway.
   */
  private accessToken(clientId: string, grant: Grant, scopes: readonly string[], resource: string | undefined): Promise<string> {
    const key = this.deps.keys.activeKey();
    const { claim, value } = this.deps.adminClaim;
    const subject = grant.subject;
    return new SignJWT({
      client_id: clientId,
      sid: grant.family,
      org: subject.org,
      adcp_role: subject.role,
      ...(subject.role === 'admin' && claim !== 'adcp_role' ? { [claim]: value } : {}),
      ...(scopes.length ? { scope: scopes.join(' ') } : {}),
    })
      .setProtectedHeader({ alg: jwsAlg(key.alg), kid: key.kid, typ: 'at+jwt' })
      .setIssuer(this.deps.issuer)
      .setSubject(subject.keyId)
      .setAudience(resource ?? this.deps.audiences)
      .setIssuedAt()
      .setJti(randomUUID())
      .setExpirationTime(`${this.deps.accessTokenTtlSeconds}s`)
      .sign(key.privateKey);
  }

  private async issueGrant(token: string, grant: Grant): Promise<void> {
    const now = new Date().toISOString();
    await handleCommand(this.deps.store, oauthGrantStream(sha256(token)), grantDecider, { type: 'IssueGrant', grant, now }, { now, principal: grant.subject.keyId }, 0);
  }

  /** Ends the grant: its codes and refresh tokens here, its access tokens at the token check, once the read models show it (awaited). */
  private async revokeFamily(family: string, reason: string): Promise<void> {
    await appendOnce(this.deps.store, oauthFamilyStream(family), [{ type: 'OAuthTokenFamilyRevoked', data: { family, reason, at: new Date().toISOString() } }]);
    await this.deps.settled?.();
  }
}

const jwsAlg = (alg: 'ed25519' | 'ecdsa-p256-sha256') => (alg === 'ed25519' ? 'EdDSA' : 'ES256');

/** Hosts a plain-http redirect URI may name (OAuth 2.1 §8.4.2, RFC 8252 §7.3); the URL parser spells IPv6 in brackets. */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * Why a client may not register this redirect URI (RFC 7591 `invalid_redirect_uri`), or undefined:
 * a fragment never (RFC 6749 §3.1.2), plain http only on loopback (OAuth 2.1). Other schemes are
 * native apps' private-use schemes (RFC 8252 §7.1); the SDK already refuses javascript:, data: and vbscript:.
 */
export function redirectUriProblem(uri: unknown): string | undefined {
  if (typeof uri !== 'string' || !URL.canParse(uri)) return `redirect URI ${JSON.stringify(uri)} is not a URL`;
  if (uri.includes('#')) return `redirect URI ${uri} has a fragment (#), which a redirect URI may not`;
  const url = new URL(uri);
  if (url.protocol === 'http:' && !LOOPBACK_HOSTS.has(url.hostname)) return `redirect URI ${uri} is plain http off loopback: use https, or http on 127.0.0.1, [::1] or localhost`;
  return undefined;
}

/** Why registered client metadata cannot be kept (the log's limits on any JSON it stores), or null. */
function unstorableMetadata(metadata: object): string | null {
  let text: string;
  try {
    text = JSON.stringify(metadata);
  } catch {
    return 'client metadata cannot be serialized';
  }
  if (jsonNestingDepth(text) > MAX_JSON_DEPTH) return `client metadata nests deeper than ${MAX_JSON_DEPTH} levels`;
  if (hasUnstorableEscape(text)) return 'a text field contains U+0000 (NUL) or an unpaired surrogate, which cannot be stored';
  return null;
}
