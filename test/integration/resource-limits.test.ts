import WebSocket from 'ws';
import { issueApiKey } from '../../src/application/api-keys';
import { graphql, startTestGateway } from '../support/gateway';
import { HOSTILE, freshBudgetWindow, post, rateLimitState } from '../support/limits';
import { PG_ADMIN_URL, REDIS_URL, createTestDatabase, describeWith, eventually } from '../support/infra';
import { startOrigins } from '../support/origins';

describe('each limit answers in its binding’s shape with Retry-After and the RateLimit headers', () => {
  it('request rate per key: REST, GraphQL and MCP share the key’s budget; 429 with Retry-After once it is spent', async () => {
    const gw = await startTestGateway({ REQUESTS_PER_MINUTE: 'buyer=6' });
    await freshBudgetWindow(); // the budgets below are counted to their end
    try {
      const buyer = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
      await eventually(async () => (await graphql(gw.url, '{ viewer { role } }', undefined, buyer)).body.data?.viewer?.role === 'buyer', 10_000, 'the key');
      // That poll spent some of the 6; spend the rest over REST, seeing the count go down.
      let last = Infinity;
      for (;;) {
        const res = await post(`${gw.url}/api/tasks/get_products`, { brief: 'video' }, buyer);
        if (res.status === 429) {
          expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
          expect(await res.json()).toEqual({ error: { code: 'RATE_LIMITED', message: expect.stringMatching(/request rate limit reached \(6 per 60 s for a buyer key\); try again in \d+ s/) } });
          break;
        }
        expect(res.status).toBe(200);
        expect(res.headers.get('ratelimit-policy')).toBe('"requests";q=6;w=60');
        const left = rateLimitState(res).requests!.r;
        expect(left).toBeLessThan(last);
        last = left;
      }
      const gql = await graphql(gw.url, '{ viewer { role } }', undefined, buyer);
      expect(gql.status).toBe(429);
      expect(gql.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(gql.body.errors![0]!.extensions).toEqual({ code: 'RATE_LIMITED' });
      // A GraphQL refusal carries the RateLimit headers (its roomy answers do not: the next test).
      expect(rateLimitState(gql).requests).toEqual({ r: 0, t: expect.any(Number) });
      const mcp = await post(`${gw.url}/mcp`, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_products', arguments: { brief: 'video' } } }, buyer);
      // MCP answers the request it refuses in JSON-RPC (200: its clients read no body from a 429),
      // AdCP's reserved -32029 with AdCP's error under data.
      expect(mcp.status).toBe(200);
      expect(Number(mcp.headers.get('retry-after'))).toBeGreaterThan(0);
      const rpc = (await mcp.json()) as { id: unknown; error: { code: number; data: { adcp_error: Record<string, unknown> } } };
      expect({ id: rpc.id, code: rpc.error.code }).toEqual({ id: 1, code: -32029 });
      expect(rpc.error.data.adcp_error).toMatchObject({ code: 'RATE_LIMITED', recovery: 'transient', retry_after: Number(mcp.headers.get('retry-after')) });
      expect(rateLimitState(mcp).requests).toEqual({ r: 0, t: expect.any(Number) });
      // Another key's budget is its own.
      const other = (await issueApiKey(gw.app.store, { org: 'other', role: 'buyer' }, { now: new Date().toISOString() })).key;
      await eventually(async () => (await graphql(gw.url, '{ viewer { role } }', undefined, other)).status === 200, 10_000, 'the other key');
      expect((await post(`${gw.url}/api/tasks/get_products`, { brief: 'video' }, other)).status).toBe(200);
    } finally {
      await gw.stop();
    }
  });

  it('the RateLimit headers: on every REST, MCP and A2A answer; on GraphQL only below a tenth of a budget and on refusals, extensions.cost always', async () => {
    const gw = await startTestGateway({ REQUESTS_PER_MINUTE: 'buyer=30', GRAPHQL_POINTS_PER_MINUTE: 'buyer=60000' });
    await freshBudgetWindow(); // the budgets below are counted to their end
    try {
      const buyer = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
      await eventually(async () => (await graphql(gw.url, '{ viewer { role } }', undefined, buyer)).status === 200, 10_000, 'the key');
      const gql = await graphql(gw.url, '{ viewer { role } }', undefined, buyer);
      expect(gql.status).toBe(200);
      expect([gql.headers.get('ratelimit'), gql.headers.get('ratelimit-policy')]).toEqual([null, null]);
      expect((gql.body as { extensions?: unknown }).extensions).toEqual({
        cost: { requested: expect.any(Number), actual: expect.any(Number), maximum: 1000, throttleStatus: { maximumAvailable: 60_000, currentlyAvailable: expect.any(Number), restoreRate: 1000, resetSeconds: expect.any(Number), windowSeconds: 60 } },
      });
      const rest = await post(`${gw.url}/api/tasks/get_products`, { brief: 'video' }, buyer);
      const mcp = await post(`${gw.url}/mcp`, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, buyer);
      const a2a = await post(`${gw.url}/a2a`, { jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'no-such-task' } }, buyer);
      let left = rateLimitState(rest).requests!.r;
      for (const [res, used] of [[rest, 0], [mcp, 1], [a2a, 2]] as const) {
        expect(res.status).toBe(200);
        expect(res.headers.get('ratelimit-policy')).toBe('"requests";q=30;w=60');
        expect(rateLimitState(res).requests!.r).toBe(left - used);
      }
      left -= 2;
      // Down to 3 of the 30 (a tenth: not yet below it), then to 2.
      while (left > 3) left = rateLimitState(await post(`${gw.url}/api/tasks/get_products`, { brief: 'video' }, buyer)).requests!.r;
      expect(left).toBe(3);
      const low = await graphql(gw.url, '{ viewer { role } }', undefined, buyer);
      expect(low.status).toBe(200);
      expect(rateLimitState(low)).toEqual({ requests: { r: 2, t: expect.any(Number) }, 'graphql-points': { r: ((low.body as { extensions?: unknown }).extensions as { cost: { throttleStatus: { currentlyAvailable: number } } }).cost.throttleStatus.currentlyAvailable, t: expect.any(Number) } });
      expect(low.headers.get('ratelimit-policy')).toBe('"requests";q=30;w=60, "graphql-points";q=60000;w=60');
      await graphql(gw.url, '{ viewer { role } }', undefined, buyer);
      await graphql(gw.url, '{ viewer { role } }', undefined, buyer);
      const refused = await graphql(gw.url, '{ viewer { role } }', undefined, buyer);
      expect(refused.status).toBe(429);
      expect(rateLimitState(refused).requests).toEqual({ r: 0, t: expect.any(Number) });
    } finally {
      await gw.stop();
    }
  });

  it('anonymous requests count per client address; failed credentials are throttled per address (further failures 429)', async () => {
    const gw = await startTestGateway({ REQUESTS_PER_MINUTE: 'anonymous=10', AUTH_FAILURES_PER_MINUTE: '4' });
    await freshBudgetWindow(); // the budgets below are counted to their end
    try {
      // A failed sign-in on the OAuth form counts into the same per-address budget as the API's.
      const signInForm = async () => {
        const client = (await (await post(`${gw.url}/register`, { redirect_uris: ['http://127.0.0.1:1/cb'], client_name: 'Planner', token_endpoint_auth_method: 'none' })).json()) as { client_id: string };
        const authorize = new URL(`${gw.url}/authorize`);
        const query = { response_type: 'code', client_id: client.client_id, redirect_uri: 'http://127.0.0.1:1/cb', code_challenge: 'x'.repeat(43), code_challenge_method: 'S256', state: 's' };
        for (const [k, v] of Object.entries(query)) authorize.searchParams.set(k, v);
        return /name="request" value="([^"]+)"/.exec(await (await fetch(authorize, { redirect: 'manual' })).text())![1]!;
      };
      const signIn = (request: string) =>
        fetch(`${gw.url}/oauth/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ request, api_key: 'sk_not-a-key', decision: 'approve' }).toString(), redirect: 'manual' });
      const bad = () => graphql(gw.url, '{ __typename }', undefined, 'sk_not-a-key');
      expect((await signIn(await signInForm())).status).toBe(401);
      // A WebSocket's connection_init is an authentication like any other: its failure counts too.
      const socketClose = (key: string) =>
        new Promise<{ code: number; reason: string }>((resolve, reject) => {
          const ws = new WebSocket(`${gw.url.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
          ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${key}` } })));
          ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
          ws.on('error', reject);
        });
      for (let i = 0; i < 2; i++) expect((await bad()).status).toBe(401);
      expect((await socketClose('sk_not-a-key')).code).toBe(4403);
      const throttled = await bad();
      expect(throttled.status).toBe(429);
      expect(throttled.body.errors![0]).toMatchObject({ message: expect.stringMatching(/too many failed authentications from this address/), extensions: { code: 'RATE_LIMITED' } });
      expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0);
      // Past the throttle a socket whose credentials fail is closed with 4429.
      expect(await socketClose('sk_not-a-key')).toEqual({ code: 4429, reason: expect.stringMatching(/too many failed authentications from this address/) });
      // The MCP binding says it in JSON-RPC, answering the request (-32029, AdCP's error under data).
      const mcp = await post(`${gw.url}/mcp`, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, 'sk_not-a-key');
      expect(mcp.status).toBe(200);
      expect(Number(mcp.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await mcp.json()) as unknown).toMatchObject({ id: 1, error: { code: -32029, data: { adcp_error: { code: 'RATE_LIMITED' } } } });
      // And the sign-in form answers a key that fails with a 429 page.
      const formThrottled = await signIn(await signInForm());
      expect(formThrottled.status).toBe(429);
      expect(Number(formThrottled.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await formThrottled.text()).toMatch(/Too many failed sign-ins from this address/);
      // Anonymous requests (the two sign-in flows above: register, authorize, login) count per
      // address: 6 of its 10 are spent.
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await graphql(gw.url, '{ __typename }')).status);
      expect(statuses).toEqual([200, 200, 200, 200, 429]);
    } finally {
      await gw.stop();
    }
  });

  it('GraphQL: the cost and depth of one operation, and the points per minute (THROTTLED, 429), with extensions.cost on every answer', async () => {
    const gw = await startTestGateway({ GRAPHQL_POINTS_PER_MINUTE: 'buyer=2500', GRAPHQL_MAX_DEPTH: '2' });
    await freshBudgetWindow(); // the budgets below are counted to their end
    try {
      const buyer = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
      await eventually(async () => (await graphql(gw.url, '{ viewer { role } }', undefined, buyer)).status === 200, 10_000, 'the key');
      const remaining = (r: { body: unknown }) => (r.body as { extensions: { cost: { throttleStatus: { currentlyAvailable: number } } } }).extensions.cost.throttleStatus.currentlyAvailable;
      const before = remaining(await graphql(gw.url, '{ __typename }', undefined, buyer));
      // 30 aliases of the product search: each 1 + 50 items; over the 1,000 one operation may cost,
      // and charged those 1,000 (refusing it was work too).
      const many = await graphql(gw.url, `{ ${Array.from({ length: 30 }, (_, i) => `p${i}: products { productId }`).join(' ')} }`, undefined, buyer);
      expect(many.status).toBe(400);
      expect(many.body.errors![0]!.extensions).toMatchObject({ code: 'MAX_COST_EXCEEDED', maximumCost: 1000, cost: expect.any(Number) });
      expect(many.body.errors![0]!.message).toMatch(/^This operation costs \d+ points, more than 1000/);
      expect(remaining(many)).toBe(before - 1000);
      expect((many.body as { extensions?: unknown }).extensions).toMatchObject({ cost: { requested: expect.any(Number), actual: 1000 } });
      const deep = await graphql(gw.url, '{ products { pricingOptions { pricingOptionId } } }', undefined, buyer);
      expect(deep.status).toBe(400);
      expect(deep.body.errors![0]!.extensions).toEqual({ code: 'MAX_DEPTH_EXCEEDED', depth: 3, maximumDepth: 2 });
      // Within limits: priced, and the price comes off the budget (50 items at 1 point + the document).
      const ok = await graphql(gw.url, '{ products(brief: "video") { productId } }', undefined, buyer);
      expect(ok.status).toBe(200);
      const cost = (ok.body as { extensions: { cost: { requested: number; actual: number; maximum: number; throttleStatus: Record<string, number> } } }).extensions.cost;
      expect(cost.requested).toBeGreaterThan(50);
      expect(cost.actual).toBe(cost.requested);
      expect(cost.throttleStatus).toEqual({ maximumAvailable: 2500, currentlyAvailable: remaining(deep) - cost.requested, restoreRate: 41.67, resetSeconds: expect.any(Number), windowSeconds: 60 });
      // Shopify's way: no RateLimit headers while more than a tenth of the points is left.
      expect(ok.headers.get('ratelimit')).toBeNull();
      expect(ok.headers.get('ratelimit-policy')).toBeNull();
      let throttled;
      for (let i = 0; i < 20 && !throttled; i++) {
        const r = await graphql(gw.url, '{ products(brief: "video") { productId } }', undefined, buyer);
        if (r.status === 429) throttled = r;
        else expect(r.status).toBe(200);
      }
      expect(throttled).toBeDefined();
      expect(throttled!.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(throttled!.body.errors![0]!.extensions).toMatchObject({ code: 'THROTTLED', cost: cost.requested });
      expect(throttled!.body.errors![0]!.message).toMatch(/costs \d+ points and \d+ of your 2500 per 60 s are left; try again in \d+ s/);
      expect(remaining(throttled!)).toBeLessThan(cost.requested);
      expect((throttled!.body as { extensions?: unknown }).extensions).toMatchObject({ cost: { requested: cost.requested, actual: 0 } });
      // A refusal carries the RateLimit headers, both budgets.
      expect(rateLimitState(throttled!)).toEqual({ requests: { r: expect.any(Number), t: expect.any(Number) }, 'graphql-points': { r: remaining(throttled!), t: expect.any(Number) } });
      // Spend the rest (tiny operations); then even the 800 KB document is refused before it is read.
      // Under a tenth of the 2,500 points left, every answer carries the headers.
      for (;;) {
        const tiny = await graphql(gw.url, '{ __typename }', undefined, buyer);
        if (tiny.status !== 200) break;
        expect(rateLimitState(tiny)['graphql-points']).toEqual({ r: remaining(tiny), t: expect.any(Number) });
      }
      const spent = await post(`${gw.url}/graphql`, HOSTILE, buyer);
      expect(spent.status).toBe(429);
      expect(((await spent.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code).toBe('THROTTLED');
      expect(rateLimitState(spent)['graphql-points']!.r).toBe(0);
      // Another key's points are its own.
      const other = (await issueApiKey(gw.app.store, { org: 'other', role: 'buyer' }, { now: new Date().toISOString() })).key;
      await eventually(async () => (await graphql(gw.url, '{ viewer { role } }', undefined, other)).status === 200, 10_000, 'the other key');
    } finally {
      await gw.stop();
    }
  });

  it('a page larger than the most one page holds is refused, naming the field (never quietly cut)', async () => {
    const gw = await startTestGateway();
    try {
      const buyer = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
      await eventually(async () => (await graphql(gw.url, '{ viewer { role } }', undefined, buyer)).status === 200, 10_000, 'the key');
      const tooMany = await graphql(gw.url, '{ receivedWebhooks(limit: 501) { id } }', undefined, buyer);
      expect(tooMany.body.errors![0]).toMatchObject({ message: 'limit must be between 1 and 500', extensions: { code: 'VALIDATION_ERROR', field: 'limit' } });
      expect((await graphql(gw.url, '{ receivedWebhooks(limit: 500) { id } }', undefined, buyer)).body.data).toEqual({ receivedWebhooks: [] });
      const rest = await post(`${gw.url}/api/tasks/get_media_buys`, { pagination: { max_results: 101 } }, buyer);
      expect(rest.status).toBe(422);
      expect(((await rest.json()) as { error: { field: string } }).error.field).toBe('pagination.max_results');
    } finally {
      await gw.stop();
    }
  });

  it('an answer over MAX_RESPONSE_BYTES becomes an error asking for less; a request over REQUEST_TIME_BUDGET_MS is answered 503 with Retry-After', async () => {
    const origins = await startOrigins({ 'slow.example': { '/.well-known/adagents.json': { body: { authorized_agents: [] }, delayMs: 3_000 } } });
    const gw = await startTestGateway({ MAX_RESPONSE_BYTES: '8192', REQUEST_TIME_BUDGET_MS: '500', REGISTRY_ORIGIN_OVERRIDES: origins.overrides });
    try {
      const admin = (await issueApiKey(gw.app.store, { org: 'ops', role: 'admin' }, { now: new Date().toISOString() })).key;
      const buyer = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
      await eventually(async () => (await graphql(gw.url, '{ viewer { role } }', undefined, buyer)).status === 200, 10_000, 'the keys');
      // GraphQL's introspection of the whole schema is well over 8 KB.
      const big = await graphql(gw.url, '{ __schema { types { name description fields { name description args { name description } } } } }', undefined, buyer);
      expect(big.status).toBe(422);
      expect(big.body.errors![0]).toMatchObject({ extensions: { code: 'RESPONSE_TOO_LARGE' }, message: expect.stringMatching(/more than 8192, the most one answer may be; ask for fewer items or fields/) });
      const started = Date.now();
      const slow = await fetch(`${gw.url}/api/registry/publisher/slow.example/adagents/revalidate`, { method: 'POST', headers: { authorization: `Bearer ${admin}` } });
      expect(slow.status).toBe(503);
      expect(slow.headers.get('retry-after')).toBe('30');
      expect(await slow.json()).toEqual({ error: 'the request took longer than 500 ms, the most one request may take; try again later' });
      expect(Date.now() - started).toBeLessThan(2_500);
      expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
    } finally {
      await gw.stop();
      await origins.close();
    }
  });
});

/** Two gateways on one database (or one Redis): one budget. */
function sharedBudget(name: string, env: () => Promise<{ env: Record<string, string>; cleanup: () => Promise<void> }>): void {
  it(`two gateways sharing ${name} share each key's request budget`, async () => {
    const shared = await env();
    const a = await startTestGateway({ ...shared.env, REQUESTS_PER_MINUTE: 'buyer=40' });
    const b = await startTestGateway({ ...shared.env, REQUESTS_PER_MINUTE: 'buyer=40' });
    await freshBudgetWindow(); // the budgets below are counted to their end
    try {
      const buyer = (await issueApiKey(a.app.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
      for (const gw of [a, b]) await eventually(async () => (await graphql(gw.url, '{ viewer { role } }', undefined, buyer)).status === 200, 15_000, 'the key on both');
      // Spend on A until it refuses.
      let onA = 0;
      for (; onA < 100; onA++) if ((await post(`${a.url}/api/tasks/get_products`, { brief: 'x' }, buyer)).status === 429) break;
      expect(onA).toBeLessThan(40);
      // B knows what A spent (from the shared store; at most A's last sync interval behind): it
      // admits what is left of the 40, not a fresh 40, then refuses too.
      let onB = 0;
      let refusedOnB: Response | undefined;
      for (; onB < 100 && !refusedOnB; onB++) {
        const res = await post(`${b.url}/api/tasks/get_products`, { brief: 'x' }, buyer);
        if (res.status === 429) refusedOnB = res;
      }
      expect(refusedOnB).toBeDefined();
      expect(rateLimitState(refusedOnB!).requests!.r).toBe(0);
      expect(onA + onB - 1).toBeLessThanOrEqual(45);
    } finally {
      await a.stop();
      await b.stop();
      await shared.cleanup();
    }
  }, 60_000);
}

describeWith('PostgreSQL', Boolean(PG_ADMIN_URL), 'resource limits across instances (PostgreSQL)', () => {
  sharedBudget('one PostgreSQL database', async () => {
    const db = await createTestDatabase('adcp_limits');
    return { env: { EVENT_STORE_URL: db.url }, cleanup: db.drop };
  });
});

describeWith('PostgreSQL and Redis', Boolean(PG_ADMIN_URL && REDIS_URL), 'resource limits across instances (Redis)', () => {
  sharedBudget('one Redis', async () => {
    const db = await createTestDatabase('adcp_limits');
    return { env: { EVENT_STORE_URL: db.url, REDIS_URL: REDIS_URL!, REDIS_KEY_PREFIX: `adcp-limits-${Date.now()}:` }, cleanup: db.drop };
  });
});
