import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { issueApiKey } from '../../src/application/api-keys';
import { BIN, ROOT, graphql, spawnGateway, startTestGateway, tempDir, type GatewayProcess } from '../support/gateway';
import { PG_ADMIN_URL, REDIS_URL, createTestDatabase, describeWith, eventually } from '../support/infra';
import { startOrigins } from '../support/origins';

const run = promisify(execFile);

/** The gateway's own time for an answer, from its `Server-Timing: app;dur=…` header. */
function serverMs(res: Response): number {
  const m = /app;dur=([\d.]+)/.exec(res.headers.get('server-timing') ?? '');
  if (!m) throw new Error(`no Server-Timing on ${res.url} (${res.status})`);
  return Number(m[1]);
}

/** The `RateLimit` header's items by name: what is left and when it resets. */
function rateLimitState(res: Response): Record<string, { r: number; t: number }> {
  const out: Record<string, { r: number; t: number }> = {};
  for (const m of (res.headers.get('ratelimit') ?? '').matchAll(/"([^"]+)";r=(\d+);t=(\d+)/g)) out[m[1]!] = { r: Number(m[2]), t: Number(m[3]) };
  return out;
}

const post = (url: string, body: unknown, key?: string) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) }, body: typeof body === 'string' ? body : JSON.stringify(body) });

/** The probe that found the issue: 15,000 aliases of the product search in one ~800 KB document. */
const HOSTILE_SCRIPT = `
const [url, key, ms, connections] = process.argv.slice(1);
const body = Buffer.from(JSON.stringify({ query: '{ ' + Array.from({ length: 15000 }, (_, i) => 'a' + i + ': products(brief: "video sports") { productId }').join(' ') + ' }' }));
const until = Date.now() + Number(ms);
const statuses = [], serverMs = [];
const loop = async () => {
  while (Date.now() < until) {
    const res = await fetch(url + '/graphql', { method: 'POST', headers: { authorization: 'Bearer ' + key, 'content-type': 'application/json' }, body });
    statuses.push(res.status);
    serverMs.push(Number((/app;dur=([0-9.]+)/.exec(res.headers.get('server-timing') || '') || [])[1]));
    await res.arrayBuffer();
  }
};
Promise.all(Array.from({ length: Number(connections) }, loop)).then(() => process.stdout.write(JSON.stringify({ statuses, serverMs })));
`;
const HOSTILE = JSON.stringify({ query: `{ ${Array.from({ length: 15_000 }, (_, i) => `a${i}: products(brief: "video sports") { productId }`).join(' ')} }` });

/** Sends the hostile query in a loop from a child process; resolves with what it saw. */
async function hostileLoop(url: string, key: string, ms: number, connections: number): Promise<{ statuses: number[]; serverMs: number[] }> {
  const { stdout } = await run(process.execPath, ['-e', HOSTILE_SCRIPT, url, key, String(ms), String(connections)], { maxBuffer: 64 * 1024 * 1024 });
  return JSON.parse(stdout) as { statuses: number[]; serverMs: number[] };
}

describe('resource limits: no single client stalls the gateway for everyone', () => {
  let gw: GatewayProcess;
  let hostile: string;
  let other: string;

  beforeAll(async () => {
    // The documented defaults, in a real process of its own, so the clocks below are the server's.
    const env = { DATA_DIR: tempDir(), REQUESTS_PER_MINUTE: 'anonymous=300,buyer=3000,seller=3000,admin=6000', GRAPHQL_POINTS_PER_MINUTE: 'anonymous=5000,buyer=50000,seller=50000,admin=100000', AUTH_FAILURES_PER_MINUTE: '30' };
    const key = async (org: string) => (await run(process.execPath, [BIN, 'keys', 'create', '--org', org, '--role', 'buyer'], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env } })).stdout.trim();
    hostile = await key('hostile');
    other = await key('other');
    gw = await spawnGateway(env);
  }, 60_000);

  afterAll(async () => {
    await gw?.stop();
  });

  it('refuses the 15,000-alias query with the cost error in under 50 ms of server time; /healthz and another buyer stay prompt while it comes in a loop for 10 s', async () => {
    const first = await post(`${gw.url}/graphql`, HOSTILE, hostile);
    expect(first.status).toBe(400);
    const body = (await first.json()) as { errors: { message: string; extensions: Record<string, unknown> }[]; extensions: { cost: Record<string, unknown> } };
    expect(body.errors[0]!.extensions).toMatchObject({ code: 'MAX_COST_EXCEEDED', maximumCost: 1000 });
    expect(body.errors[0]!.message).toMatch(/costs more than 1000 points, the most one operation may cost/);
    expect(body.extensions.cost).toMatchObject({ requested: null, maximum: 1000 });

    // The hostile buyer is a process of its own (two connections in a loop), so this process's
    // clock measures the gateway, not the cost of sending 800 KB bodies.
    const attacker = hostileLoop(gw.url, hostile, 10_000, 2);
    const until = Date.now() + 10_000;
    const healthz: number[] = [];
    const otherStatuses: number[] = [];
    const healthLoop = async () => {
      while (Date.now() < until) {
        const t = performance.now();
        const res = await fetch(`${gw.url}/healthz`);
        await res.text();
        healthz.push(performance.now() - t);
        expect(res.status).toBe(200);
        await new Promise((r) => setTimeout(r, 25));
      }
    };
    const otherLoop = async () => {
      while (Date.now() < until) {
        const rest = await post(`${gw.url}/api/tasks/get_products`, { brief: 'sports video' }, other);
        const gql = await graphql(gw.url, '{ products(brief: "news") { productId name } }', undefined, other);
        otherStatuses.push(rest.status, gql.status);
        await rest.arrayBuffer();
      }
    };
    const [{ statuses: hostileStatuses, serverMs: hostileTimes }] = await Promise.all([attacker, healthLoop(), otherLoop()]);

    expect(hostileStatuses.every((s) => s === 400 || s === 429)).toBe(true);
    expect(hostileTimes.length).toBeGreaterThan(20);
    expect(Math.max(...hostileTimes)).toBeLessThan(50);
    expect(healthz.length).toBeGreaterThan(50);
    expect(Math.max(...healthz)).toBeLessThan(50);
    expect(otherStatuses.length).toBeGreaterThan(20);
    expect(otherStatuses.every((s) => s === 200)).toBe(true);
  }, 60_000);
});

