import { generateKeyPairSync } from 'node:crypto';
import { SignJWT, exportJWK } from 'jose';
import { issueApiKey, revokeApiKey } from '../../src/application/api-keys';
import { startTestGateway } from '../support/gateway';
import { eventually } from '../support/infra';
import { form, pkce, REDIRECT } from '../support/oauth';
import { startOrigins } from '../support/origins';
import { mcpClientOAuth } from '../support/sdk-oracle';


describe('OAuth: the embedded authorization server (authorization code + PKCE) and user JWTs', () => {
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  let origins: Awaited<ReturnType<typeof startOrigins>>;
  let adminKey: string;
  let buyerKey: string;
  let buyerKeyId: string;

  beforeAll(async () => {
    // The revalidation target: a domain served locally, so an admin's token gets a real 200.
    origins = await startOrigins({ 'pub.example': { '/.well-known/adagents.json': { body: { authorized_agents: [] } } } });
    gw = await startTestGateway({ REGISTRY_ORIGIN_OVERRIDES: origins.overrides });
    const now = { now: new Date().toISOString() };
    adminKey = (await issueApiKey(gw.app.store, { org: 'ops', role: 'admin' }, now)).key;
    const buyer = await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, now);
    buyerKey = buyer.key;
    buyerKeyId = buyer.keyId;
    await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 20_000, 'readyz');
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
    await origins?.close();
  });

  const register = async (metadata: Record<string, unknown> = {}) => {
    const r = await fetch(`${gw.url}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [REDIRECT], client_name: 'Media planner', token_endpoint_auth_method: 'none', ...metadata }),
    });
    return { status: r.status, body: (await r.json()) as Record<string, any> };
  };

  /** The browser's part: open /authorize, submit the sign-in form, follow nothing (read the redirect). */
  const signIn = async (clientId: string, apiKey: string, challenge: string, decision = 'approve') => {
    const authorize = new URL(`${gw.url}/authorize`);
    for (const [k, v] of Object.entries({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', state: 'st-1', scope: 'openid' })) {
      authorize.searchParams.set(k, v);
    }
    const page = await fetch(authorize, { redirect: 'manual' });
    expect(page.status).toBe(200);
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    const html = await page.text();
    const request = /name="request" value="([^"]+)"/.exec(html)![1]!;
    const answer = await fetch(`${gw.url}/oauth/login`, form({ request, api_key: apiKey, decision }));
    return { status: answer.status, location: answer.headers.get('location'), html: answer.status === 200 || answer.status >= 400 ? await answer.text() : '', request };
  };

  const exchange = async (fields: Record<string, string>) => {
    const r = await fetch(`${gw.url}/token`, form(fields));
    return { status: r.status, body: (await r.json()) as Record<string, any> };
  };

  /** Register, sign in, exchange the code: a fresh token pair for `apiKey`. */
  const tokensFor = async (apiKey: string) => {
    const client = (await register()).body;
    const { verifier, challenge } = pkce();
    const { location } = await signIn(client.client_id, apiKey, challenge);
    const code = new URL(location!).searchParams.get('code')!;
    const tokens = await exchange({ grant_type: 'authorization_code', code, code_verifier: verifier, client_id: client.client_id, redirect_uri: REDIRECT });
    expect(tokens.status).toBe(200);
    return { client, code, verifier, tokens: tokens.body };
  };

  const revalidate = async (token: string | null) => {
    const r = await fetch(`${gw.url}/api/registry/publisher/pub.example/adagents/revalidate?force=1`, { method: 'POST', headers: token ? { authorization: `Bearer ${token}` } : {} });
    return { status: r.status, body: (await r.json()) as Record<string, any> };
  };

  const viewer = async (token: string) => {
    const r = await fetch(`${gw.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query: '{ viewer { org role } }' }),
    });
    return ((await r.json()) as { data: { viewer: unknown } }).data.viewer;
  };

  it('publishes protected-resource and authorization-server metadata that point at each other', async () => {
    const prm = await fetch(`${gw.url}/.well-known/oauth-protected-resource/api`);
    expect(prm.status).toBe(200);
    const resource = (await prm.json()) as Record<string, any>;
    expect(resource).toMatchObject({ resource: `${gw.url}/api`, authorization_servers: [`${gw.url}/`], bearer_methods_supported: ['header'] });
    const as = await fetch(`${gw.url}/.well-known/oauth-authorization-server`);
    expect(as.status).toBe(200);
    const metadata = (await as.json()) as Record<string, any>;
    expect(metadata).toMatchObject({
      issuer: resource.authorization_servers[0],
      authorization_endpoint: `${gw.url}/authorize`,
      token_endpoint: `${gw.url}/token`,
      registration_endpoint: `${gw.url}/register`,
      revocation_endpoint: `${gw.url}/revoke`,
      response_types_supported: ['code'],
      code_challenge_methods_supported: ['S256'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      jwks_uri: `${gw.url}/oauth/jwks.json`,
    });
    const jwks = (await (await fetch(metadata.jwks_uri)).json()) as { keys: Record<string, unknown>[] };
    expect(jwks.keys.length).toBeGreaterThan(0);
    for (const k of jwks.keys) {
      expect(k).not.toHaveProperty('d');
      expect(k).not.toHaveProperty('adcp_use');
    }
  });

  it('the whole flow: register → authorize → sign in with an API key → code → token; the JWT acts with the key\'s role', async () => {
    const { tokens } = await tokensFor(adminKey);
    expect(tokens).toMatchObject({ token_type: 'Bearer', expires_in: 900, scope: 'openid' });
    expect(tokens.access_token.split('.')).toHaveLength(3);
    expect(typeof tokens.refresh_token).toBe('string');
    const header = JSON.parse(Buffer.from(tokens.access_token.split('.')[0], 'base64url').toString());
    expect(header).toMatchObject({ alg: 'EdDSA', typ: 'at+jwt' });

    const asAdmin = await revalidate(tokens.access_token);
    expect(asAdmin.status).toBe(200);
    expect(asAdmin.body.domain).toBe('pub.example');

    const buyer = await tokensFor(buyerKey);
    expect(await revalidate(buyer.tokens.access_token)).toEqual({ status: 403, body: { error: 'Admin access required' } });
    // The same token works on the GraphQL API as the buyer.
    expect(await viewer(buyer.tokens.access_token)).toEqual({ org: 'acme', role: 'buyer' });
  });

  it('interop: the MCP SDK\'s OAuth client discovers, registers, signs in with PKCE, exchanges and refreshes', async () => {
    // GraphQL is a resource of its own (RFC 8707): the client asks for a token for it.
    const flow = await mcpClientOAuth(`${gw.url}/graphql`, adminKey);
    expect(flow.authorizationUrl.startsWith(`${gw.url}/authorize?`)).toBe(true);
    expect(flow.resource).toBe(`${gw.url}/graphql`);
    expect(flow.refreshed).not.toBe(flow.first);
    expect(await viewer(flow.first)).toEqual({ org: 'ops', role: 'admin' });
    expect(await viewer(flow.refreshed)).toEqual({ org: 'ops', role: 'admin' });
  }, 30_000);

  it('the sign-in form: a wrong key re-asks (401), deny redirects with access_denied, a tampered form is refused', async () => {
    const client = (await register()).body;
    const { challenge } = pkce();
    const wrong = await signIn(client.client_id, 'sk_AAAAAAAA_' + 'B'.repeat(32), challenge);
    expect(wrong.status).toBe(401);
    expect(wrong.html).toContain('unknown or revoked');

    const denied = await signIn(client.client_id, adminKey, challenge, 'deny');
    expect(denied.status).toBe(302);
    const back = new URL(denied.location!);
    expect(`${back.origin}${back.pathname}`).toBe(REDIRECT);
    expect(Object.fromEntries(back.searchParams)).toMatchObject({ error: 'access_denied', state: 'st-1', iss: `${gw.url}/` });

    const [h, p, s] = wrong.request.split('.');
    const claims = JSON.parse(Buffer.from(p!, 'base64url').toString());
    const forged = `${h}.${Buffer.from(JSON.stringify({ ...claims, redirect_uri: 'https://evil.example/cb' })).toString('base64url')}.${s}`;
    const tampered = await fetch(`${gw.url}/oauth/login`, form({ request: forged, api_key: adminKey, decision: 'approve' }));
    expect(tampered.status).toBe(400);
    expect(tampered.headers.get('location')).toBeNull();
  });

  it('PKCE and one-time codes: a wrong verifier, a second use (which also revokes what the first one issued), a wrong redirect_uri', async () => {
    const client = (await register()).body;
    const { verifier, challenge } = pkce();
    const code = new URL((await signIn(client.client_id, adminKey, challenge)).location!).searchParams.get('code')!;
    const base = { grant_type: 'authorization_code', code, client_id: client.client_id, redirect_uri: REDIRECT };

    expect(await exchange({ ...base, code_verifier: pkce().verifier })).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(await exchange({ ...base, code_verifier: verifier, redirect_uri: 'http://127.0.0.1:1/other' })).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    const first = await exchange({ ...base, code_verifier: verifier });
    expect(first.status).toBe(200);
    expect(await exchange({ ...base, code_verifier: verifier })).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    // The replay ended the grant: the refresh token from the first exchange no longer works.
    expect(await exchange({ grant_type: 'refresh_token', refresh_token: first.body.refresh_token, client_id: client.client_id })).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  });

  it('refresh tokens rotate; reusing an old one revokes the family; revoking the API key ends refreshes', async () => {
    const { client, tokens } = await tokensFor(adminKey);
    const refreshed = await exchange({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.client_id });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.refresh_token).not.toBe(tokens.refresh_token);
    expect(await viewer(refreshed.body.access_token)).toEqual({ org: 'ops', role: 'admin' });
    expect(await exchange({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.client_id })).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(await exchange({ grant_type: 'refresh_token', refresh_token: refreshed.body.refresh_token, client_id: client.client_id })).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });

    const buyer = await tokensFor(buyerKey);
    await revokeApiKey(gw.app.store, buyerKeyId, { now: new Date().toISOString() });
    expect(await exchange({ grant_type: 'refresh_token', refresh_token: buyer.tokens.refresh_token, client_id: buyer.client.client_id })).toMatchObject({ status: 400, body: { error: 'invalid_grant', error_description: expect.stringContaining('revoked') } });
  });

  it('bad input gets OAuth errors, never a 5xx: malformed and oversized registrations, a token request without a grant, an unknown client', async () => {
    const post = (path: string, body: string, type = 'application/json') => fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': type }, body });
    const malformed = await post('/register', '{bad');
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as any).error).toBe('invalid_request');
    const noRedirects = await post('/register', JSON.stringify({ client_name: 'x' }));
    expect(noRedirects.status).toBe(400);
    expect(((await noRedirects.json()) as any).error).toBe('invalid_client_metadata');
    const huge = await post('/register', JSON.stringify({ redirect_uris: [REDIRECT], client_name: 'x'.repeat(200_000) }));
    expect(huge.status).toBe(413);
    expect(await exchange({ client_id: 'nobody' })).toMatchObject({ status: 400, body: { error: 'invalid_client' } });
    const clientless = await exchange({ grant_type: 'authorization_code', code: 'x', code_verifier: 'y'.repeat(43) });
    expect(clientless.status).toBe(400);
    // A JSON or empty POST to /authorize is a bad request, not a server error.
    expect((await post('/authorize', '{"client_id":"x"}')).status).toBe(400);
    expect((await fetch(`${gw.url}/authorize`, { method: 'POST' })).status).toBe(400);
    const unknownClient = await fetch(`${gw.url}/authorize?response_type=code&client_id=nobody&redirect_uri=${encodeURIComponent(REDIRECT)}&code_challenge=abc&code_challenge_method=S256`, { redirect: 'manual' });
    expect(unknownClient.status).toBe(400);
  });

  it('a bad request does not spend the grant: wrong resource on refresh, a replayed code without the verifier, a narrowed scope', async () => {
    const { client, code, tokens } = await tokensFor(adminKey);
    // A resource this gateway does not serve: refused, and the refresh token still works.
    expect(await exchange({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.client_id, resource: 'https://elsewhere.example/api' })).toMatchObject({ status: 400, body: { error: 'invalid_target' } });
    // Someone replaying the used code without its verifier is refused and ends nothing.
    expect(await exchange({ grant_type: 'authorization_code', code, code_verifier: pkce().verifier, client_id: client.client_id, redirect_uri: REDIRECT })).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    const narrowed = await exchange({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.client_id, scope: 'openid' });
    expect(narrowed.status).toBe(200);
    // Narrowing one access token keeps the grant's scopes for the next refresh (RFC 6749 §6).
    const again = await exchange({ grant_type: 'refresh_token', refresh_token: narrowed.body.refresh_token, client_id: client.client_id });
    expect(again).toMatchObject({ status: 200, body: { scope: 'openid' } });
  });

  it('a malformed authorization request gets an error page here, never a redirect to the client (open registration)', async () => {
    const client = (await register()).body;
    const good = { response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT, code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 's' };
    for (const [change, why] of [
      [{ resource: 'https://elsewhere.example/api' }, 'resource must be one of'],
      [{ code_challenge: '' }, 'code_challenge is required'],
      [{ code_challenge_method: 'plain' }, 'S256'],
      [{ response_type: 'token' }, 'response_type'],
    ] as const) {
      const authorize = new URL(`${gw.url}/authorize`);
      for (const [k, v] of Object.entries({ ...good, ...change })) authorize.searchParams.set(k, v);
      const refused = await fetch(authorize, { redirect: 'manual' });
      expect(refused.status).toBe(400);
      expect(refused.headers.get('location')).toBeNull();
      expect(await refused.text()).toContain(why);
    }
  });

  it('revoking the API key ends the access tokens minted from it at once', async () => {
    const doomed = await issueApiKey(gw.app.store, { org: 'temp', role: 'seller' }, { now: new Date().toISOString() });
    await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 10_000, 'key projected');
    const { tokens } = await tokensFor(doomed.key);
    expect(await viewer(tokens.access_token)).toEqual({ org: 'temp', role: 'seller' });
    await revokeApiKey(gw.app.store, doomed.keyId, { now: new Date().toISOString() });
    await eventually(async () => {
      const r = await fetch(`${gw.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${tokens.access_token}` }, body: '{"query":"{ viewer { org } }"}' });
      return r.status === 401 && JSON.stringify(await r.json()).includes('revoked');
    }, 10_000, 'the token refused');
  });

  it('a confidential client: its secret is required, compared, and never stored in the clear', async () => {
    const { status, body: client } = await register({ token_endpoint_auth_method: 'client_secret_post' });
    expect(status).toBe(201);
    expect(typeof client.client_secret).toBe('string');
    const { verifier, challenge } = pkce();
    const code = new URL((await signIn(client.client_id, adminKey, challenge)).location!).searchParams.get('code')!;
    const base = { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: client.client_id, redirect_uri: REDIRECT };
    expect(await exchange(base)).toMatchObject({ status: 400, body: { error: 'invalid_client' } });
    expect(await exchange({ ...base, client_secret: 'x'.repeat(64) })).toMatchObject({ status: 400, body: { error: 'invalid_client' } });
    expect((await exchange({ ...base, client_secret: client.client_secret })).status).toBe(200);

    const log = JSON.stringify(await gw.app.store.readAll({ limit: 100_000 }));
    expect(log).not.toContain(client.client_secret);
    expect(log).not.toContain(code);
  });

  it('bad tokens get 401 with a reason: tampered, unsigned, signed by a key the issuer does not publish', async () => {
    const { tokens } = await tokensFor(adminKey);
    const [h, p, s] = tokens.access_token.split('.');
    const flipped = `${h}.${p}.${s!.startsWith('A') ? 'B' : 'A'}${s!.slice(1)}`;
    const claims = JSON.parse(Buffer.from(p!, 'base64url').toString());
    const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${p}.`;

    const { privateKey } = generateKeyPairSync('ed25519');
    const sign = (over: Record<string, unknown>, exp = '5m') =>
      new SignJWT({ ...claims, ...over }).setProtectedHeader({ alg: 'EdDSA', kid: h && JSON.parse(Buffer.from(h, 'base64url').toString()).kid }).setExpirationTime(exp).sign(privateKey);

    for (const [token, reason] of [
      [flipped, 'signature'],
      [`${unsigned}x`, ''],
      [await sign({}), 'signature'],
    ] as const) {
      const r = await revalidate(token);
      expect(r.status).toBe(401);
      expect(r.body).toEqual({ error: 'Authentication required' });
      const gql = await fetch(`${gw.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: '{"query":"{ viewer { org } }"}' });
      expect(gql.status).toBe(401);
      expect(gql.headers.get('www-authenticate')).toMatch(/^Bearer error="invalid_token", error_description="invalid access token/);
      expect(JSON.stringify(await gql.json())).toContain(reason ? `invalid access token: token ${reason}` : 'invalid access token');
    }
  });
});

