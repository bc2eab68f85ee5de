import fs from 'node:fs';
import path from 'node:path';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { issueApiKey } from '../../src/application/api-keys';
import type { RunningGateway } from '../../src/main';
import { ROOT, graphql, startTestGateway } from '../support/gateway';
import { eventually } from '../support/infra';
import { overWebSocket, type Feed } from '../support/subscriptions';

interface Message {
  position: number;
  id: string;
  type: string;
  source: string;
  subject: string;
  tenant: string;
  time: string;
  data: Record<string, any>;
}

const PUBLIC_EVENTS = 'subscription($types: [String!], $after: Float) { publicEvents(types: $types, after: $after) { position id type source subject tenant time data } }';
const future = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();

/** Issue 37 item 3: the GraphQL subscriptions serve the same public event model as Kafka. */
describe('the publicEvents subscription', () => {
  let gw: RunningGateway;
  let acme: string;
  let globex: string;
  let seller: string;
  const feeds: Feed<unknown>[] = [];

  beforeAll(async () => {
    gw = await startTestGateway();
    const now = { now: new Date().toISOString() };
    acme = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, now)).key;
    globex = (await issueApiKey(gw.app.store, { org: 'globex', role: 'buyer' }, now)).key;
    seller = (await issueApiKey(gw.app.store, { org: 'publisher', role: 'seller' }, now)).key;
    await eventually(async () => (await graphql(gw.url, '{ viewer { role } }', undefined, seller)).body.data?.viewer?.role === 'seller', 20_000, 'the keys');
  }, 60_000);
  afterAll(async () => {
    for (const f of feeds) f.stop();
    await gw.stop();
  });

  const subscribe = (key: string, variables: Record<string, unknown>) => {
    const feed = overWebSocket(gw.url)<Message>(key, PUBLIC_EVENTS, variables);
    feeds.push(feed);
    return feed;
  };
  const create = async (key: string, ref: string) => {
    const res = await fetch(`${gw.url}/api/tasks/create_media_buy`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ buyer_ref: ref, brand_manifest: { name: 'Acme', url: 'https://acme.example' }, packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 1000 }], start_time: { type: 'asap' }, end_time: future(7) }),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as Record<string, any>;
  };

  it('sends each caller its own public events (a seller everyone’s), valid against schema/events, resumable with after', async () => {
    const mine = subscribe(acme, { types: ['media_buy'] });
    const theirs = subscribe(globex, { types: ['media_buy'] });
    const sellers = subscribe(seller, { types: ['media_buy.created.v1'] });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const created = await create(acme, 'public-gql-1');
    const buyId = created.media_buy_id as string;
    // Subjects are unique across tenants (`<tenant>/<id>`), as on Kafka; the tenant an opaque key.
    const about = (m: Message) => m.subject.endsWith(`/${buyId}`);
    await eventually(() => mine.items.some(about) && sellers.items.some(about), 15_000, 'the created buy on the subscriptions');
    const first = mine.items.find(about)!;
    expect(first.tenant).toMatch(/^t_[A-Za-z0-9_-]{22}$/);
    expect(first.subject).toBe(`${first.tenant}/${buyId}`);
    expect(sellers.items.find(about)).toMatchObject({ id: first.id, tenant: first.tenant, subject: first.subject });
    expect(JSON.stringify(first)).not.toContain('acme');
    expect(first).toMatchObject({ type: 'media_buy.created.v1', source: '/adcp-gateway', data: { media_buy_id: buyId, buyer_ref: 'public-gql-1' } });
    const ajv = new Ajv({ strict: false });
    addFormats(ajv);
    const validate = ajv.compile(JSON.parse(fs.readFileSync(path.join(ROOT, 'schema', 'events', 'media_buy.created.v1.json'), 'utf8')) as object);
    expect({ valid: validate(first.data), errors: validate.errors ?? null }).toEqual({ valid: true, errors: null });
    expect(mine.errors).toEqual([]);
    // Another buyer sees nothing of acme's.
    await create(globex, 'public-gql-2');
    await eventually(() => theirs.items.length > 0, 15_000, 'globex’s own buy');
    expect(theirs.items.filter(about)).toEqual([]);
    // Another buyer, another tenant.
    expect(theirs.items[0]!.tenant).toMatch(/^t_/);
    expect(theirs.items[0]!.tenant).not.toBe(first.tenant);

    // Resuming after the first event of the buy replays what came after it, nothing before.
    const resumed = subscribe(acme, { types: ['media_buy'], after: first.position - 1 });
    await eventually(() => resumed.items.some((m) => m.id === first.id), 15_000, 'the replay');
    expect(resumed.items[0]!.id).toBe(first.id);
  }, 60_000);

  it('refuses an unknown type by name', async () => {
    const feed = subscribe(acme, { types: ['api_key.issued'] });
    await eventually(() => feed.errors.length > 0, 15_000, 'the refusal');
    expect(JSON.stringify(feed.errors)).toContain('unknown public event type \\"api_key.issued\\"');
  });
});
