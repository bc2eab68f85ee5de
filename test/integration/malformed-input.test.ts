import fc from 'fast-check';
import { getNamedType, isEnumType, isInputObjectType, isInterfaceType, isListType, isNonNullType, isObjectType, isUnionType, type GraphQLInputType } from 'graphql';
import { issueApiKey } from '../../src/application/api-keys';
import { tasks } from '../../src/application/tasks';
import { gatewaySchema } from '../../src/graphql/schema';
import { startTestGateway } from '../support/gateway';
import { createTestDatabase, describeWith, eventually, freePort, PG_ADMIN_URL } from '../support/infra';
import { signWebhook } from '../../src/signing/webhook-signer';
import { anyJson, awkwardNumber, awkwardString, damaged, hostileBodies, isObject, safeJson, urlSafe, validCreateMediaBuy, validRequests, type Json } from '../support/malformed-corpus';

/**
 * DESIGN §6: "malformed input never yields a 5xx or a crash". Property-based: valid requests of
 * every input path with random damage (a field dropped, a value at any depth replaced by arbitrary
 * JSON, unknown keys, the wrong container), plus wholly arbitrary JSON, through the REST shim and
 * GraphQL; the registry paths with random bodies and query strings; hostile shapes (deep nesting,
 * huge numbers, lone surrogates, proto keys, wrong content types, oversized bodies). Every answer
 * must be below 500 and in its binding's error shape; the gateway must still be up afterwards.
 * fast-check prints the seed and the shrunk counterexample of a failure, so it can be replayed.
 * The corpus is test/support/malformed-corpus.ts; malformed-input-rpc.test.ts sends it over MCP and A2A.
 */

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;
const RUNS = Number(process.env.FUZZ_RUNS ?? 60);
if (!Number.isSafeInteger(RUNS) || RUNS < 1) throw new Error(`FUZZ_RUNS must be a positive integer, not ${process.env.FUZZ_RUNS}`);
const HMAC_SECRET = 'hmac-fuzz-3f9c2a71d4e84b06a5c1e7d92b8f4a60';
const BEARER_SECRET = 'bearer-fuzz-8d1e4c7a2f9b4e03b6a7c5d1e2f3a4b5';

