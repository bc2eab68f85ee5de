import WebSocket from 'ws';
import path from 'node:path';
import { issueApiKey } from '../../src/application/api-keys';
import { startTestGateway, tempDir } from '../support/gateway';
import { PG_ADMIN_URL, createTestDatabase, describeWith, eventually } from '../support/infra';
import { freshBudgetWindow } from '../support/limits';
import { form, pkce, REDIRECT } from '../support/oauth';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;
type Json = Record<string, any>;


/** One call on each API binding with `credential`, answered as status, headers and body. */
function bindings(gw: Gateway) {
  const send = async (path: string, body: unknown, credential: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${gw.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${credential}`, ...headers },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, challenge: res.headers.get('www-authenticate'), body: (text.startsWith('{') ? JSON.parse(text) : text) as Json };
  };
  let messages = 0;
  return {
    rest: (credential: string) => send('/api/tasks/get_products', { brief: 'video' }, credential),
    graphql: (credential: string) => send('/graphql', { query: '{ viewer { org role } }' }, credential),
    mcp: (credential: string) => send('/mcp', { jsonrpc: '2.0', id: 7, method: 'tools/list' }, credential, { accept: 'application/json, text/event-stream' }),
    a2a: (credential: string, path = '/a2a') =>
      send(path, { jsonrpc: '2.0', id: 8, method: 'message/send', params: { message: { kind: 'message', role: 'user', messageId: `m-${++messages}`, parts: [{ kind: 'data', data: { skill: 'get_products', parameters: { brief: 'video' } } }] } } }, credential),
    sse: (credential: string) => send('/graphql/stream', { query: '{ viewer { role } }' }, credential, { accept: 'text/event-stream' }),
    /** graphql-ws: what the server answers a connection_init carrying `credential` (its ack, or how it closes). */
    socket: (credential: string) =>
      new Promise<{ ack: true } | { code: number; reason: string }>((resolve, reject) => {
        const ws = new WebSocket(`${gw.url.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
        ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${credential}` } })));
        ws.on('message', (data) => {
          if ((JSON.parse(data.toString()) as { type: string }).type !== 'connection_ack') return;
          resolve({ ack: true });
          ws.close();
        });
        ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
        ws.on('error', reject);
      }),
  };
}

describe('issue 32: an OAuth token ends with its grant and works only on the resource it names; redirect URIs are checked', () => {
  let gw: Gateway;
  let buyerKey: string;
  let api: ReturnType<typeof bindings>;

  beforeAll(async () => {
    gw = await startTestGateway();
    buyerKey = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
    await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
    api = bindings(gw);
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
  });

  const register = async (metadata: Record<string, unknown> = {}) => {
    const r = await fetch(`${gw.url}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [REDIRECT], client_name: 'Media planner', token_endpoint_auth_method: 'none', ...metadata }),
    });
    return { status: r.status, body: (await r.json()) as Json };
  };
  const authorizeUrl = (params: Record<string, string>) => {
    const url = new URL(`${gw.url}/authorize`);
    for (const [k, v] of Object.entries({ response_type: 'code', redirect_uri: REDIRECT, code_challenge_method: 'S256', state: 'st', ...params })) url.searchParams.set(k, v);
    return url;
  };
  const exchange = async (fields: Record<string, string>) => {
    const r = await fetch(`${gw.url}/token`, form(fields));
    return { status: r.status, body: (await r.json()) as Json };
  };
  /** Register, sign in with the buyer's key (asking for `resource`, if given), and answer the code. */
  const codeFor = async (resource?: string) => {
    const client = (await register()).body;
    const { verifier, challenge } = pkce();
    const page = await fetch(authorizeUrl({ client_id: client.client_id, code_challenge: challenge, ...(resource ? { resource } : {}) }), { redirect: 'manual' });
    expect(page.status).toBe(200);
    const request = /name="request" value="([^"]+)"/.exec(await page.text())![1]!;
    const answer = await fetch(`${gw.url}/oauth/login`, form({ request, api_key: buyerKey, decision: 'approve' }));
    const code = new URL(answer.headers.get('location')!).searchParams.get('code')!;
    return { client, verifier, code, base: { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: client.client_id, redirect_uri: REDIRECT } };
  };
  const tokenFor = async (resource?: string) => {
    const { client, base } = await codeFor(resource);
    const tokens = await exchange(base);
    expect(tokens.status).toBe(200);
    return { client, tokens: tokens.body as { access_token: string; refresh_token: string } };
  };

  it('a reused authorization code also revokes the access token already issued from it (RFC 6749 §4.1.2)', async () => {
    const { base } = await codeFor();
    const first = await exchange(base);
    expect(first.status).toBe(200);
    expect(await api.graphql(first.body.access_token)).toMatchObject({ status: 200, body: { data: { viewer: { org: 'acme', role: 'buyer' } } } });
    expect(await exchange(base)).toMatchObject({ status: 400, body: { error: 'invalid_grant', error_description: expect.stringContaining('every token from this grant is revoked') } });
    // Refused at once, on every binding: the replay's answer came after the read models showed it.
    const gql = await api.graphql(first.body.access_token);
    expect(gql).toMatchObject({ status: 401, body: { errors: [{ message: expect.stringContaining('revoked'), extensions: { code: 'UNAUTHENTICATED' } }] } });
    expect(gql.challenge).toMatch(/^Bearer error="invalid_token"/);
    expect(await api.rest(first.body.access_token)).toMatchObject({ status: 401, body: { error: { code: 'UNAUTHENTICATED' } } });
    expect(await api.mcp(first.body.access_token)).toMatchObject({ status: 401, body: { error: { data: { adcp_error: { code: 'AUTH_REQUIRED' } } } } });
    expect((await api.a2a(first.body.access_token)).status).toBe(401);
  });

  it('revoking a refresh token at /revoke ends the access tokens of its grant too (RFC 7009 §2.1)', async () => {
    const { client, tokens } = await tokenFor();
    expect((await api.graphql(tokens.access_token)).status).toBe(200);
    const revoked = await fetch(`${gw.url}/revoke`, form({ token: tokens.refresh_token, client_id: client.client_id }));
    expect(revoked.status).toBe(200);
    expect(await api.graphql(tokens.access_token)).toMatchObject({ status: 401, body: { errors: [{ message: expect.stringContaining('revoked') }] } });
  });

  it('a token asked for one resource (RFC 8707) is refused on the others: 401 invalid_token in each binding’s shape', async () => {
    const forMcp = (await tokenFor(`${gw.url}/mcp`)).tokens.access_token;
    expect(JSON.parse(Buffer.from(forMcp.split('.')[1]!, 'base64url').toString()).aud).toBe(`${gw.url}/mcp`);
    expect((await api.mcp(forMcp)).status).toBe(200);
    const gql = await api.graphql(forMcp);
    expect(gql).toMatchObject({ status: 401, body: { errors: [{ message: expect.stringContaining(`${gw.url}/graphql`), extensions: { code: 'UNAUTHENTICATED' } }] } });
    expect(gql.challenge).toMatch(/^Bearer error="invalid_token", error_description="[^"]*audience/);
    const rest = await api.rest(forMcp);
    expect(rest).toMatchObject({ status: 401, body: { error: { code: 'UNAUTHENTICATED', message: expect.stringContaining('audience') } } });
    expect(rest.challenge).toMatch(/^Bearer error="invalid_token"/);
    expect((await api.sse(forMcp)).status).toBe(401);
    expect(await api.socket(forMcp)).toMatchObject({ code: 4403 });
    for (const path of ['/a2a', '/']) {
      const a2a = await api.a2a(forMcp, path);
      expect(a2a).toMatchObject({ status: 401, body: { jsonrpc: '2.0', error: { code: -32028, data: { adcp_error: { code: 'AUTH_REQUIRED' } } } } });
      expect(a2a.challenge).toContain('error="invalid_token"');
    }

    const forA2a = (await tokenFor(`${gw.url}/a2a`)).tokens.access_token;
    expect((await api.a2a(forA2a)).status).toBe(200);
    expect((await api.a2a(forA2a, '/')).status).toBe(200);
    const mcp = await api.mcp(forA2a);
    expect(mcp).toMatchObject({ status: 401, body: { error: { code: -32028, data: { adcp_error: { code: 'AUTH_REQUIRED' } } } } });
    expect(mcp.challenge).toContain('error="invalid_token"');

    // A2A at the base URL: its metadata names the origin, which a client may then ask for; the
    // token serves A2A (at / and /a2a) only.
    const base = await fetch(`${gw.url}/.well-known/oauth-protected-resource`);
    const baseResource = ((await base.json()) as { resource: string }).resource;
    const forBase = (await tokenFor(baseResource)).tokens.access_token;
    expect((await api.a2a(forBase, '/')).status).toBe(200);
    expect((await api.a2a(forBase)).status).toBe(200);
    expect((await api.mcp(forBase)).status).toBe(401);
    expect((await api.graphql(forBase)).status).toBe(401);

    const forApi = (await tokenFor(`${gw.url}/api`)).tokens.access_token;
    expect((await api.rest(forApi)).status).toBe(200);
    expect((await api.graphql(forApi)).status).toBe(401);

    // /graphql is a resource of its own: it can be asked for, and its tokens serve GraphQL only.
    const forGraphql = (await tokenFor(`${gw.url}/graphql`)).tokens.access_token;
    expect(await api.graphql(forGraphql)).toMatchObject({ status: 200, body: { data: { viewer: { org: 'acme' } } } });
    expect((await api.sse(forGraphql)).status).toBe(200);
    expect(await api.socket(forGraphql)).toEqual({ ack: true });
    expect((await api.rest(forGraphql)).status).toBe(401);
    expect((await api.mcp(forGraphql)).status).toBe(401);
    const prm = await fetch(`${gw.url}/.well-known/oauth-protected-resource/graphql`);
    expect(prm.status).toBe(200);
    expect(await prm.json()).toMatchObject({ resource: `${gw.url}/graphql`, authorization_servers: [`${gw.url}/`] });
  });

  it('a token asked for no resource is for every API of the gateway (its aud lists them all)', async () => {
    const { tokens } = await tokenFor();
    const aud = JSON.parse(Buffer.from(tokens.access_token.split('.')[1]!, 'base64url').toString()).aud as string[];
    expect([...aud].sort()).toEqual([`${gw.url}/a2a`, `${gw.url}/api`, `${gw.url}/graphql`, `${gw.url}/mcp`]);
    for (const call of [api.rest, api.graphql, api.mcp, api.a2a, api.sse]) expect((await call(tokens.access_token)).status).toBe(200);
    expect(await api.socket(tokens.access_token)).toEqual({ ack: true });
  });

  it('registration refuses plain-http redirect URIs off loopback and fragments (RFC 7591 invalid_redirect_uri)', async () => {
    for (const uri of ['http://client.example/cb', 'http://10.0.0.7/cb', 'http://127.0.0.1.nip.io/cb', 'https://client.example/cb#frag', 'http://127.0.0.1:1/cb#']) {
      const refused = await register({ redirect_uris: ['https://client.example/ok', uri] });
      expect({ uri, ...refused }).toMatchObject({ uri, status: 400, body: { error: 'invalid_redirect_uri', error_description: expect.stringContaining(uri) } });
    }
    for (const uri of ['https://client.example/cb', 'http://127.0.0.1:8765/cb', 'http://localhost:8765/cb', 'http://[::1]:8765/cb', 'com.example.app:/oauth/cb']) {
      expect({ uri, status: (await register({ redirect_uris: [uri] })).status }).toEqual({ uri, status: 201 });
    }
  });

  it('/authorize refuses a redirect_uri with a fragment on a page of its own, never redirecting to it', async () => {
    const client = (await register()).body;
    for (const redirect of [`${REDIRECT}#frag`, `${REDIRECT.replace(':1/', ':2/')}#`]) {
      const refused = await fetch(authorizeUrl({ client_id: client.client_id, code_challenge: pkce().challenge, redirect_uri: redirect }), { redirect: 'manual' });
      expect(refused.status).toBe(400);
      expect(refused.headers.get('location')).toBeNull();
      expect(await refused.text()).toContain('fragment');
    }
  });
});

