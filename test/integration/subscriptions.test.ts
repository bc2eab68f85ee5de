import { randomBytes } from 'node:crypto';
import { createClient as createWsClient } from 'graphql-ws';
import WebSocket from 'ws';
import { issueApiKey } from '../../src/application/api-keys';
import type { RunningGateway } from '../../src/main';
import { mediaBuyStream } from '../../src/domain/media-buy/media-buy';
import { MAX_SUBSCRIPTIONS_PER_SOCKET } from '../../src/http/graphql-live';
import { graphql, startTestGateway } from '../support/gateway';
import { createTestDatabase, describeWith, eventually, PG_ADMIN_URL } from '../support/infra';
import { collect, overSse, overWebSocket, type Feed } from '../support/subscriptions';

interface BuyUpdate {
  position: number;
  mediaBuyId: string;
  event: string;
  status: string | null;
  previousStatus: string | null;
}

const BUY_UPDATES = 'subscription($after: Float, $ids: [String!]) { mediaBuyUpdated(after: $after, ids: $ids) { position mediaBuyId event status previousStatus } }';
const TASK_CHANGES = 'subscription($after: Float) { taskStatusChanged(after: $after) { position taskId taskType resourceId status previousStatus } }';
const future = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();

function subscriptionSuite(engine: string, env: () => Promise<{ env: Record<string, string>; cleanup: () => Promise<void> }>): void {
  describe(`GraphQL subscriptions (${engine})`, () => {
    let gw: RunningGateway;
    let cleanup: () => Promise<void>;
    let buyer: string;
    let other: string;
    let seller: string;
    let admin: string;
    const feeds: Feed<unknown>[] = [];

    beforeAll(async () => {
      const e = await env();
      cleanup = e.cleanup;
      gw = await startTestGateway(e.env);
      const now = { now: new Date().toISOString() };
      buyer = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, now)).key;
      other = (await issueApiKey(gw.app.store, { org: 'globex', role: 'buyer' }, now)).key;
      seller = (await issueApiKey(gw.app.store, { org: 'publisher', role: 'seller' }, now)).key;
      admin = (await issueApiKey(gw.app.store, { org: 'operator', role: 'admin' }, now)).key;
      await eventually(async () => (await graphql(gw.url, '{ viewer { role } }', undefined, seller)).body.data?.viewer?.role === 'seller', 20_000, 'the keys');
    }, 60_000);
    afterEach(() => {
      for (const f of feeds.splice(0)) f.stop();
    });
    afterAll(async () => {
      await gw.stop();
      await cleanup();
    });

    const task = async (name: string, body: unknown, key: string) => {
      const res = await fetch(`${gw.url}/api/tasks/${name}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify(body) });
      expect(res.status).toBe(200);
      return (await res.json()) as Record<string, any>;
    };
    const buy = (guaranteed: boolean) => ({
      buyer_ref: `live-${randomBytes(4).toString('hex')}`,
      brand_manifest: { name: 'Acme', url: 'https://acme.example' },
      packages: [guaranteed ? { product_id: 'premium_ctv_guaranteed', pricing_option_id: 'cpm_usd_guaranteed', budget: 20000 } : { product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 5000 }],
      start_time: { type: 'asap' },
      end_time: future(14),
    });
    const head = async () => (await graphql(gw.url, '{ eventLog { headPosition } }', undefined, seller)).body.data!.eventLog.headPosition as number;
    /** The positions of a buy's events as the log holds them, after `after`. */
    const logged = async (mediaBuyId: string, after = 0) => (await gw.app.store.readStream(mediaBuyStream(mediaBuyId))).map((e) => e.position).filter((p) => p > after);

    for (const [transport, over] of [['graphql-ws', overWebSocket], ['graphql-sse', overSse]] as const) {
      it(`${transport}: a buyer follows their buy from pending to approved in order, resumes after a reconnect with no gap, and never sees another buyer's buy`, async () => {
        const subscribe = over(gw.url);
        const from = await head();
        const mine = subscribe<BuyUpdate>(buyer, BUY_UPDATES, { after: from });
        const theirs = subscribe<BuyUpdate>(other, BUY_UPDATES, { after: from });
        const inbox = subscribe<{ taskId: string; taskType: string; resourceId: string; status: string }>(seller, TASK_CHANGES, { after: from });
        feeds.push(mine, theirs, inbox);

        const pending = await task('create_media_buy', buy(true), buyer);
        expect(pending).toMatchObject({ status: 'pending', task_id: expect.any(String) });
        const globex = await task('create_media_buy', buy(false), other);
        const approved = await graphql(gw.url, 'mutation($t: ID!) { approveTask(taskId: $t) }', { t: pending.task_id }, seller);
        expect(approved.body.data).toEqual({ approveTask: 'completed' });

        // Live: created (pending), then approved (active), as they happened.
        await eventually(() => mine.items.length >= 2, 10_000, 'the buyer’s first two updates');
        expect(mine.items.slice(0, 2).map((u) => [u.mediaBuyId, u.event, u.status])).toEqual([
          [pending.media_buy_id, 'MediaBuyCreated', 'pending'],
          [pending.media_buy_id, 'MediaBuyApproved', 'active'],
        ]);
        // The seller's inbox saw the task submitted, worked and completed.
        await eventually(() => inbox.items.filter((t) => t.taskId === pending.task_id).length >= 3, 10_000, 'the seller’s task changes');
        expect(inbox.items.filter((t) => t.taskId === pending.task_id).map((t) => [t.taskType, t.resourceId, t.status])).toEqual([
          ['create_media_buy', pending.media_buy_id, 'submitted'],
          ['create_media_buy', pending.media_buy_id, 'working'],
          ['create_media_buy', pending.media_buy_id, 'completed'],
        ]);

        // The buyer goes away; the buy changes meanwhile; they come back from the last position they had.
        mine.stop();
        const last = mine.items[mine.items.length - 1]!.position;
        await task('update_media_buy', { media_buy_id: pending.media_buy_id, updates: { status: 'pause' } }, buyer);
        await task('update_media_buy', { media_buy_id: pending.media_buy_id, updates: { status: 'resume' } }, buyer);
        const resumed = subscribe<BuyUpdate>(buyer, BUY_UPDATES, { after: last, ids: [pending.media_buy_id] });
        feeds.push(resumed);
        const missed = await logged(pending.media_buy_id, last);
        expect(missed.length).toBeGreaterThanOrEqual(2);
        await eventually(() => resumed.items.length >= missed.length, 10_000, 'the missed updates');
        // Exactly what the log holds after that position, in its order: nothing missed, nothing twice.
        expect(resumed.items.map((u) => u.position)).toEqual(missed);
        expect(resumed.items.map((u) => [u.previousStatus, u.status])).toEqual([
          ['active', 'paused'],
          ['paused', 'active'],
        ]);
        // Everything the first subscription had was the log's too, in order.
        expect(mine.items.map((u) => u.position)).toEqual((await logged(pending.media_buy_id, from)).filter((p) => p <= last));

        // The other buyer saw their own buy only.
        await eventually(() => theirs.items.length >= 1, 10_000, 'the other buyer’s update');
        expect(theirs.items.map((u) => u.mediaBuyId)).toEqual([globex.media_buy_id]);
        expect([...mine.errors, ...resumed.errors, ...theirs.errors, ...inbox.errors]).toEqual([]);
      }, 60_000);
    }

    it('graphql-ws: delivery, webhook activity, received webhooks and the registry feed each follow their own events', async () => {
      const subscribe = overWebSocket(gw.url);
      const from = await head();
      const secret = 'live-hmac-secret-5f1c2e7a9b3d4c6e8f0a1b2c3d4e5f6a';
      const endpoint = (await graphql(gw.url, `mutation { registerWebhookEndpoint(agentId: "adcp_gateway", senderDomain: "seller.example", mode: "hmac-sha256", secret: "${secret}") }`, undefined, buyer)).body.data!.registerWebhookEndpoint as { url_template: string; endpoint_id: string };
      const delivery = subscribe<{ mediaBuyId: string; kind: string; hours: number; impressions: number; spend: number }>(buyer, 'subscription($a: Float) { deliveryUpdated(after: $a) { mediaBuyId kind hours impressions spend } }', { a: from });
      const activity = subscribe<{ kind: string; taskId: string | null; outcome: string | null; httpStatus: number | null }>(buyer, 'subscription($a: Float) { webhookActivity(after: $a) { kind taskId outcome httpStatus } }', { a: from });
      const arrived = subscribe<{ endpointId: string; format: string }>(buyer, 'subscription($a: Float) { receivedWebhook(after: $a) { endpointId format } }', { a: from });
      const othersArrived = subscribe<{ endpointId: string }>(other, 'subscription($a: Float) { receivedWebhook(after: $a) { endpointId } }', { a: from });
      const feed = subscribe<{ entityType: string; entityId: string; eventType: string }>(admin, 'subscription($a: Float) { registryFeed(after: $a, types: ["brand"]) { entityType entityId eventType } }', { a: from });
      feeds.push(delivery, activity, arrived, othersArrived, feed);

      // A buy that waits for the seller, its task's webhooks sent to the buyer's own receiver here.
      const url = endpoint.url_template.replace('{task_type}', 'create_media_buy');
      const pending = await task('create_media_buy', { ...buy(true), push_notification_config: { url, operation_id: 'op-live', authentication: { schemes: ['HMAC-SHA256'], credentials: secret } } }, buyer);
      await graphql(gw.url, 'mutation($t: ID!) { approveTask(taskId: $t) }', { t: pending.task_id }, seller);
      await eventually(() => activity.items.some((a) => a.kind === 'attempted' && a.taskId === pending.task_id && a.outcome === 'success'), 15_000, 'a delivered webhook attempt');
      expect(activity.items.find((a) => a.taskId === pending.task_id)).toMatchObject({ kind: 'scheduled' });
      await eventually(() => arrived.items.length > 0, 15_000, 'a received webhook');
      expect(arrived.items.every((r) => r.endpointId === endpoint.endpoint_id && r.format === 'mcp')).toBe(true);

      // Two hours of delivery: what the updates add up to is what get_media_buy_delivery reports.
      expect((await graphql(gw.url, 'mutation { advanceClock(seconds: 7200) }', undefined, seller)).body.errors).toBeUndefined();
      const report = await eventually(async () => {
        const r = await task('get_media_buy_delivery', { media_buy_id: pending.media_buy_id }, buyer);
        return r.delivery?.impressions > 0 ? r : undefined;
      }, 15_000, 'delivery recorded');
      await eventually(() => delivery.items.filter((d) => d.mediaBuyId === pending.media_buy_id).reduce((t, d) => t + d.impressions, 0) === report!.delivery.impressions, 15_000, 'the delivery updates to add up');
      expect(delivery.items.every((d) => d.kind === 'recorded' && d.hours > 0)).toBe(true);

      // A brand registered: the registry feed's entry, filtered to brands.
      await graphql(gw.url, 'mutation { registerBrand(domain: "live-brand.example", identity: {brandName: "Live Brand"}) { domain } }', undefined, admin);
      await eventually(() => feed.items.some((f) => f.entityId.includes('live-brand.example')), 15_000, 'the brand’s feed entry');
      expect(feed.items.every((f) => f.entityType === 'brand')).toBe(true);

      expect(othersArrived.items).toEqual([]);
      expect([delivery, activity, arrived, othersArrived, feed].flatMap((f) => f.errors)).toEqual([]);
    }, 60_000);

    it('graphql-ws: anonymous subscriptions are refused with UNAUTHENTICATED; bad credentials close the socket (4403); a socket holds at most its share of subscriptions', async () => {
      const url = `${gw.url.replace(/^http/, 'ws')}/graphql`;
      const anonymous = createWsClient({ url, webSocketImpl: WebSocket, retryAttempts: 0, lazy: true });
      const anon = collect<BuyUpdate>((sink) => anonymous.subscribe({ query: BUY_UPDATES }, sink), () => void anonymous.dispose());
      feeds.push(anon);
      await eventually(() => anon.errors.length > 0, 10_000, 'the refusal');
      expect(JSON.stringify(anon.errors)).toContain('UNAUTHENTICATED');

      const forged = createWsClient({ url, webSocketImpl: WebSocket, connectionParams: { authorization: 'Bearer sk_not-a-key' }, retryAttempts: 0, lazy: true });
      const bad = collect<BuyUpdate>((sink) => forged.subscribe({ query: BUY_UPDATES }, sink), () => void forged.dispose());
      feeds.push(bad);
      await eventually(() => bad.errors.length > 0, 10_000, 'the close');
      expect((bad.errors[0] as { code?: number }).code).toBe(4403);

      const client = createWsClient({ url, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${buyer}` }, retryAttempts: 0, lazy: true });
      const many = Array.from({ length: MAX_SUBSCRIPTIONS_PER_SOCKET + 1 }, () => collect<BuyUpdate>((sink) => client.subscribe({ query: BUY_UPDATES }, sink), () => undefined));
      feeds.push(...many, { items: [], errors: [], stop: () => void client.dispose() });
      await eventually(() => many.some((f) => f.errors.length > 0), 10_000, 'the refusal of one too many');
      const refused = many.filter((f) => f.errors.length > 0);
      expect(refused).toHaveLength(1);
      expect(JSON.stringify(refused[0]!.errors)).toContain('TOO_MANY_SUBSCRIPTIONS');

      // A list filter is looked up for every event while the subscription lasts: bounded.
      const wide = createWsClient({ url, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${buyer}` }, retryAttempts: 0, lazy: true });
      const ids = Array.from({ length: 101 }, (_, i) => `mb_${i}`);
      const tooMany = collect<BuyUpdate>((sink) => wide.subscribe({ query: 'subscription($ids: [String!]) { mediaBuyUpdated(ids: $ids) { mediaBuyId } }', variables: { ids } }, sink), () => void wide.dispose());
      feeds.push(tooMany);
      await eventually(() => tooMany.errors.length > 0, 10_000, 'the refusal of 101 ids');
      expect(JSON.stringify(tooMany.errors)).toMatch(/ids holds 101 items; at most 100 are allowed.*VALIDATION_ERROR|VALIDATION_ERROR.*ids holds 101 items/);
    }, 30_000);

    it('graphql-sse: bad credentials are a 401, and an operation over the cost limit is refused before it runs', async () => {
      const post = (key: string, query: string) => fetch(`${gw.url}/graphql/stream`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${key}` }, body: JSON.stringify({ query }) });
      expect((await post('sk_not-a-key', BUY_UPDATES)).status).toBe(401);
      const deep = await post(buyer, `query { ${Array.from({ length: 30 }, (_, i) => `p${i}: products { productId }`).join(' ')} }`);
      expect(deep.status).toBe(400);
      expect(JSON.stringify(await deep.json())).toContain('MAX_COST_EXCEEDED');
    });
  });
}

// The gateway's own receiver takes its webhooks on loopback (the test seam for private webhook URLs).
const SELF_RECEIVING = { APPROVAL_POLICY: 'rules', ALLOW_PRIVATE_WEBHOOK_URLS: '1' };

subscriptionSuite('SQLite', async () => ({ env: SELF_RECEIVING, cleanup: async () => {} }));

describeWith('PostgreSQL', !!PG_ADMIN_URL, 'server mode', () => {
  subscriptionSuite('PostgreSQL', async () => {
    const db = await createTestDatabase();
    return { env: { ...SELF_RECEIVING, EVENT_STORE_URL: db.url }, cleanup: db.drop };
  });

  it('two gateways on one database: a subscriber on one follows what the other writes, in order', async () => {
    const db = await createTestDatabase();
    const a = await startTestGateway({ EVENT_STORE_URL: db.url, APPROVAL_POLICY: 'never' });
    const b = await startTestGateway({ EVENT_STORE_URL: db.url, APPROVAL_POLICY: 'never' });
    try {
      const key = (await issueApiKey(a.app.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
      await eventually(async () => (await graphql(b.url, '{ viewer { role } }', undefined, key)).body.data?.viewer?.role === 'buyer', 20_000, 'the key on b');
      const from = (await graphql(b.url, '{ eventLog { headPosition } }', undefined, key)).body.data!.eventLog.headPosition as number;
      const onB = overWebSocket(b.url)<BuyUpdate>(key, BUY_UPDATES, { after: from });
      try {
        const ids: string[] = [];
        for (let i = 0; i < 5; i++) {
          const res = await fetch(`${a.url}/api/tasks/create_media_buy`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
            body: JSON.stringify({ buyer_ref: `two-${i}-${randomBytes(3).toString('hex')}`, brand_manifest: { url: 'https://acme.example' }, packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 1000 }], start_time: { type: 'asap' }, end_time: future(7) }),
          });
          ids.push(((await res.json()) as { media_buy_id: string }).media_buy_id);
        }
        await eventually(() => onB.items.length >= 5, 15_000, 'b to see a’s buys');
        expect(onB.items.map((u) => u.mediaBuyId)).toEqual(ids);
        expect(onB.items.map((u) => u.position)).toEqual([...onB.items.map((u) => u.position)].sort((x, y) => x - y));
        expect(onB.errors).toEqual([]);
      } finally {
        onB.stop();
      }
    } finally {
      await b.stop();
      await a.stop();
      await db.drop();
    }
  }, 60_000);
});