/** The whole suite against one event store and read models (`env`), cleaned up afterwards. */
function malformedInputSuite(setup: () => Promise<{ env: Record<string, string>; cleanup: () => Promise<void> }>) {
  let cleanup = async () => {};
  let gw: Gateway;
  let buyer: string;
  let admin: string;
  const valid: Record<string, Record<string, Json>> = {};

  // Every request comes from its own client address (the gateway trusts loopback as its proxy), so
  // the per-client rate limits never answer 429 in place of the handler under test.
  let clients = 0;
  const pathOf = (url: string) => {
    const u = new URL(url);
    return u.pathname + u.search;
  };
  const asNewClient = () => ({ 'x-forwarded-for': `10.${(++clients >> 16) & 255}.${(clients >> 8) & 255}.${clients & 255}` });
  const post = async (path: string, body: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...asNewClient(), ...headers }, body });
    const text = await res.text();
    return { status: res.status, headers: Object.fromEntries(res.headers), text, json: safeJson(text) };
  };

  beforeAll(async () => {
    // The gateway is its own webhook sender too: its public origin is `https://sender.example`,
    // served by this gateway (brand.json → jwks_uri), so signed bodies reach the receiver's
    // envelope and dedup steps.
    const port = await freePort();
    const engine = await setup();
    cleanup = engine.cleanup;
    gw = await startTestGateway({ ...engine.env, PORT: String(port), ALLOW_PRIVATE_WEBHOOK_URLS: '1', REGISTRY_ORIGIN_OVERRIDES: `sender.example=http://127.0.0.1:${port}`, PUBLIC_URL: 'https://sender.example', TRUST_PROXY: '127.0.0.1' });
    const ctx = { now: new Date().toISOString(), principal: 'test' };
    buyer = (await issueApiKey(gw.app.store, { org: 'fuzz', role: 'buyer' }, ctx)).key;
    admin = (await issueApiKey(gw.app.store, { org: 'ops', role: 'admin' }, ctx)).key;
    await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 15_000, 'readyz');
    const create = validCreateMediaBuy();
    const created = await post('/api/tasks/create_media_buy', JSON.stringify(create), { authorization: `Bearer ${buyer}` });
    expect(created.status).toBe(200);
    const buy = created.json as { media_buy_id: string; packages: { package_id: string }[] };
    const pending = await post(
      '/api/tasks/create_media_buy',
      JSON.stringify({ ...create, buyer_ref: 'fuzz-ctv', packages: [{ product_id: 'premium_ctv_guaranteed', pricing_option_id: 'cpm_usd_guaranteed', budget: 20000 }] }),
      { authorization: `Bearer ${buyer}` },
    );
    const taskId = (pending.json as { task_id: string }).task_id;
    expect(taskId).toEqual(expect.any(String));
    Object.assign(valid, validRequests({ create, mediaBuyId: buy.media_buy_id, packageId: buy.packages[0]!.package_id, taskId, gatewayHost: new URL(gw.url).host }));
  });
  afterAll(async () => {
    await gw?.stop();
    await cleanup();
  });

  it('covers every task the REST shim serves', () => {
    expect(Object.keys(valid).sort()).toEqual(Object.keys(tasks).sort());
  });

  it('REST tasks: damaged and arbitrary requests get 2xx or a {error:{code,message}} below 500', async () => {
    for (const name of Object.keys(tasks)) {
      await fc.assert(
        fc.asyncProperty(damaged(valid[name]!), async (body) => {
          const r = await post(`/api/tasks/${name}`, JSON.stringify(body), { authorization: `Bearer ${buyer}` });
          expectRestShape(name, r, body);
        }),
        { numRuns: RUNS },
      );
    }
  }, 120_000);

  it('GraphQL tasks: damaged and arbitrary variables get data or coded errors, never INTERNAL_SERVER_ERROR', async () => {
    // The fields that take the task request as one JSONObject, and whether it may be omitted.
    const byRequest: Record<string, [kind: string, field: string, required: boolean]> = {
      create_media_buy: ['mutation', 'createMediaBuy', true],
      update_media_buy: ['mutation', 'updateMediaBuy', true],
      sync_creatives: ['mutation', 'syncCreatives', true],
      get_media_buys: ['query', 'mediaBuys', false],
      list_creatives: ['query', 'creatives', false],
      get_media_buy_delivery: ['query', 'mediaBuyDelivery', true],
    };
    for (const [name, [kind, f, required]] of Object.entries(byRequest)) {
      const query = `${kind} Fuzz($request: JSONObject${required ? '!' : ''}) { ${f}(request: $request) }`;
      await fc.assert(
        fc.asyncProperty(damaged(valid[name]!), async (request) => {
          expectGraphQLShape(name, await post('/graphql', JSON.stringify({ query, variables: { request } }), { authorization: `Bearer ${buyer}` }));
        }),
        { numRuns: RUNS },
      );
    }
    // Typed arguments: the same damage lands in variables GraphQL coerces before any resolver runs.
    const products = 'query P($brief: String, $brandManifest: JSONObject, $filters: ProductFiltersInput) { products(brief: $brief, brandManifest: $brandManifest, filters: $filters) { productId } }';
    await fc.assert(
      fc.asyncProperty(damaged(valid.get_products!), async (input) => {
        const v = isObject(input) ? (input as Record<string, Json>) : { brief: input };
        const filters = isObject(v.filters) ? Object.fromEntries(Object.entries(v.filters as object).map(([k, x]) => [k.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase()), x])) : v.filters;
        const variables = { brief: v.brief, brandManifest: v.brand_manifest, filters };
        expectGraphQLShape('products', await post('/graphql', JSON.stringify({ query: products, variables }), { authorization: `Bearer ${buyer}` }));
      }),
      { numRuns: RUNS },
    );
    const formats = 'query F($t: [String!]) { creativeFormats(formatTypes: $t) { name } }';
    const task = 'query T($id: ID!) { task(taskId: $id) }';
    await fc.assert(
      fc.asyncProperty(anyJson, anyJson, async (t, id) => {
        expectGraphQLShape('creativeFormats', await post('/graphql', JSON.stringify({ query: formats, variables: { t } }), { authorization: `Bearer ${buyer}` }));
        expectGraphQLShape('task', await post('/graphql', JSON.stringify({ query: task, variables: { id } }), { authorization: `Bearer ${buyer}` }));
      }),
      { numRuns: RUNS },
    );
  }, 120_000);

  it('webhook receiver: random signature headers, and validly signed arbitrary bodies, in every mode', async () => {
    const register = async (agentId: string, extra = '') => {
      const r = await post('/graphql', JSON.stringify({ query: `mutation { registerWebhookEndpoint(agentId: "${agentId}", senderDomain: "sender.example"${extra}) }` }), { authorization: `Bearer ${buyer}` });
      const url = (r.json as { data?: { registerWebhookEndpoint: { url_template: string } } }).data?.registerWebhookEndpoint.url_template;
      if (!url) throw new Error(`registerWebhookEndpoint: ${r.text}`);
      return url.replace('{task_type}', 'create_media_buy');
    };
    const signed = await register('adcp_gateway');
    const hmac = await register('fuzz_hmac', `, mode: "hmac-sha256", secret: "${HMAC_SECRET}"`);
    const bearer = await register('fuzz_bearer', `, mode: "bearer", secret: "${BEARER_SECRET}"`);
    const headerValue = fc.oneof(
      fc.string({ maxLength: 60 }).filter((x) => /^[\x20-\x7e]*$/.test(x)),
      fc.constantFrom('', 'sig1=', 'sig1=()', 'sig1=:AAAA:', 'sha-256=:47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU=:', 'sha256=00', 'Bearer x', `Bearer ${BEARER_SECRET}`),
      fc
        .record({
          components: fc.subarray(['"@method"', '"@target-uri"', '"@authority"', '"content-type"', '"content-digest"', '"@query"', '"x"']),
          created: fc.oneof(fc.constant(Math.floor(Date.now() / 1000)), awkwardNumber.map(String), awkwardString.filter((x) => /^[\x20-\x7e]*$/.test(x))),
          keyid: fc.constantFrom(gw.app.signingKeys.activeKey().kid, 'nope', ''),
          alg: fc.constantFrom('ed25519', 'ecdsa-p256-sha256', 'rsa', ''),
          tag: fc.constantFrom('adcp/webhook-signing/v1', 'adcp/request-signing/v1', ''),
        })
        .map((p) => `sig1=(${p.components.join(' ')});created=${p.created};expires=${Number(p.created) + 300};nonce="${'n'.repeat(22)}";keyid="${p.keyid}";alg="${p.alg}";tag="${p.tag}"`),
    );
    const headerNames = ['signature-input', 'signature', 'content-digest', 'x-adcp-signature', 'x-adcp-timestamp', 'authorization'];
    const expectReceiverShape = (where: string, r: { status: number; text: string; json: Json }) => {
      if (r.status >= 500 || r.status === 429) throw new Error(`${r.status} at ${where}: ${r.text.slice(0, 300)}`);
      if (r.status >= 400 && typeof (r.json as { error?: { code?: unknown } } | undefined)?.error?.code !== 'string') throw new Error(`error shape at ${where}: ${r.status} ${r.text.slice(0, 300)}`);
    };
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(signed, hmac, bearer), fc.dictionary(fc.constantFrom(...headerNames), headerValue), anyJson, async (url, headers, body) => {
        expectReceiverShape(url, await post(pathOf(url), JSON.stringify(body), headers));
      }),
      { numRuns: RUNS * 3 },
    );
    // Signed with the sender's real key: every check passes but the body's, which is arbitrary.
    const envelope = { idempotency_key: 'whk_fuzz_0123456789abcdef', task_id: 'task_fuzz', operation_id: 'op', task_type: 'create_media_buy', domain: 'media-buy', status: 'completed', timestamp: new Date().toISOString(), message: 'ok', result: { media_buy_id: 'mb_1' } };
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.oneof(damaged(envelope), anyJson), async (body) => {
        const bytes = JSON.stringify(isObject(body) && typeof (body as { idempotency_key?: unknown }).idempotency_key === 'string' ? { ...(body as object), idempotency_key: `whk_fuzz_${n++}_0123456789abcdef` } : body);
        const sig = signWebhook({ url: signed, body: bytes }, gw.app.signingKeys.activeKey());
        const r = await post(pathOf(signed), bytes, Object.fromEntries(Object.entries(sig.headers).map(([k, v]) => [k.toLowerCase(), v])));
        expectReceiverShape('signed', r);
        expect(r.status).not.toBe(401);
      }),
      { numRuns: RUNS * 3 },
    );
  }, 120_000);

  it('the faults it found stay fixed (each was a 500 or a stalled projection)', async () => {
    const auth = { authorization: `Bearer ${buyer}` };
    // A request nested thousands of levels overflowed the context echo.
    const deep = JSON.stringify({ ...valid.create_media_buy, context: 0 }).replace('"context":0', `"context":${'{"a":'.repeat(5_000)}1${'}'.repeat(5_000)}`);
    const rest = await post('/api/tasks/create_media_buy', deep, auth);
    expect({ status: rest.status, json: rest.json }).toEqual({ status: 400, json: { error: { code: 'INVALID_REQUEST', message: 'request body nests deeper than 64 levels' } } });
    // A JSON literal in a GraphQL document carried ~1,500 levels into the log (REST stops at 64);
    // deeper still, graphql-js's recursive parser overflowed and said so in the engine's words.
    const literal = (levels: number) => `mutation { createMediaBuy(request: {buyer_ref: "deep", context: ${'{a:'.repeat(levels)}1${'}'.repeat(levels)}}) }`;
    const nested = await post('/graphql', JSON.stringify({ query: literal(70) }), auth);
    expect({ status: nested.status, errors: (nested.json as { errors: unknown }).errors }).toEqual({ status: 400, errors: [{ message: 'the document nests deeper than 64 levels (selections, object and list values together)', extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } }] });
    // Deeper still, graphql-js's recursive parser overflowed; now the document's 15,000 tokens
    // are refused by the cost limit before any parse.
    const overflowing = await post('/graphql', JSON.stringify({ query: literal(5_000) }), auth);
    expect({ status: overflowing.status, code: (overflowing.json as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code }).toEqual({ status: 400, code: 'MAX_COST_EXCEEDED' });
    // /graphql answered bodies Fastify refuses in the REST shape.
    const gql = await post('/graphql', '{"query": ', auth);
    expect({ status: gql.status, json: gql.json }).toEqual({ status: 400, json: { errors: [{ message: 'request body is not valid JSON', extensions: { code: 'BAD_REQUEST' } }] } });
    // Names that are Object.prototype's: an asset kind, and a creative_id looked up in assignments.
    const banner = (valid.sync_creatives!.creatives as Record<string, any>[])[0]!;
    const odd = await post(
      '/api/tasks/sync_creatives',
      JSON.stringify({ creatives: [{ ...banner, creative_id: 'constructor', assets: { ...banner.assets, constructor: null, toString: 1 } }], assignments: { other: [] }, dry_run: true }),
      auth,
    );
    expect({ status: odd.status, action: (odd.json as { creatives?: { action: string }[] }).creatives?.[0]?.action }).toEqual({ status: 200, action: 'created' });
    // A signed webhook whose fields have the wrong JSON types stalled every projection.
    const endpoint = await post('/graphql', JSON.stringify({ query: 'mutation { registerWebhookEndpoint(agentId: "fuzz_types", senderDomain: "sender.example") }' }), auth);
    const url = (endpoint.json as { data: { registerWebhookEndpoint: { url_template: string } } }).data.registerWebhookEndpoint.url_template.replace('{task_type}', 'create_media_buy');
    const bodies = [
      { idempotency_key: 'whk_types_0123456789abcdef', task_id: 'task_types', task_type: 'create_media_buy', status: 'completed', timestamp: new Date().toISOString(), message: ['not', 'a', 'string'], notification_id: 7, result: { notification_type: { x: 1 } } },
      { id: { not: 'a string' }, status: { state: 'working', timestamp: 42, message: { parts: 'no' } }, task_type: [1] },
    ];
    for (const body of bodies) {
      const bytes = JSON.stringify(body);
      const sig = signWebhook({ url, body: bytes }, gw.app.signingKeys.activeKey());
      const r = await post(pathOf(url), bytes, Object.fromEntries(Object.entries(sig.headers).map(([k, v]) => [k.toLowerCase(), v])));
      expect({ body, status: r.status }).toEqual({ body, status: 200 });
    }
    // U+0000 is refused everywhere it can enter (PostgreSQL cannot store it; it was a 500 there).
    const nul = await post('/api/tasks/create_media_buy', JSON.stringify({ ...valid.create_media_buy, buyer_ref: 'a\u0000b' }), auth);
    expect({ status: nul.status, json: nul.json }).toEqual({ status: 400, json: { error: { code: 'INVALID_REQUEST', message: 'request body contains U+0000 (NUL), which no field accepts' } } });
    const lone = await post('/api/tasks/create_media_buy', JSON.stringify({ ...valid.create_media_buy, buyer_ref: 'fuzz-lone', packages: [{ ...(valid.create_media_buy!.packages as object[])[0], targeting_overlay: { geo_country_any_of: ['US'], '': { '\ud800': null } } }] }), auth);
    expect({ status: lone.status, json: lone.json }).toEqual({ status: 400, json: { error: { code: 'INVALID_REQUEST', message: 'a text field contains U+0000 (NUL) or an unpaired surrogate, which cannot be stored' }, context: { trace: 'fuzz' } } });
    // In a GraphQL document a NUL is an escape, in either spelling, in any string argument; a block
    // string or a comment holding the same six characters is not one and runs.
    // Like every GraphQL answer, the refusal says what the operation cost (it was priced before the NUL was found).
    const nulInDocument = { status: 400, json: { errors: [{ message: 'the GraphQL request contains U+0000 (NUL), which no field accepts', extensions: { code: 'BAD_REQUEST' } }], extensions: { cost: expect.objectContaining({ maximum: 1000 }) } } };
    for (const query of ['query { storyboard(id: "x\\u0000") }', 'query { task(taskId: "t\\u{0}") }', 'query { mediaBuys(request: { media_buy_ids: ["m\\u{0000}"] }) }']) {
      const literal = await post('/graphql', JSON.stringify({ query }), auth);
      expect({ query, status: literal.status, json: literal.json, challenge: literal.headers['www-authenticate'] }).toEqual({ query, ...nulInDocument, challenge: undefined });
    }
    const getVariables = await fetch(`${gw.url}/graphql?${new URLSearchParams({ query: 'query($id: String!) { receivedTaskStatus(taskId: $id) }', variables: '{"id":"a\\u0000"}' })}`, { headers: { ...auth, 'apollo-require-preflight': '1' } });
    expect({ status: getVariables.status, json: await getVariables.json() }).toEqual(nulInDocument);
    for (const query of ['query { receivedTaskStatus(taskId: """C:\\u0000dir""") }', '# \\u0000 in a comment\nquery { receivedTaskStatus(taskId: "t") }']) {
      const harmless = await post('/graphql', JSON.stringify({ query }), auth);
      expect({ query, status: harmless.status, errors: (harmless.json as { errors?: { extensions: { code: string } }[] }).errors?.map((e) => e.extensions.code) }).toEqual({ query, status: 200, errors: undefined });
    }
    const inUrl = await fetch(`${gw.url}/api/storyboards/x%00y`);
    expect({ status: inUrl.status, json: await inUrl.json() }).toEqual({ status: 400, json: { error: 'the URL contains U+0000 (%00), which no parameter accepts' } });
    // A URL that does not decode was refused by the router in Fastify's own shape.
    const overlong = await fetch(`${gw.url}/api/storyboards/%C0%80`);
    expect({ status: overlong.status, json: await overlong.json() }).toEqual({ status: 400, json: { error: 'the URL is not valid percent-encoded UTF-8' } });
    const overlongTask = await post('/api/tasks/get_products%C0', '{}', auth);
    expect({ status: overlongTask.status, json: overlongTask.json }).toEqual({ status: 400, json: { error: { code: 'INVALID_REQUEST', message: 'the URL is not valid percent-encoded UTF-8' } } });
    for (const message of ['a\u0000b', 'lone \ud800']) {
      const unstorable = JSON.stringify({ ...bodies[0], idempotency_key: `whk_unstorable_${message.length}_0123456789`, message });
      const sig = signWebhook({ url, body: unstorable }, gw.app.signingKeys.activeKey());
      const rejected = await post(pathOf(url), unstorable, Object.fromEntries(Object.entries(sig.headers).map(([k, v]) => [k.toLowerCase(), v])));
      expect({ status: rejected.status, json: rejected.json }).toEqual({ status: 400, json: { error: { code: 'webhook_body_malformed', message: 'body contains U+0000 (NUL) or an unpaired surrogate' } } });
    }
    await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 15_000, 'projections past the ill-typed webhooks');
    const status = await post('/graphql', JSON.stringify({ query: 'query { receivedTaskStatus(taskId: "task_types") }' }), auth);
    expect((status.json as { data: { receivedTaskStatus: Record<string, unknown> } }).data.receivedTaskStatus).toMatchObject({ task_id: 'task_types', status: 'completed', message: null });
  }, 60_000);

  it('embedded OAuth server: damaged registrations and random token, revoke, login and authorize requests get OAuth errors below 500', async () => {
    const registration = { redirect_uris: ['https://client.example/cb'], client_name: 'fuzz', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none', scope: 'openid' };
    const expectOAuthShape = (where: string, r: { status: number; text: string; json: Json }) => {
      if (r.status >= 500 || r.status === 429) throw new Error(`${r.status} at ${where}: ${r.text.slice(0, 300)}`);
      // /authorize and /oauth/login answer HTML pages; the JSON endpoints answer {error}.
      if (r.status >= 400 && r.json !== undefined && typeof (r.json as { error?: unknown }).error !== 'string') throw new Error(`error shape at ${where}: ${r.status} ${r.text.slice(0, 300)}`);
    };
    await fc.assert(
      fc.asyncProperty(damaged(registration), async (body) => expectOAuthShape('register', await post('/register', JSON.stringify(body)))),
      { numRuns: RUNS },
    );
    const formValue = fc.oneof(awkwardString, fc.constantFrom('authorization_code', 'refresh_token', 'client_credentials', 'https://client.example/cb', 'x'.repeat(43)));
    const form = (keys: string[]) => fc.dictionary(fc.constantFrom(...keys), formValue, { maxKeys: keys.length });
    const tokenKeys = ['grant_type', 'code', 'code_verifier', 'client_id', 'client_secret', 'redirect_uri', 'refresh_token', 'resource', 'scope'];
    const postForm = (path: string, fields: Record<string, string>) => post(path, new URLSearchParams(fields).toString(), { 'content-type': 'application/x-www-form-urlencoded' });
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('/token', '/revoke'), form([...tokenKeys, 'token', 'token_type_hint']), async (path, fields) => expectOAuthShape(path, await postForm(path, fields))),
      { numRuns: RUNS * 2 },
    );
    await fc.assert(
      fc.asyncProperty(form(['request', 'api_key', 'decision']), async (fields) => expectOAuthShape('/oauth/login', await postForm('/oauth/login', fields))),
      { numRuns: RUNS },
    );
    await fc.assert(
      fc.asyncProperty(form(['response_type', 'client_id', 'redirect_uri', 'code_challenge', 'code_challenge_method', 'state', 'scope', 'resource']), async (fields) => {
        const res = await fetch(`${gw.url}/authorize?${new URLSearchParams(fields)}`, { redirect: 'manual', headers: asNewClient() });
        const text = await res.text();
        expectOAuthShape('/authorize', { status: res.status, text, json: safeJson(text) });
      }),
      { numRuns: RUNS },
    );
  }, 120_000);

  it('GraphQL documents: arbitrary query text and variables get 200/400 with coded errors', async () => {
    const fragments = fc.constantFrom('{', '}', '(', ')', 'query', 'mutation', 'mediaBuys', 'request:', '$r', '"x"', '...', 'on', '@skip(if: true)', '__schema', '{ __typename }', ' ', '\n', '#');
    await fc.assert(
      fc.asyncProperty(fc.array(fragments, { maxLength: 20 }).map((parts) => parts.join(' ')), anyJson, anyJson, async (query, variables, operationName) => {
        const r = await post('/graphql', JSON.stringify({ query, variables, operationName }), { authorization: `Bearer ${buyer}` });
        expectGraphQLShape('document', r);
      }),
      { numRuns: RUNS * 3 },
    );
    await fc.assert(
      fc.asyncProperty(anyJson, async (body) => expectGraphQLShape('body', await post('/graphql', JSON.stringify(body)))),
      { numRuns: RUNS * 3 },
    );
  }, 120_000);

  it('registry paths: random bodies, query strings and path segments get {error: string} below 500', async () => {
    const bulk = { domains: ['acme.example', 'news.example'] };
    await fc.assert(
      fc.asyncProperty(damaged(bulk), async (body) => expectRegistryShape('bulk', await post('/api/brands/resolve/bulk', JSON.stringify(body)))),
      { numRuns: RUNS * 2 },
    );
    const query = fc.dictionary(fc.constantFrom('since', 'cursor', 'limit', 'types', 'type', 'entity_type', 'x'), fc.oneof(urlSafe, awkwardNumber.map(String)), { maxKeys: 4 });
    await fc.assert(
      fc.asyncProperty(query, fc.boolean(), async (params, authed) => {
        const res = await fetch(`${gw.url}/api/registry/feed?${new URLSearchParams(params as Record<string, string>)}`, { headers: authed ? { authorization: `Bearer ${buyer}` } : {} });
        const text = await res.text();
        expectRegistryShape('feed', { status: res.status, text, json: safeJson(text) });
      }),
      { numRuns: RUNS * 2 },
    );
    await fc.assert(
      fc.asyncProperty(urlSafe, fc.option(urlSafe), async (id, target) => {
        const qs = target === null ? '' : `?${new URLSearchParams({ compliance_target: target })}`;
        const res = await fetch(`${gw.url}/api/storyboards/${encodeURIComponent(id)}${qs}`);
        const text = await res.text();
        expectRegistryShape('storyboard', { status: res.status, text, json: safeJson(text) });
      }),
      { numRuns: RUNS * 2 },
    );
    // Revalidation as an admin would fetch any valid hostname: only names that are not hostnames
    // (each holds a character no DNS label may) reach the admin path, so nothing leaves the machine.
    const notHostname = urlSafe.filter((s) => /[^a-z0-9.-]/i.test(s) && s.length > 0);
    await fc.assert(
      fc.asyncProperty(notHostname, fc.constantFrom('', '?force=true', '?force=%00'), async (domain, qs) => {
        const r = await post(`/api/registry/publisher/${encodeURIComponent(domain)}/adagents/revalidate${qs}`, '{}', { authorization: `Bearer ${admin}` });
        expectRegistryShape('revalidate', r);
        expect(r.status).not.toBe(200);
      }),
      { numRuns: RUNS * 2 },
    );
  }, 120_000);

  it('hostile shapes on every POST path: deep nesting, non-JSON, wrong content types, oversized bodies, huge arrays', async () => {
    const bodies = hostileBodies(valid.create_media_buy!);
    const paths = [...Object.keys(tasks).map((t) => `/api/tasks/${t}`), '/graphql', '/api/brands/resolve/bulk', '/webhooks/create_media_buy/agent_x/route_x', '/token', '/register'];
    const contentTypes = ['application/json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=latin1'];
    for (const path of paths) {
      for (const [label, body] of bodies) {
        for (const contentType of label === 'not JSON' ? contentTypes : ['application/json']) {
          const r = await post(path, body, { 'content-type': contentType, authorization: `Bearer ${buyer}` });
          expect({ path, label, contentType, status: r.status, text: r.status >= 500 ? r.text.slice(0, 300) : '' }).toEqual({ path, label, contentType, status: expect.any(Number), text: '' });
          expect(r.status).toBeLessThan(500);
          if (r.status >= 400) expect({ path, label, json: r.json !== undefined || r.text === '' }).toEqual({ path, label, json: true });
        }
      }
    }
    expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
    // Whatever was accepted, the projections apply it all (a poison event would stall them here).
    await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 30_000, 'projections caught up after the fuzzing');
  }, 120_000);

  // Last: advanceClock among the fields moves the gateway clock (up to a year a call), which would
  // make the fixed end_time of the valid requests above lie in the past.
  it('every GraphQL field: random arguments of roughly the right type, as anonymous, buyer, seller and admin', async () => {
    const schema = await gatewaySchema();
    const seller = (await issueApiKey(gw.app.store, { org: 'sell', role: 'seller' }, { now: new Date().toISOString(), principal: 'test' })).key;
    const principals = fc.constantFrom<string | undefined>(undefined, buyer, seller, admin);
    // Arguments that name a domain are fetched from by some fields (crawlBrand): only values that
    // cannot be hostnames reach them, so nothing leaves the machine.
    const notHostname = awkwardString.filter((x) => /[^a-z0-9.-]/i.test(x));
    const valueFor = (type: GraphQLInputType, name: string): fc.Arbitrary<Json> => {
      const t = isNonNullType(type) ? type.ofType : type;
      const typed: fc.Arbitrary<Json> = isListType(t)
        ? fc.array(valueFor(t.ofType, name), { maxLength: 3 })
        : isInputObjectType(t)
          ? fc.record(Object.fromEntries(Object.values(t.getFields()).map((f) => [f.name, valueFor(f.type, f.name)])), { requiredKeys: Object.values(t.getFields()).filter((f) => isNonNullType(f.type)).map((f) => f.name) })
          : isEnumType(t)
            ? fc.constantFrom(...t.getValues().map((v) => v.name))
            : /domain/i.test(name)
              ? notHostname
              : t.name === 'Int'
                ? fc.oneof(fc.integer({ min: -5, max: 400_000 }), fc.constantFrom(0, -1, 2 ** 31 - 1, -(2 ** 31)))
                : t.name === 'Float'
                  ? awkwardNumber
                  : t.name === 'Boolean'
                    ? fc.boolean()
                    : t.name === 'JSONObject'
                      ? fc.oneof(fc.dictionary(awkwardString, anyJson, { maxKeys: 4 }), ...Object.values(valid).map((v) => damaged(v)))
                      : awkwardString;
      return fc.oneof({ weight: 8, arbitrary: typed }, { weight: 1, arbitrary: anyJson });
    };
    const roots = [
      ['query', schema.getQueryType()!],
      ['mutation', schema.getMutationType()!],
    ] as const;
    let fields = 0;
    for (const [kind, root] of roots) {
      for (const field of Object.values(root.getFields())) {
        fields++;
        const args = field.args;
        const vars = args.map((a) => `$${a.name}: ${String(a.type)}`).join(', ');
        const call = args.length ? `(${args.map((a) => `${a.name}: $${a.name}`).join(', ')})` : '';
        const out = getNamedType(field.type);
        const selection = isObjectType(out) || isInterfaceType(out) || isUnionType(out) ? ' { __typename }' : '';
        const query = `${kind} Fuzz${vars ? `(${vars})` : ''} { ${field.name}${call}${selection} }`;
        // Required arguments are always given (else GraphQL alone answers), optional ones sometimes.
        const variables = fc.record(Object.fromEntries(args.map((a) => [a.name, valueFor(a.type, a.name)])), { requiredKeys: args.filter((a) => isNonNullType(a.type)).map((a) => a.name) });
        await fc.assert(
          fc.asyncProperty(variables, principals, async (v, key) => {
            expectGraphQLShape(field.name, await post('/graphql', JSON.stringify({ query, variables: v }), key ? { authorization: `Bearer ${key}` } : {}));
          }),
          { numRuns: RUNS },
        );
      }
    }
    expect(fields).toBeGreaterThanOrEqual(30);
    await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 30_000, 'projections caught up after every field was fuzzed');
  }, 300_000);
}

