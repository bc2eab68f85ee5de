import type { FastifyRequest } from 'fastify';
import { accessTokenRevocation, verifyApiKey, type Principal } from '../application/api-keys';
import type { App } from '../services';
import { AppError } from '../shared/errors';
import { InvalidAccessToken, looksLikeJwt, TokenKeysUnavailable, type ApiResource } from '../oauth/access-tokens';
import { bearerChallenge } from './errors';

type AuthDeps = Pick<App, 'ports' | 'oauth'>;

/**
 * Resolves the Bearer credential, if any: an `sk_` API key, or a user JWT (spec §5.1) checked
 * against the OAuth issuer and the API the request is for. No header → anonymous (null); a
 * credential that does not verify → UNAUTHENTICATED (401 with `WWW-Authenticate: Bearer
 * error="invalid_token"`), so a typo never silently degrades to anonymous access.
 */
export function authenticate(req: FastifyRequest, app: AuthDeps): Promise<Principal | null> {
  // Once per request: the request limits resolve the caller before the route does.
  return (req.principalOutcome ??= principalOf(req.headers.authorization, app, apiOfPath(req.url)));
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller, once authenticate() has been asked (the server decorates requests with null). */
    principalOutcome: Promise<Principal | null> | null;
  }
}

/**
 * The API (RFC 8707 resource) a request path belongs to, whose tokens it accepts: MCP, A2A (also
 * at the agent's base URL), GraphQL (HTTP and its streams), else the REST API.
 */
export function apiOfPath(url: string): ApiResource {
  if (/^\/mcp(\/|\?|$)/.test(url)) return 'mcp';
  if (/^\/(a2a(\/|\?|$)|\?|$)/.test(url)) return 'a2a';
  if (/^\/graphql(\/|\?|$)/.test(url)) return 'graphql';
  return 'api';
}

/** A credential was presented and does not verify: RFC 6750's `invalid_token`. */
const invalidToken = (message: string) => new AppError('UNAUTHENTICATED', message, undefined, { bearer_error: 'invalid_token' });

/**
 * The caller an `Authorization` value names (null: none given) on `api`, for transports that
 * carry it elsewhere than a request's header too (a WebSocket's connection_init payload).
 */
export async function principalOf(header: string | undefined, app: AuthDeps, api: ApiResource): Promise<Principal | null> {
  if (header === undefined) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!m) throw new AppError('UNAUTHENTICATED', 'Authorization must be "Bearer <key>"');
  const token = m[1]!;
  if (looksLikeJwt(token)) {
    let verified;
    try {
      verified = await app.oauth.verifier.verify(token, api);
    } catch (err) {
      if (err instanceof InvalidAccessToken) throw invalidToken(`invalid access token: ${err.message}`);
      if (err instanceof TokenKeysUnavailable) throw new AppError('UNAVAILABLE', `cannot check access tokens now: ${err.message}`);
      throw err;
    }
    const { principal, grant } = verified;
    // The embedded server's tokens act as an API key and come from a grant: revoking either ends
    // them at once. One cached lookup per token (dropped when this instance applies a revocation;
    // another instance's shows within the cache's second).
    if (app.oauth.embedded) {
      const revoked = await accessTokenRevocation(app.ports, principal.keyId, grant);
      if (revoked) throw invalidToken(`invalid access token: ${revoked}`);
    }
    return principal;
  }
  const principal = await verifyApiKey(app.ports.readModels, app.ports.cache, token);
  if (!principal) throw invalidToken('unknown or revoked API key');
  return principal;
}

/**
 * For routes that answer their own `{error}` 401: the principal, or the `WWW-Authenticate`
 * challenge to refuse with (none given, or one that does not verify).
 */
export async function principalOrChallenge(req: FastifyRequest, app: AuthDeps): Promise<Principal | { challenge: string }> {
  try {
    return (await authenticate(req, app)) ?? { challenge: 'Bearer' };
  } catch (err) {
    if (err instanceof AppError && err.code === 'UNAUTHENTICATED') return { challenge: bearerChallenge(err) };
    throw err;
  }
}