describeWith('PostgreSQL', !!PG_ADMIN_URL, 'issue 32: a revoked grant ends its access tokens on every instance sharing the store', () => {
  it('a code replayed on one instance ends the access token on another within the token check’s cache second', async () => {
    const db = await createTestDatabase('adcp_oauth');
    // One authorization server as far as clients can tell: one public origin, one signing key file.
    const shared = { EVENT_STORE_URL: db.url, PUBLIC_URL: 'http://127.0.0.1:9', OAUTH_SIGNING_KEYS_FILE: path.join(tempDir(), 'oauth-keys.json') };
    const a = await startTestGateway(shared);
    const b = await startTestGateway(shared);
    try {
      const key = (await issueApiKey(a.app.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
      await eventually(async () => (await fetch(`${a.url}/readyz`)).status === 200 && (await fetch(`${b.url}/readyz`)).status === 200, 20_000, 'both ready');
      const register = await fetch(`${a.url}/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }) });
      const client = ((await register.json()) as { client_id: string }).client_id;
      const { verifier, challenge } = pkce();
      const authorize = new URL(`${a.url}/authorize`);
      for (const [k, v] of Object.entries({ response_type: 'code', client_id: client, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256' })) authorize.searchParams.set(k, v);
      const request = /name="request" value="([^"]+)"/.exec(await (await fetch(authorize)).text())![1]!;
      const signedIn = await fetch(`${a.url}/oauth/login`, form({ request, api_key: key, decision: 'approve' }));
      const code = new URL(signedIn.headers.get('location')!).searchParams.get('code')!;
      const exchange = () => fetch(`${a.url}/token`, form({ grant_type: 'authorization_code', code, code_verifier: verifier, client_id: client, redirect_uri: REDIRECT }));
      const token = ((await (await exchange()).json()) as { access_token: string }).access_token;
      const onB = bindings(b);
      expect((await onB.graphql(token)).status).toBe(200);
      expect((await exchange()).status).toBe(400);
      await eventually(async () => (await onB.graphql(token)).status === 401, 5_000, 'the token refused on the other instance');
      expect((await onB.mcp(token)).status).toBe(401);
    } finally {
      await a.stop();
      await b.stop();
      await db.drop();
    }
  }, 90_000);
});

/** A JSON-RPC request refused for its address's failed authentications. */
const THROTTLED_RPC = { status: 200, body: { id: 7, error: { code: -32029, data: { adcp_error: { code: 'RATE_LIMITED' } } } } };

describe('issue 32: failed authentications throttle what fails, not the keys that verify', () => {
  it('a valid key keeps working from an address that is refused for its failed attempts; a further bad key still gets 429', async () => {
    const gw = await startTestGateway({ AUTH_FAILURES_PER_MINUTE: '30' });
    try {
      const api = bindings(gw);
      const buyer = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
      await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
      const badKey = 'sk_AAAAAAAA_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB';
      await freshBudgetWindow(20_000);
      const answers: { status: number; body: unknown }[] = [];
      for (let i = 0; i < 35; i++) answers.push(await api.mcp(badKey));
      expect(answers.slice(0, 30).map((a) => a.status)).toEqual(Array(30).fill(401));
      // MCP answers a throttled request in band (HTTP 200, its id, AdCP's -32029 RATE_LIMITED), so
      // that MCP clients, which read no body from a 429, see the reason code.
      for (const a of answers.slice(30)) expect(a).toMatchObject(THROTTLED_RPC);

      // The address is refused for its failures; the key that verifies is not.
      expect(await api.mcp(buyer)).toMatchObject({ status: 200, body: { result: { tools: expect.any(Array) } } });
      expect((await api.rest(buyer)).status).toBe(200);
      expect(await api.graphql(buyer)).toMatchObject({ status: 200, body: { data: { viewer: { role: 'buyer' } } } });
      expect((await api.sse(buyer)).status).toBe(200);
      expect(await api.socket(buyer)).toEqual({ ack: true });
      const a2a = await api.a2a(buyer);
      expect(a2a.status).toBe(200);
      expect(a2a.body.error).toBeUndefined();

      // Every failure from the address is still answered 429, whichever binding and credential.
      const unknownToken = `${Buffer.from('{"alg":"EdDSA","typ":"at+jwt"}').toString('base64url')}.${Buffer.from('{"sub":"x"}').toString('base64url')}.c2ln`;
      for (const credential of [badKey, 'sk_CCCCCCCC_DDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDD', unknownToken]) {
        expect(await api.mcp(credential)).toMatchObject(THROTTLED_RPC);
        expect((await api.rest(credential)).status).toBe(429);
        expect((await api.graphql(credential)).body.errors![0]).toMatchObject({ message: expect.stringMatching(/too many failed authentications from this address/), extensions: { code: 'RATE_LIMITED' } });
        expect(await api.a2a(credential)).toMatchObject({ status: 200, body: { error: { code: -32029 } } });
        expect((await api.sse(credential)).status).toBe(429);
        expect(await api.socket(credential)).toMatchObject({ code: 4429, reason: expect.stringMatching(/too many failed authentications/) });
      }
      // And the valid key still works after those, on the OAuth sign-in form too.
      expect((await api.mcp(buyer)).status).toBe(200);
      const register = await fetch(`${gw.url}/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }) });
      const client = ((await register.json()) as { client_id: string }).client_id;
      const authorize = new URL(`${gw.url}/authorize`);
      for (const [k, v] of Object.entries({ response_type: 'code', client_id: client, redirect_uri: REDIRECT, code_challenge: pkce().challenge, code_challenge_method: 'S256' })) authorize.searchParams.set(k, v);
      const request = /name="request" value="([^"]+)"/.exec(await (await fetch(authorize)).text())![1]!;
      expect((await fetch(`${gw.url}/oauth/login`, form({ request, api_key: badKey, decision: 'approve' }))).status).toBe(429);
      const signedIn = await fetch(`${gw.url}/oauth/login`, form({ request, api_key: buyer, decision: 'approve' }));
      expect(signedIn.status).toBe(302);
      expect(new URL(signedIn.headers.get('location')!).searchParams.get('code')).toBeTruthy();
    } finally {
      await gw.stop();
    }
  }, 90_000);
});