describe('each limit answers in its binding’s shape with Retry-After and the RateLimit headers', () => {
  it('request rate per key: REST, GraphQL and MCP share the key’s budget; 429 with Retry-After once it is spent', async () => {
    const gw = await startTestGateway({ REQUESTS_PER_MINUTE: 'buyer=6' });
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
      const mcp = await post(`${gw.url}/mcp`, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_products', arguments: { brief: 'video' } } }, buyer);
      expect(mcp.status).toBe(429);
      expect(Number(mcp.headers.get('retry-after'))).toBeGreaterThan(0);
      const rpc = (await mcp.json()) as { error: { data: { adcp_error: Record<string, unknown> } } };
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

  it('anonymous requests count per client address; failed credentials are throttled per address before they are checked again', async () => {
    const gw = await startTestGateway({ REQUESTS_PER_MINUTE: 'anonymous=3', AUTH_FAILURES_PER_MINUTE: '4' });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await graphql(gw.url, '{ __typename }')).status);
      expect(statuses).toEqual([200, 200, 200, 429]);
      const bad = () => graphql(gw.url, '{ __typename }', undefined, 'sk_not-a-key');
      for (let i = 0; i < 4; i++) expect((await bad()).status).toBe(401);
      const throttled = await bad();
      expect(throttled.status).toBe(429);
      expect(throttled.body.errors![0]).toMatchObject({ message: expect.stringMatching(/too many failed authentications from this address/), extensions: { code: 'RATE_LIMITED' } });
      expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0);
      // The MCP binding says it in JSON-RPC, with AdCP's error under data.
      const mcp = await post(`${gw.url}/mcp`, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, 'sk_not-a-key');
      expect(mcp.status).toBe(429);
      expect(((await mcp.json()) as { error: { data: { adcp_error: { code: string } } } }).error.data.adcp_error.code).toBe('RATE_LIMITED');
    } finally {
      await gw.stop();
    }
  });

  it('GraphQL: the cost and depth of one operation, and the points per minute (THROTTLED, 429), with extensions.cost on every answer', async () => {
    const gw = await startTestGateway({ GRAPHQL_POINTS_PER_MINUTE: 'buyer=300', GRAPHQL_MAX_DEPTH: '2' });
    try {
      const buyer = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
      await eventually(async () => (await graphql(gw.url, '{ viewer { role } }', undefined, buyer)).status === 200, 10_000, 'the key');
      // 30 aliases of the product search: each 1 + 50 items; over the 1,000 one operation may cost.
      const many = await graphql(gw.url, `{ ${Array.from({ length: 30 }, (_, i) => `p${i}: products { productId }`).join(' ')} }`, undefined, buyer);
      expect(many.status).toBe(400);
      expect(many.body.errors![0]!.extensions).toMatchObject({ code: 'MAX_COST_EXCEEDED', maximumCost: 1000, cost: expect.any(Number) });
      expect(many.body.errors![0]!.message).toMatch(/^This operation costs \d+ points, more than 1000/);
      const deep = await graphql(gw.url, '{ products { pricingOptions { pricingOptionId } } }', undefined, buyer);
      expect(deep.status).toBe(400);
      expect(deep.body.errors![0]!.extensions).toEqual({ code: 'MAX_DEPTH_EXCEEDED', depth: 3, maximumDepth: 2 });
      // Within limits: priced, and the price comes off the budget (50 items at 1 point + the document).
      const ok = await graphql(gw.url, '{ products(brief: "video") { productId } }', undefined, buyer);
      expect(ok.status).toBe(200);
      const cost = (ok.body as { extensions: { cost: { requested: number; maximum: number; budget: { limit: number; remaining: number } } } }).extensions.cost;
      expect(cost.requested).toBeGreaterThan(50);
      expect(cost.budget.limit).toBe(300);
      expect(rateLimitState(await fetch(`${gw.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${buyer}` }, body: JSON.stringify({ query: '{ __typename }' }) }))['graphql-points']).toBeDefined();
      let throttled;
      for (let i = 0; i < 10 && !throttled; i++) {
        const r = await graphql(gw.url, '{ products(brief: "video") { productId } }', undefined, buyer);
        if (r.status === 429) throttled = r;
        else expect(r.status).toBe(200);
      }
      expect(throttled).toBeDefined();
      expect(throttled!.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(throttled!.body.errors![0]!.extensions).toMatchObject({ code: 'THROTTLED', cost: cost.requested });
      expect(throttled!.body.errors![0]!.message).toMatch(/costs \d+ points and \d+ of your 300 per 60 s are left; try again in \d+ s/);
      expect((throttled!.body as { extensions: { cost: { budget: { remaining: number } } } }).extensions.cost.budget.remaining).toBeLessThan(cost.requested);
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