describe('malformed input never yields a 5xx or a crash (property-based): SQLite', () => malformedInputSuite(async () => ({ env: {}, cleanup: async () => {} })));

describeWith('PostgreSQL', Boolean(PG_ADMIN_URL), 'malformed input never yields a 5xx or a crash (property-based): PostgreSQL', () =>
  malformedInputSuite(async () => {
    const db = await createTestDatabase('adcp_fuzz');
    return { env: { EVENT_STORE_URL: db.url }, cleanup: db.drop };
  }),
);


/**
 * A REST answer below 500; an error is the spec's `{error:{code,message}}`, or, when the request
 * named an AdCP version (any `adcp_version`, or `adcp_major_version: 3`: docs/rest.md) and
 * reached the task route, AdCP's `{adcp_error:{code,message}, errors:[…]}` (a body the HTTP layer
 * refuses first, e.g. one carrying NUL, gets the spec's shape whatever it names).
 */
function expectRestShape(name: string, r: { status: number; text: string; json: Json }, request?: unknown): void {
  const where = { name, status: r.status, body: r.text.slice(0, 400) };
  if (r.status >= 500) throw new Error(`5xx: ${JSON.stringify(where)}`);
  expect(r.json).toEqual(expect.any(Object));
  if (r.status >= 400) {
    const req = (request !== null && typeof request === 'object' && !Array.isArray(request) ? request : {}) as Record<string, unknown>;
    const answer = r.json as { error?: { code?: unknown; message?: unknown }; adcp_error?: { code?: unknown; message?: unknown }; errors?: unknown };
    const adcp = (req.adcp_version !== undefined || req.adcp_major_version === 3) && answer.error === undefined;
    if (adcp && !Array.isArray(answer.errors)) throw new Error(`error shape: ${JSON.stringify(where)}`);
    const err = adcp ? answer.adcp_error : answer.error;
    if (typeof err?.code !== 'string' || typeof err.message !== 'string' || !err.message) throw new Error(`error shape: ${JSON.stringify(where)}`);
  }
}

