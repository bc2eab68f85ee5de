import { randomBytes } from 'node:crypto';
import { issueApiKey } from '../../src/application/api-keys';
import { graphql, startTestGateway } from '../support/gateway';
import { startReceiver } from '../support/receiver';
import { createTestDatabase, describeWith, eventually, PG_ADMIN_URL } from '../support/infra';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;

const future = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();
const VIDEO = { agentUrl: 'https://creative.adcontextprotocol.org', id: 'video_16x9_30s' };
const BUY = `query($id: ID!) { mediaBuy(id: $id) {
  id status totalBudget endTime packages { id budget creativeIds }
  timeline { event status changed note }
  creatives { id name status format { id } formatType url assets { kind url width height durationMs } assignments { packageId assignedAt } }
  webhookActivity { idempotencyKey notificationType taskId url state attempts { attempt outcome httpStatus durationMs startedAt completedAt } }
  impairments { id }
} }`;

// The gateway's own receiver takes its webhooks on loopback (the test seam for private webhook URLs).
const SELF_RECEIVING = { APPROVAL_POLICY: 'rules', ALLOW_PRIVATE_WEBHOOK_URLS: '1' };

function buyerActionsSuite(engine: string, env: () => Promise<{ env: Record<string, string>; cleanup: () => Promise<void> }>): void {
  describe(`a buyer’s actions, creatives and webhooks on the typed graph (GraphQL, ${engine})`, () => {
    let cleanup: () => Promise<void> = async () => {};
    let gw: Gateway;
    let buyer: string;
    let other: string;
    let seller: string;
    let buy: Record<string, any>;
    let endpointId: string;

    const task = async (name: string, body: unknown, key: string) => {
      const res = await fetch(`${gw.url}/api/tasks/${name}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify(body) });
      expect(res.status).toBe(200);
      return (await res.json()) as Record<string, any>;
    };
    const read = async (key = buyer) => {
      const r = await graphql(gw.url, BUY, { id: buy.media_buy_id }, key);
      expect(r.body.errors).toBeUndefined();
      return r.body.data!.mediaBuy as Record<string, any> | null;
    };
    const errorOf = (r: { body: { errors?: readonly { extensions?: Record<string, unknown> }[] } }) => r.body.errors?.[0]?.extensions;

    beforeAll(async () => {
      const e = await env();
      cleanup = e.cleanup;
      gw = await startTestGateway(e.env);
      const now = { now: new Date().toISOString() };
      buyer = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, now)).key;
      other = (await issueApiKey(gw.app.store, { org: 'globex', role: 'buyer' }, now)).key;
      seller = (await issueApiKey(gw.app.store, { org: 'publisher', role: 'seller' }, now)).key;
      await eventually(async () => (await graphql(gw.url, '{ viewer { role } }', undefined, seller)).body.data?.viewer?.role === 'seller', 20_000, 'the keys');
      const secret = 'actions-hmac-secret-5f1c2e7a9b3d4c6e8f0a1b2c3d4e5f6a';
      const endpoint = (await graphql(gw.url, `mutation { registerWebhookEndpoint(agentId: "adcp_gateway", senderDomain: "seller.example", mode: "hmac-sha256", secret: "${secret}") }`, undefined, buyer)).body.data!.registerWebhookEndpoint as { url_template: string; endpoint_id: string };
      endpointId = endpoint.endpoint_id;
      buy = await task(
        'create_media_buy',
        {
          buyer_ref: `actions-${randomBytes(4).toString('hex')}`,
          brand_manifest: { name: 'Acme', url: 'https://acme.example' },
          packages: [{ buyer_ref: 'ctv', product_id: 'premium_ctv_guaranteed', pricing_option_id: 'cpm_usd_guaranteed', budget: 20000 }],
          start_time: { type: 'asap' },
          end_time: future(14),
          push_notification_config: { url: endpoint.url_template.replace('{task_type}', 'create_media_buy'), operation_id: 'op-actions', authentication: { schemes: ['HMAC-SHA256'], credentials: secret } },
        },
        buyer,
      );
      expect((await graphql(gw.url, 'mutation($t: ID!) { approveTask(taskId: $t) }', { t: buy.task_id }, seller)).body.data).toEqual({ approveTask: 'completed' });
    }, 60_000);
    afterAll(async () => {
      await gw?.stop();
      await cleanup();
    });

    it('pause → paused, resume → active, each on the timeline; a status that forbids it is an error at id', async () => {
      const paused = await graphql(gw.url, 'mutation($id: ID!) { pauseMediaBuy(id: $id) { id status } }', { id: buy.media_buy_id }, buyer);
      expect(paused.body.data).toEqual({ pauseMediaBuy: { id: buy.media_buy_id, status: 'paused' } });
      expect(errorOf(await graphql(gw.url, 'mutation($id: ID!) { pauseMediaBuy(id: $id) { id } }', { id: buy.media_buy_id }, buyer))).toMatchObject({ code: 'INVALID_STATE', field: 'id' });
      const resumed = await graphql(gw.url, 'mutation($id: ID!) { resumeMediaBuy(id: $id) { status } }', { id: buy.media_buy_id }, buyer);
      expect(resumed.body.data).toEqual({ resumeMediaBuy: { status: 'active' } });
      const b = await read();
      expect(b!.status).toBe('active');
      expect(b!.timeline.slice(-2)).toEqual([
        { event: 'MediaBuyStatusChanged', status: 'paused', changed: [], note: null },
        { event: 'MediaBuyStatusChanged', status: 'active', changed: [], note: null },
      ]);
    });

    it('a budget change: refused values at their input field, then the new budget in the packages, the total and the timeline', async () => {
      const change = (input: Record<string, unknown>) => graphql(gw.url, 'mutation($i: MediaBuyBudgetInput!) { changeMediaBuyBudget(input: $i) { totalBudget endTime packages { id budget } } }', { i: input }, buyer);
      const [pkg] = (await read())!.packages as { id: string }[];
      expect(errorOf(await change({ mediaBuyId: buy.media_buy_id, packages: [{ packageId: pkg!.id, budget: -5 }] }))).toMatchObject({ code: 'VALIDATION_ERROR', field: 'packages[0].budget' });
      expect(errorOf(await change({ mediaBuyId: buy.media_buy_id, packages: [{ packageId: 'pkg_nope', budget: 10 }] }))).toMatchObject({ code: 'NOT_FOUND', field: 'packages[0].packageId' });
      expect(errorOf(await change({ mediaBuyId: buy.media_buy_id, endTime: '2020-01-01T00:00:00Z' }))).toMatchObject({ code: 'VALIDATION_ERROR', field: 'endTime' });
      expect(errorOf(await change({ mediaBuyId: buy.media_buy_id }))).toMatchObject({ code: 'VALIDATION_ERROR', field: 'packages' });
      const end = future(21);
      const changed = await change({ mediaBuyId: buy.media_buy_id, packages: [{ packageId: pkg!.id, budget: 25000 }], endTime: end });
      expect(changed.body.data).toEqual({ changeMediaBuyBudget: { totalBudget: 25000, endTime: end, packages: [{ id: pkg!.id, budget: 25000 }] } });
      const b = await read();
      expect(b!.totalBudget).toBe(25000);
      expect(b!.timeline.at(-1)).toEqual({ event: 'MediaBuyUpdated', status: null, changed: ['packages', 'end_time'], note: null });
    });

    it('creatives synced and assigned appear on MediaBuy.creatives; sync errors name their input field', async () => {
      const sync = (input: Record<string, unknown>) => graphql(gw.url, 'mutation($i: CreativeInput!) { syncCreative(input: $i) { action taskId creative { id name formatType status url assets { kind width height durationMs } assignments { packageId } } } }', { i: input }, buyer);
      const [pkg] = (await read())!.packages as { id: string }[];
      expect(errorOf(await sync({ name: 'Spot', formatId: VIDEO, assetUrl: 'not a url', durationMs: 15000 }))).toMatchObject({ code: 'VALIDATION_ERROR', field: 'assetUrl' });
      expect(errorOf(await sync({ name: 'Spot', formatId: VIDEO, assetUrl: 'https://cdn.acme.example/spot.mp4', durationMs: 60000 }))).toMatchObject({ code: 'VALIDATION_ERROR', field: 'durationMs' });
      expect(errorOf(await sync({ name: 'Spot', formatId: { ...VIDEO, id: 'no_such_format' }, assetUrl: 'https://cdn.acme.example/spot.mp4' }))).toMatchObject({ field: 'formatId' });
      expect(errorOf(await sync({ name: 'Spot', formatId: VIDEO, assetUrl: 'https://cdn.acme.example/spot.mp4', durationMs: 15000, packageIds: ['pkg_nope'] }))).toMatchObject({ code: 'NOT_FOUND', field: 'packageIds[0]' });

      const spot = await sync({ creativeId: 'spot-15', name: 'Spot 15 s', formatId: VIDEO, assetUrl: 'https://cdn.acme.example/spot.mp4', durationMs: 15000, packageIds: [pkg!.id] });
      expect(spot.body.data).toEqual({
        syncCreative: { action: 'created', taskId: null, creative: { id: 'spot-15', name: 'Spot 15 s', formatType: 'video', status: 'approved', url: 'https://cdn.acme.example/spot.mp4', assets: [{ kind: 'video', width: 1920, height: 1080, durationMs: 15000 }], assignments: [{ packageId: pkg!.id }] } },
      });
      const cut = await sync({ creativeId: 'spot-6', name: 'Spot 6 s', formatId: VIDEO, assetUrl: 'https://cdn.acme.example/cut.mp4', durationMs: 6000 });
      expect(cut.body.data!.syncCreative).toMatchObject({ action: 'created', creative: { id: 'spot-6', assignments: [] } });

      const assign = (input: Record<string, unknown>) => graphql(gw.url, 'mutation($i: CreativeAssignmentInput!) { assignCreatives(input: $i) { id assignments { packageId } } }', { i: input }, buyer);
      expect(errorOf(await assign({ creativeIds: ['spot-6'], packageIds: ['pkg_nope'] }))).toMatchObject({ code: 'NOT_FOUND', field: 'packageIds[0]' });
      expect(errorOf(await assign({ creativeIds: ['spot-6', 'nope'], packageIds: [pkg!.id] }))).toMatchObject({ code: 'CREATIVE_NOT_FOUND', field: 'creativeIds[1]' });
      expect((await assign({ creativeIds: ['spot-6'], packageIds: [pkg!.id] })).body.data).toEqual({ assignCreatives: [{ id: 'spot-6', assignments: [{ packageId: pkg!.id }] }] });

      const b = await read();
      expect(b!.packages[0].creativeIds).toEqual(['spot-15', 'spot-6']);
      expect(b!.creatives.map((c: { id: string; status: string; format: { id: string } }) => [c.id, c.status, c.format.id])).toEqual([
        ['spot-15', 'approved', 'video_16x9_30s'],
        ['spot-6', 'approved', 'video_16x9_30s'],
      ]);

      // The library a page at a time, by id.
      const page = async (after?: string) => (await graphql(gw.url, 'query($a: String) { creativesConnection(first: 1, after: $a) { edges { node { id } } pageInfo { hasNextPage endCursor } } }', { a: after }, buyer)).body.data!.creativesConnection;
      const first = await page();
      expect(first.edges).toEqual([{ node: { id: 'spot-15' } }]);
      const second = await page(first.pageInfo.endCursor);
      expect(second).toEqual({ edges: [{ node: { id: 'spot-6' } }], pageInfo: { hasNextPage: false, endCursor: expect.any(String) } });
      expect(errorOf(await graphql(gw.url, '{ creativesConnection(after: "AA") { edges { cursor } } }', undefined, buyer))).toMatchObject({ code: 'VALIDATION_ERROR', field: 'after' });
    });

    it('the buy’s webhook activity: its task’s webhooks delivered to the buyer’s own receiver, which lists them typed', async () => {
      const activity = await eventually(async () => {
        const fires = ((await read())!.webhookActivity as Record<string, any>[]).filter((f) => f.state === 'delivered');
        return fires.length >= 2 ? fires : undefined;
      }, 20_000, 'delivered webhooks');
      for (const fire of activity!) {
        expect(fire).toMatchObject({ notificationType: 'task_status', taskId: buy.task_id, url: expect.stringContaining(endpointId) });
        expect(fire.attempts[0]).toMatchObject({ attempt: 1, outcome: 'success', httpStatus: expect.any(Number), durationMs: expect.any(Number), completedAt: expect.any(String) });
        expect(fire.attempts[0].httpStatus).toBeGreaterThanOrEqual(200);
        expect(fire.attempts[0].httpStatus).toBeLessThan(300);
      }
      const received = await eventually(async () => {
        const r = await graphql(gw.url, 'query($t: String) { receivedWebhooks(taskId: $t) { id endpointId taskId taskType status receivedAt } }', { t: buy.task_id }, buyer);
        const rows = r.body.data?.receivedWebhooks as Record<string, any>[] | undefined;
        return rows && rows.length >= 2 ? rows : undefined;
      }, 20_000, 'received webhooks');
      expect(received!.every((w) => w.endpointId === endpointId && w.taskId === buy.task_id && w.taskType === 'create_media_buy')).toBe(true);
      expect(received!.map((w) => w.status)).toContain('completed');
      expect(errorOf(await graphql(gw.url, '{ receivedWebhooks(limit: 501) { id } }', undefined, buyer))).toMatchObject({ code: 'VALIDATION_ERROR', field: 'limit' });
    }, 30_000);

    it('a receiver that answers 503: the failed attempt with its status code, and the retry it waits for', async () => {
      const down = await startReceiver(() => 503);
      try {
        const failing = await task(
          'create_media_buy',
          {
            buyer_ref: `actions-down-${randomBytes(4).toString('hex')}`,
            brand_manifest: { name: 'Acme', url: 'https://acme.example' },
            packages: [{ product_id: 'premium_ctv_guaranteed', pricing_option_id: 'cpm_usd_guaranteed', budget: 5000 }],
            start_time: { type: 'asap' },
            end_time: future(14),
            push_notification_config: { url: `${down.origin}/hooks`, operation_id: 'op-down' },
          },
          buyer,
        );
        await graphql(gw.url, 'mutation($t: ID!) { approveTask(taskId: $t) }', { t: failing.task_id }, seller);
        const fire = await eventually(async () => {
          const r = await graphql(gw.url, 'query($id: ID!) { mediaBuy(id: $id) { webhookActivity { state attempts { attempt outcome httpStatus durationMs } } } }', { id: failing.media_buy_id }, buyer);
          return (r.body.data?.mediaBuy?.webhookActivity as Record<string, any>[] | undefined)?.find((f) => f.attempts[0].outcome === 'failed');
        }, 20_000, 'a failed attempt');
        expect(fire!.attempts[0]).toMatchObject({ attempt: 1, outcome: 'failed', httpStatus: 503, durationMs: expect.any(Number) });
        // A 503 is transient: the next attempt waits its turn (pending), unless the fire already gave up.
        if (fire!.state === 'retrying') expect(fire!.attempts.at(-1)).toMatchObject({ outcome: 'pending', httpStatus: null });
        else expect(fire!.state).toBe('gave_up');
      } finally {
        await down.close();
      }
    }, 30_000);

    it('another buyer sees none of it and can change none of it', async () => {
      expect(await read(other)).toBeNull();
      expect(errorOf(await graphql(gw.url, 'mutation($id: ID!) { pauseMediaBuy(id: $id) { id } }', { id: buy.media_buy_id }, other))).toMatchObject({ code: 'MEDIA_BUY_NOT_FOUND', field: 'id' });
      expect(errorOf(await graphql(gw.url, 'mutation($i: MediaBuyBudgetInput!) { changeMediaBuyBudget(input: $i) { id } }', { i: { mediaBuyId: buy.media_buy_id, endTime: future(30) } }, other))).toMatchObject({ code: 'MEDIA_BUY_NOT_FOUND', field: 'mediaBuyId' });
      expect(errorOf(await graphql(gw.url, 'mutation { assignCreatives(input: {creativeIds: ["spot-15"], packageIds: ["x"]}) { id } }', undefined, other))).toMatchObject({ code: 'CREATIVE_NOT_FOUND', field: 'creativeIds[0]' });
      expect((await graphql(gw.url, '{ creativesConnection { edges { node { id } } } receivedWebhooks { id } }', undefined, other)).body.data).toEqual({ creativesConnection: { edges: [] }, receivedWebhooks: [] });
      // The seller, who operates the buy, reads it with its creatives and webhooks but may not act as the buyer.
      const seen = await read(seller);
      expect(seen!.creatives.length).toBe(2);
      expect(seen!.webhookActivity.length).toBeGreaterThan(0);
      expect(errorOf(await graphql(gw.url, 'mutation($id: ID!) { pauseMediaBuy(id: $id) { id } }', { id: buy.media_buy_id }, seller))).toMatchObject({ code: 'UNAUTHENTICATED' });
    });

    it('cancel needs a reason, which the timeline keeps; a canceled buy resumes no more', async () => {
      const cancel = (reason: string) => graphql(gw.url, 'mutation($id: ID!, $r: String!) { cancelMediaBuy(id: $id, reason: $r) { status } }', { id: buy.media_buy_id, r: reason }, buyer);
      expect(errorOf(await cancel('  '))).toMatchObject({ code: 'VALIDATION_ERROR', field: 'reason' });
      expect((await cancel('campaign moved to Q1')).body.data).toEqual({ cancelMediaBuy: { status: 'canceled' } });
      expect((await read())!.timeline.at(-1)).toEqual({ event: 'MediaBuyStatusChanged', status: 'canceled', changed: [], note: 'campaign moved to Q1' });
      expect(errorOf(await graphql(gw.url, 'mutation($id: ID!) { resumeMediaBuy(id: $id) { id } }', { id: buy.media_buy_id }, buyer))).toMatchObject({ code: 'INVALID_STATE', field: 'id' });
    });
  });
}

buyerActionsSuite('SQLite', async () => ({ env: SELF_RECEIVING, cleanup: async () => {} }));

describeWith('PostgreSQL', !!PG_ADMIN_URL, 'server mode', () => {
  buyerActionsSuite('PostgreSQL', async () => {
    const db = await createTestDatabase();
    return { env: { ...SELF_RECEIVING, EVENT_STORE_URL: db.url }, cleanup: db.drop };
  });
});

describe('syncCreative when the seller reviews creatives (APPROVAL_POLICY=manual)', () => {
  let gw: Gateway;
  afterAll(async () => {
    await gw?.stop();
  });

  it('answers pending with the task, and the creative once the seller approves it', async () => {
    gw = await startTestGateway({ APPROVAL_POLICY: 'manual' });
    const now = { now: new Date().toISOString() };
    const buyer = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, now)).key;
    const seller = (await issueApiKey(gw.app.store, { org: 'publisher', role: 'seller' }, now)).key;
    await eventually(async () => (await graphql(gw.url, '{ viewer { role } }', undefined, seller)).body.data?.viewer?.role === 'seller', 20_000, 'the keys');
    const input = { creativeId: 'banner-1', name: 'Banner', formatId: { agentUrl: 'https://creative.adcontextprotocol.org', id: 'display_300x250' }, assetUrl: 'https://cdn.acme.example/banner.png' };
    const synced = await graphql(gw.url, 'mutation($i: CreativeInput!) { syncCreative(input: $i) { action taskId creative { id } } }', { i: input }, buyer);
    expect(synced.body.data!.syncCreative).toEqual({ action: 'pending', taskId: expect.stringMatching(/^task_/), creative: null });
    const library = async () => (await graphql(gw.url, '{ creativesConnection { edges { node { id status assets { kind width height } } } } }', undefined, buyer)).body.data!.creativesConnection.edges;
    expect(await library()).toEqual([]);
    expect((await graphql(gw.url, 'mutation($t: ID!) { approveTask(taskId: $t) }', { t: synced.body.data!.syncCreative.taskId }, seller)).body.data).toEqual({ approveTask: 'completed' });
    expect(await library()).toEqual([{ node: { id: 'banner-1', status: 'approved', assets: [{ kind: 'image', width: 300, height: 250 }] } }]);
  }, 30_000);
});