describe('OAuth: tokens from an outside issuer', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  let origins: Awaited<ReturnType<typeof startOrigins>>;
  const ISSUER = 'https://idp.example';

  beforeAll(async () => {
    const jwk = { ...(await exportJWK(publicKey)), kid: 'idp-1', use: 'sig', alg: 'ES256' };
    origins = await startOrigins({
      'idp.example': {
        '/.well-known/oauth-authorization-server': { body: { issuer: ISSUER, jwks_uri: 'https://idp.example/keys' } },
        '/keys': { body: { keys: [jwk] } },
      },
      'pub.example': { '/.well-known/adagents.json': { body: { authorized_agents: [] } } },
    });
    gw = await startTestGateway({ OAUTH_ISSUER: ISSUER, OAUTH_ADMIN_CLAIM: 'roles=registry-admin', REGISTRY_ORIGIN_OVERRIDES: origins.overrides });
    await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 20_000, 'readyz');
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
    await origins?.close();
  });

  const token = (claims: Record<string, unknown>, opts: { aud?: string; exp?: string | number; iss?: string; kid?: string } = {}) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: opts.kid ?? 'idp-1' })
      .setIssuer(opts.iss ?? ISSUER)
      .setSubject('user_123')
      .setAudience(opts.aud ?? `${gw.url}/api`)
      .setIssuedAt()
      .setExpirationTime(opts.exp ?? '5m')
      .sign(privateKey);
  const revalidate = async (t: string) => {
    const r = await fetch(`${gw.url}/api/registry/publisher/pub.example/adagents/revalidate?force=1`, { method: 'POST', headers: { authorization: `Bearer ${t}` } });
    return r.status;
  };

  it('discovers the JWKS from the issuer metadata; the configured claim makes an admin', async () => {
    expect(await revalidate(await token({ roles: ['registry-admin'] }))).toBe(200);
    expect(await revalidate(await token({ roles: ['viewer'] }))).toBe(403);
    const prm = (await (await fetch(`${gw.url}/.well-known/oauth-protected-resource/api`)).json()) as Record<string, any>;
    expect(prm.authorization_servers).toEqual([ISSUER]);
    const as = await fetch(`${gw.url}/.well-known/oauth-authorization-server`);
    expect(as.status).toBe(404);
    expect(((await as.json()) as any).error_description).toContain(ISSUER);
  });

  it('an unreachable issuer: keys fetched before keep working; with none fetched yet the answer is 503, not 401', async () => {
    const admin = await token({ roles: ['registry-admin'] });
    expect(await revalidate(admin)).not.toBe(401);
    const lonely = await startTestGateway({ OAUTH_ISSUER: 'https://idp-down.example', REGISTRY_ORIGIN_OVERRIDES: 'idp-down.example=http://127.0.0.1:1' });
    try {
      const r = await fetch(`${lonely.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}` }, body: '{"query":"{ viewer { org } }"}' });
      expect(r.status).toBe(503);
    } finally {
      await lonely.stop();
    }
  });

  it('refuses a wrong issuer, a wrong audience, an expired token and an unknown key', async () => {
    const admin = { roles: ['registry-admin'] };
    expect(await revalidate(await token(admin, { iss: 'https://other.example' }))).toBe(401);
    expect(await revalidate(await token(admin, { aud: 'https://elsewhere.example/api' }))).toBe(401);
    expect(await revalidate(await token(admin, { exp: Math.floor(Date.now() / 1000) - 120 }))).toBe(401);
    expect(await revalidate(await token(admin, { kid: 'idp-unknown' }))).toBe(401);
    // The unknown kid cost at most one refetch of the keys.
    expect(origins.hits.filter((h) => h.path === '/keys').length).toBeLessThanOrEqual(2);
  });
});