function expectGraphQLShape(name: string, r: { status: number; text: string; json: Json }): void {
  const where = { name, status: r.status, body: r.text.slice(0, 400) };
  if (r.status >= 500) throw new Error(`5xx: ${JSON.stringify(where)}`);
  const body = r.json as { data?: unknown; errors?: { message?: unknown; extensions?: { code?: unknown } }[] } | undefined;
  if (!body || (body.data === undefined && !body.errors?.length)) throw new Error(`no data and no errors: ${JSON.stringify(where)}`);
  for (const e of body.errors ?? []) {
    if (typeof e.message !== 'string' || typeof e.extensions?.code !== 'string') throw new Error(`error without a code: ${JSON.stringify(where)}`);
    if (e.extensions.code === 'INTERNAL_SERVER_ERROR') throw new Error(`masked internal error: ${JSON.stringify(where)}`);
  }
}

function expectRegistryShape(name: string, r: { status: number; text: string; json: Json }): void {
  const where = { name, status: r.status, body: r.text.slice(0, 400) };
  if (r.status >= 500) throw new Error(`5xx: ${JSON.stringify(where)}`);
  if (r.status >= 400 && typeof (r.json as { error?: unknown } | undefined)?.error !== 'string') throw new Error(`error shape: ${JSON.stringify(where)}`);
}
