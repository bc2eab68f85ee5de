import type { FastifyRequest } from 'fastify';
import { apiKeyQueries } from '../../projections/api-keys';
import { verifyApiKey, type Principal } from '../application/api-keys';
import type { App } from '../app';
import { AppError } from '../shared/errors';
import { InvalidAccessToken, looksLikeJwt, TokenKeysUnavailable } from '../oauth/access-tokens';

/**
 * Resolves the Bearer credential, if any: an `sk_` API key, or a user JWT (spec §5.1) checked
 * against the OAuth issuer. No header → anonymous (null); a credential that does not verify →
 * UNAUTHENTICATED (401 with `WWW-Authenticate: Bearer`), so a typo never
 * silently degrades to anonymous access.
 */
export function authenticate(req: FastifyRequest, app: Pick<App, 'readModels' | 'cache' | 'oauth'>): Promise<Principal | null> {
  // Once per request: the request limits resolve the caller before the route does.
  return (req.principalOutcome ??= resolvePrincipal(req, app));
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller, once authenticate() has been asked (the server decorates requests with null). */
    principalOutcome: Promise<Principal | null> | null;
  }
}

function resolvePrincipal(req: FastifyRequest, app: Pick<App, 'readModels' | 'cache' | 'oauth'>): Promise<Principal | null> {
  return principalOf(req.headers.authorization, app);
}

/**
 * The caller an `Authorization` value names (null: none given), for transports that carry it
 * elsewhere than a request's header (a WebSocket's connection_init payload).
 */
export async function principalOf(header: string | undefined, app: Pick<App, 'readModels' | 'cache' | 'oauth'>): Promise<Principal | null> {
  if (header === undefined) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!m) throw new AppError('UNAUTHENTICATED', 'Authorization must be "Bearer <key>"');
  const token = m[1]!;
  if (looksLikeJwt(token)) {
    let principal: Principal;
    try {
      principal = (await app.oauth.verifier.verify(token)).principal;
    } catch (err) {
      if (err instanceof InvalidAccessToken) throw new AppError('UNAUTHENTICATED', `invalid access token: ${err.message}`);
      if (err instanceof TokenKeysUnavailable) throw new AppError('UNAVAILABLE', `cannot check access tokens now: ${err.message}`);
      throw err;
    }
    // The embedded server's tokens act as an API key: revoking the key ends them at once (the
    // lookup is cached, and the cache is dropped when this instance applies a revocation).
    if (app.oauth.embedded && !(await app.cache.get(`api-key-active:${principal.keyId}`, () => apiKeyQueries.active(app.readModels, principal.keyId)))) {
      throw new AppError('UNAUTHENTICATED', 'invalid access token: the API key it acts for was revoked');
    }
    return principal;
  }
  const principal = await verifyApiKey(app.readModels, app.cache, token);
  if (!principal) throw new AppError('UNAUTHENTICATED', 'unknown or revoked API key');
  return principal;
}

/** For routes that answer their own `{error}` 401: the principal, or null for none and for a bad key alike. */
export async function principalOrNull(req: FastifyRequest, app: Pick<App, 'readModels' | 'cache' | 'oauth'>): Promise<Principal | null> {
  try {
    return await authenticate(req, app);
  } catch (err) {
    if (err instanceof AppError && err.code === 'UNAUTHENTICATED') return null;
    throw err;
  }
}
