import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestGateway } from '../support/gateway';
import { freshBudgetWindow } from '../support/limits';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;

/** `count` addresses in one IPv6 /64 (`prefix` is its first four groups), each different. */
const inOne64 = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => `${prefix}:${(i * 7919 + 1).toString(16)}:${i.toString(16)}:beef:${(i + 1).toString(16)}`);

/** An origin that takes every request and never answers: crawls sent to it stay pending. */
async function startTarpit() {
  const server = http.createServer(() => {});
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/**
 * Issue 45, finding 7: a client given an IPv6 /64 (as any subscriber is) can pick a new address
 * for each request. Every per-address budget counts an IPv6 address by its /64, and an
 * IPv4-mapped address as its IPv4 one. The clients are told apart by X-Forwarded-For from one
 * trusted proxy hop, as behind a load balancer.
 */
describe('per-address budgets count an IPv6 client by its /64', () => {
  let gw: Gateway;
  let tarpit: Awaited<ReturnType<typeof startTarpit>>;
  const pending = Array.from({ length: 201 }, (_, i) => `d${i}.tarpit.example`);

  beforeAll(async () => {
    tarpit = await startTarpit();
    gw = await startTestGateway({
      TRUST_PROXY: '1',
      PUBLIC_URL: 'https://ads.example.com',
      REQUESTS_PER_MINUTE: 'anonymous=6',
      AUTH_FAILURES_PER_MINUTE: '3',
      BRAND_RESOLVE_RATE_LIMIT: '3',
      WEBHOOK_REQUESTS_PER_MINUTE: '3',
      REGISTRY_ORIGIN_OVERRIDES: pending.map((d) => `${d}=http://127.0.0.1:${tarpit.port}`).join(','),
    });
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
    await tarpit?.close();
  });

  const from = (address: string, headers: Record<string, string> = {}) => ({ 'x-forwarded-for': address, ...headers });
  /** A GraphQL request's status, from `address`, with `key` when given. */
  const gql = async (address: string, key?: string) =>
    (await fetch(`${gw.url}/graphql`, { method: 'POST', headers: from(address, { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) }), body: JSON.stringify({ query: '{ __typename }' }) })).status;
  const anonymous = (address: string) => gql(address);
  const bulk = async (address: string, domains: string[]) => {
    const r = await fetch(`${gw.url}/api/brands/resolve/bulk`, { method: 'POST', headers: from(address, { 'content-type': 'application/json' }), body: JSON.stringify({ domains }) });
    return { status: r.status, body: (await r.json()) as { error?: string } };
  };

  it('anonymous requests: six addresses of one /64 spend its six, the seventh is refused; another /64 and IPv4 are not; ::ffff:a.b.c.d is a.b.c.d', async () => {
    await freshBudgetWindow();
    const statuses = [];
    for (const address of inOne64('2001:db8:45:7', 7)) statuses.push(await anonymous(address));
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 429]);
    expect(await anonymous('2001:db8:45:8::1')).toBe(200);
    for (let i = 0; i < 3; i++) expect(await anonymous('198.51.100.45')).toBe(200);
    const mapped = [];
    for (let i = 0; i < 4; i++) mapped.push(await anonymous('::ffff:198.51.100.45'));
    expect(mapped).toEqual([200, 200, 200, 429]);
  });

  it('failed authentications: failures from addresses of one /64 share its throttle', async () => {
    await freshBudgetWindow();
    const statuses = [];
    for (const address of inOne64('2001:db8:45:a', 5)) statuses.push(await gql(address, 'sk_not-a-key'));
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
  });

  it('bulk brand resolution: addresses of one /64 share its requests a minute', async () => {
    await freshBudgetWindow();
    const statuses = [];
    for (const address of inOne64('2001:db8:45:b', 4)) statuses.push((await bulk(address, ['known-nowhere.example'])).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect((await bulk('2001:db8:45:c::1', ['known-nowhere.example'])).status).toBe(200);
  });

  it('brand crawls: addresses of one /64 share its share of the crawl queue', async () => {
    const [a, b, c] = inOne64('2001:db8:45:d', 3);
    expect((await bulk(a!, pending.slice(0, 100))).status).toBe(200);
    expect((await bulk(b!, pending.slice(100, 200))).status).toBe(200);
    const refused = await bulk(c!, pending.slice(200, 201));
    expect(refused).toMatchObject({ status: 429, body: { error: expect.stringContaining('Too many brand crawls pending for this client') } });
  });

  it('the webhook receiver: senders at addresses of one /64 share its requests a minute', async () => {
    await freshBudgetWindow();
    const statuses = [];
    for (const address of inOne64('2001:db8:45:e', 4)) {
      const r = await fetch(`${gw.url}/webhooks/create_media_buy/some_agent/no-such-endpoint-0000`, { method: 'POST', headers: from(address, { 'content-type': 'application/json' }), body: '{}' });
      statuses.push(r.status);
    }
    expect(statuses).toEqual([404, 404, 404, 429]);
  });
});
