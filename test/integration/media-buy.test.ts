import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { issueApiKey } from '../../src/application/api-keys';
import { KAFKA_BROKERS, PG_ADMIN_URL, createTestDatabase, describeWith, eventually } from '../support/infra';
import { graphql, startTestGateway } from '../support/gateway';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;

const future = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();

function mediaBuySuite(name: string, env: () => Promise<{ env: Record<string, string>; cleanup: () => Promise<void> }>): void {
  describe(`create_media_buy, approval and isolation (${name})`, () => {
    let gw: Gateway;
    let cleanup: () => Promise<void>;
    let buyer: string;
    let other: string;
    let seller: string;

    const task = async (taskName: string, body: unknown, key = buyer) => {
      const res = await fetch(`${gw.url}/api/tasks/${taskName}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Record<string, any> };
    };
    const eventCount = async () => (await gw.app.store.readAll({ limit: 100_000 })).length;
    const buy = (overrides: Record<string, unknown> = {}) => ({
      buyer_ref: `campaign-${randomBytes(4).toString('hex')}`,
      brand_manifest: { name: 'Acme', url: 'https://acme.example', colors: { primary: '#ff0000' } },
      packages: [
        { buyer_ref: 'news', product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 5000 },
        { buyer_ref: 'sports', product_id: 'sports_video_auction', pricing_option_id: 'cpm_auction_usd', budget: 3000, bid_price: 14 },
      ],
      start_time: { type: 'asap' },
      end_time: future(14),
      ...overrides,
    });

    beforeAll(async () => {
      const e = await env();
      cleanup = e.cleanup;
      gw = await startTestGateway(e.env);
      const ctx = { now: new Date().toISOString() };
      buyer = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, ctx)).key;
      other = (await issueApiKey(gw.app.store, { org: 'globex', role: 'buyer' }, ctx)).key;
      seller = (await issueApiKey(gw.app.store, { org: 'publisher', role: 'seller' }, ctx)).key;
      await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 20_000, 'readyz');
    }, 60_000);
    afterAll(async () => {
      await gw.stop();
      await cleanup();
    });

    it('creates an active buy synchronously for non-guaranteed products, and lists it', async () => {
      const request = buy();
      const r = await task('create_media_buy', request);
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ buyer_ref: request.buyer_ref, status: 'active', currency: 'USD', total_budget: 8000 });
      expect(r.body).not.toHaveProperty('task_id');
      expect(r.body.media_buy_id).toMatch(/^mb_[\w-]{22}$/);
      expect(r.body.packages.map((p: { buyer_ref: string }) => p.buyer_ref)).toEqual(['news', 'sports']);
      expect(new Set(r.body.packages.map((p: { package_id: string }) => p.package_id)).size).toBe(2);

      const listed = await eventually(async () => {
        const l = await task('get_media_buys', { media_buy_ids: [r.body.media_buy_id], include_webhook_activity: true });
        return l.status === 200 && l.body.media_buys.length === 1 ? l : undefined;
      }, 10_000, 'projection');
      expect(listed!.body.media_buys[0]).toMatchObject({ media_buy_id: r.body.media_buy_id, status: 'active', impairments: [], webhook_activity: [] });
      expect(listed!.body.media_buys[0].packages).toEqual(r.body.packages);
    });

    it('reads its own writes: a created, updated or synced resource is visible as soon as the call answers', async () => {
      for (let i = 0; i < 5; i++) {
        const created = (await task('create_media_buy', buy())).body;
        expect((await task('get_media_buys', { media_buy_id: created.media_buy_id })).body.media_buys[0].status).toBe('active');
        await task('update_media_buy', { media_buy_id: created.media_buy_id, updates: { status: 'pause' } });
        expect((await task('get_media_buys', { media_buy_id: created.media_buy_id })).body.media_buys[0].status).toBe('paused');
      }
    });

    it('serves buys by id from its cache exactly as the SQL path would: owner scoping, filters, order, paging, fresh after every change', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 4; i++) ids.push((await task('create_media_buy', buy())).body.media_buy_id);
      const sorted = [...ids].sort();
      // Half of them cached by an earlier read, half not: the answer must not depend on which.
      await task('get_media_buys', { media_buy_ids: [sorted[0], sorted[2]] });
      const all = await task('get_media_buys', { media_buy_ids: [...ids].reverse() });
      expect(all.body.media_buys.map((b: { media_buy_id: string }) => b.media_buy_id)).toEqual(sorted);
      const page1 = await task('get_media_buys', { media_buy_ids: ids, pagination: { max_results: 3 } });
      expect(page1.body.media_buys.map((b: { media_buy_id: string }) => b.media_buy_id)).toEqual(sorted.slice(0, 3));
      expect(page1.body.pagination).toEqual({ has_more: true, cursor: sorted[2] });
      const page2 = await task('get_media_buys', { media_buy_ids: ids, pagination: { max_results: 3, cursor: page1.body.pagination.cursor } });
      expect(page2.body.media_buys.map((b: { media_buy_id: string }) => b.media_buy_id)).toEqual(sorted.slice(3));
      expect(page2.body.pagination).toEqual({ has_more: false });

      // Another buyer's cached buy reads as absent, never as forbidden.
      const theirs = await task('get_media_buys', { media_buy_id: sorted[0] }, other);
      expect(theirs.status).toBe(404);
      expect(theirs.body.error).toMatchObject({ code: 'MEDIA_BUY_NOT_FOUND', field: 'media_buy_id' });
      expect((await task('get_media_buys', { media_buy_ids: [sorted[0], sorted[1]] }, other)).body.media_buys).toEqual([]);

      // Every change shows on the next read, though the buy was cached.
      await task('update_media_buy', { media_buy_id: sorted[0], updates: { status: 'pause' } });
      const budget = await task('update_media_buy', { media_buy_id: sorted[2], updates: { budget_change: 500 } });
      expect(budget.status).toBe(200);
      const after = await task('get_media_buys', { media_buy_ids: ids, status_filter: ['paused'] });
      expect(after.body.media_buys.map((b: { media_buy_id: string; status: string }) => [b.media_buy_id, b.status])).toEqual([[sorted[0], 'paused']]);
      const changed = await task('get_media_buys', { media_buy_id: sorted[2] });
      expect(changed.body.media_buys[0]).toMatchObject({ total_budget: budget.body.total_budget, revision: budget.body.revision });
    });

    it('keeps buyer_ref unique per buyer (another buyer may reuse it)', async () => {
      const request = buy();
      expect((await task('create_media_buy', request)).status).toBe(200);
      const again = await task('create_media_buy', request);
      expect(again.status).toBe(409);
      expect(again.body.error).toMatchObject({ code: 'CONFLICT', field: 'buyer_ref' });
      expect((await task('create_media_buy', request, other)).status).toBe(200);
    });

    it('rejects a bad package with its field path and appends nothing', async () => {
      const cases: [Record<string, unknown>, number, string, string][] = [
        [{ packages: [buy().packages[0], { product_id: 'nope', pricing_option_id: 'x', budget: 1 }] }, 404, 'PRODUCT_NOT_FOUND', 'packages[1].product_id'],
        [{ packages: [{ ...buy().packages[1], bid_price: 5 }] }, 422, 'VALIDATION_ERROR', 'packages[0].bid_price'],
        [{ packages: [{ ...buy().packages[1], bid_price: undefined }] }, 400, 'INVALID_REQUEST', 'packages[0].bid_price'],
        [{ packages: [{ ...buy().packages[0], budget: 0 }] }, 422, 'VALIDATION_ERROR', 'packages[0].budget'],
        [{ packages: [{ ...buy().packages[0], pricing_option_id: 'cpm_eur' }] }, 422, 'VALIDATION_ERROR', 'packages[0].pricing_option_id'],
        [{ packages: [] }, 422, 'VALIDATION_ERROR', 'packages'],
        [{ packages: undefined }, 400, 'INVALID_REQUEST', 'packages'],
        [{ brand_manifest: undefined }, 400, 'INVALID_REQUEST', 'brand_manifest'],
        [{ start_time: { type: 'scheduled', datetime: future(3) }, end_time: future(2) }, 422, 'VALIDATION_ERROR', 'end_time'],
        [{ start_time: { type: 'scheduled', datetime: 'tomorrow' } }, 422, 'VALIDATION_ERROR', 'start_time.datetime'],
        [{ push_notification_config: { url: 'https://buyer.example/hook', operation_id: 'op-1', authentication: { schemes: ['HMAC-SHA256'], credentials: 'short' } } }, 422, 'VALIDATION_ERROR', 'push_notification_config.authentication.credentials'],
      ];
      const before = await eventCount();
      for (const [overrides, status, code, field] of cases) {
        const r = await task('create_media_buy', buy(overrides));
        expect({ overrides, status: r.status, code: r.body.error?.code, field: r.body.error?.field }).toEqual({ overrides, status, code, field });
      }
      expect(await eventCount()).toBe(before);
    });

    it('replays an idempotent retry and refuses the same key with another payload', async () => {
      const key = `idem-${randomBytes(8).toString('hex')}`;
      const request = buy({ idempotency_key: key });
      const first = await task('create_media_buy', request);
      const second = await task('create_media_buy', request);
      expect(second.status).toBe(200);
      expect(second.body).toEqual({ ...first.body, replayed: true });
      const changed = await task('create_media_buy', { ...request, end_time: future(20) });
      expect(changed.status).toBe(409);
      expect(changed.body.error).toMatchObject({ code: 'IDEMPOTENCY_CONFLICT', field: 'idempotency_key' });
    });

    it('waits for approval: pending with a task_id, then approved → active; polling sees each status', async () => {
      const r = await task('create_media_buy', buy({
        packages: [{ product_id: 'premium_ctv_guaranteed', pricing_option_id: 'cpm_usd_guaranteed', budget: 20000 }],
        push_notification_config: { url: 'https://buyer.example/webhooks/create_media_buy/agent/abc', operation_id: 'op-123' },
      }));
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ status: 'pending' });
      const taskId = r.body.task_id as string;
      expect(taskId).toMatch(/^task_/);

      const poll = async (status: string) =>
        eventually(async () => {
          const t = await task('tasks_get', { task_id: taskId });
          return t.body.status === status ? t.body : undefined;
        }, 10_000, `task ${status}`);
      expect(await poll('submitted')).toMatchObject({ task_type: 'create_media_buy' });

      const denied = await graphql(gw.url, 'mutation($t: ID!) { approveTask(taskId: $t) }', { t: taskId }, buyer);
      expect(denied.body.errors![0]!.extensions).toMatchObject({ code: 'FORBIDDEN' });

      const approved = await graphql(gw.url, 'mutation($t: ID!) { approveTask(taskId: $t, note: "IO signed") }', { t: taskId }, seller);
      expect(approved.body.data).toEqual({ approveTask: 'completed' });
      const done = await poll('completed');
      expect(done!.history.map((h: { status: string }) => h.status)).toEqual(['submitted', 'working', 'completed']);
      expect(done!.result).toMatchObject({ media_buy_id: r.body.media_buy_id, status: 'active' });
      await eventually(async () => (await task('get_media_buys', { media_buy_id: r.body.media_buy_id })).body.media_buys?.[0]?.status === 'active', 10_000, 'buy active');

      const twice = await graphql(gw.url, 'mutation($t: ID!) { approveTask(taskId: $t) }', { t: taskId }, seller);
      expect(twice.body.errors![0]!.extensions).toMatchObject({ code: 'INVALID_STATE' });
    });

    it('rejection and input-required reach the buyer through polling and GraphQL', async () => {
      const mk = async () => (await task('create_media_buy', buy({ packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 60000 }] }))).body;
      const a = await mk();
      expect(a.status).toBe('pending'); // over the catalog's 50,000 budget threshold
      await eventually(async () => (await task('tasks_get', { task_id: a.task_id })).status === 200, 10_000, 'task visible');
      expect((await graphql(gw.url, 'mutation($t: ID!) { requestInput(taskId: $t, reason: "Need the signed IO") }', { t: a.task_id }, seller)).body.data).toEqual({ requestInput: 'input-required' });
      const waiting = await eventually(async () => {
        const t = await graphql(gw.url, 'query($t: ID!) { task(taskId: $t) }', { t: a.task_id }, buyer);
        return t.body.data?.task?.status === 'input-required' ? t.body.data.task : undefined;
      }, 10_000, 'input-required');
      expect(waiting.result).toMatchObject({ reason: 'APPROVAL_REQUIRED', message: 'Need the signed IO' });
      expect((await graphql(gw.url, 'mutation($t: ID!) { rejectTask(taskId: $t, reason: "Budget too high for Q4") }', { t: a.task_id }, seller)).body.data).toEqual({ rejectTask: 'rejected' });
      await eventually(async () => (await task('tasks_get', { task_id: a.task_id })).body.status === 'rejected', 10_000, 'rejected');
      await eventually(async () => (await task('get_media_buys', { media_buy_id: a.media_buy_id })).body.media_buys?.[0]?.status === 'rejected', 10_000, 'buy rejected');
    });

    it('isolates buyers: another buyer’s buy or task answers 404, never 403', async () => {
      const mine = (await task('create_media_buy', buy({ packages: [{ product_id: 'premium_ctv_guaranteed', pricing_option_id: 'cpm_usd_guaranteed', budget: 1000 }] }))).body;
      await eventually(async () => (await task('tasks_get', { task_id: mine.task_id })).status === 200, 10_000, 'visible to owner');
      const theirs = await task('get_media_buys', { media_buy_id: mine.media_buy_id }, other);
      expect(theirs.status).toBe(404);
      expect(theirs.body.error).toMatchObject({ code: 'MEDIA_BUY_NOT_FOUND', field: 'media_buy_id' });
      expect((await task('tasks_get', { task_id: mine.task_id }, other)).status).toBe(404);
      const all = await task('get_media_buys', {}, other);
      expect(all.body.media_buys.every((b: { media_buy_id: string }) => b.media_buy_id !== mine.media_buy_id)).toBe(true);
    });

    it('updates with PATCH semantics and enforces the lifecycle, naming the current status', async () => {
      const created = (await task('create_media_buy', buy())).body;
      const [news, sports] = created.packages;
      const up = async (updates: Record<string, unknown>, key = buyer) => task('update_media_buy', { media_buy_id: created.media_buy_id, updates }, key);

      const budget = await up({ budget_change: 2000, packages: [{ package_id: sports.package_id, bid_price: 15 }] });
      expect(budget.status).toBe(200);
      expect(budget.body).toMatchObject({ total_budget: 10000, revision: 2, changed: ['packages', 'budget'] });
      expect(budget.body.packages.map((p: { budget: number }) => p.budget)).toEqual([6250, 3750]);
      expect(budget.body.packages[1].bid_price).toBe(15);

      expect((await up({ status: 'pause' })).body).toMatchObject({ status: 'paused', revision: 3 });
      const again = await up({ status: 'pause' });
      expect(again.status).toBe(422);
      expect(again.body.error).toMatchObject({ code: 'INVALID_STATE', field: 'updates.status' });
      expect(again.body.error.message).toContain('paused');
      expect((await up({ status: 'resume' })).body.status).toBe('active');
      expect((await up({ status: 'cancel', reason: 'campaign pulled' })).body.status).toBe('canceled');
      const late = await up({ end_time: future(30) });
      expect(late.status).toBe(422);
      expect(late.body.error).toMatchObject({ code: 'INVALID_STATE', field: 'status' });
      expect(late.body.error.message).toBe('cannot update a media buy that is canceled');

      const listed = await eventually(async () => {
        const l = await task('get_media_buys', { media_buy_id: created.media_buy_id });
        return l.body.media_buys?.[0]?.status === 'canceled' ? l.body.media_buys[0] : undefined;
      }, 10_000, 'canceled in the read model');
      expect(listed).toMatchObject({ revision: 5, total_budget: 10000 });
      expect(news.package_id).not.toBe(sports.package_id);
    });

    it('validates updates with field paths; another buyer’s buy is 404', async () => {
      const created = (await task('create_media_buy', buy())).body;
      const cases: [Record<string, unknown>, number, string, string][] = [
        [{ media_buy_id: created.media_buy_id }, 400, 'INVALID_REQUEST', 'updates'],
        [{ media_buy_id: created.media_buy_id, updates: {} }, 400, 'INVALID_REQUEST', 'updates'],
        [{ media_buy_id: created.media_buy_id, updates: { budget_change: -9000 } }, 422, 'VALIDATION_ERROR', 'updates.budget_change'],
        [{ media_buy_id: created.media_buy_id, updates: { status: 'explode' } }, 422, 'VALIDATION_ERROR', 'updates.status'],
        [{ media_buy_id: created.media_buy_id, updates: { end_time: '2001-01-01T00:00:00Z' } }, 422, 'VALIDATION_ERROR', 'updates.end_time'],
        [{ media_buy_id: created.media_buy_id, updates: { packages: [{ package_id: 'nope', budget: 5 }] } }, 404, 'NOT_FOUND', 'updates.packages[0].package_id'],
        [{ media_buy_id: created.media_buy_id, updates: { packages: [{ package_id: created.packages[0].package_id, bid_price: 3 }] } }, 422, 'VALIDATION_ERROR', 'updates.packages[0].bid_price'],
        [{ media_buy_id: 'mb_unknown', updates: { status: 'pause' } }, 404, 'MEDIA_BUY_NOT_FOUND', 'media_buy_id'],
      ];
      for (const [body, status, code, field] of cases) {
        const r = await task('update_media_buy', body);
        expect({ body, status: r.status, code: r.body.error?.code, field: r.body.error?.field }).toEqual({ body, status, code, field });
      }
      const theirs = await task('update_media_buy', { media_buy_id: created.media_buy_id, updates: { status: 'pause' } }, other);
      expect(theirs.status).toBe(404);
    });

    it('syncs creatives: per-creative actions, format checks against assigned packages, dry run, delete_missing, list', async () => {
      const created = (await task('create_media_buy', buy())).body;
      const [news, sports] = created.packages;
      const agent = 'https://creative.adcontextprotocol.org';
      const video = { creative_id: 'vid-1', name: 'Spot 30s', format_id: { agent_url: agent, id: 'video_16x9_30s' }, assets: { video: { url: 'https://cdn.acme.example/spot.mp4', width: 1920, height: 1080, duration_ms: 30000 } } };
      const banner = { creative_id: 'ban-1', name: 'MPU', format_id: { agent_url: agent, id: 'display_300x250' }, assets: { image: { url: 'https://cdn.acme.example/mpu.png', width: 300, height: 250 } } };
      const tooLong = { ...video, creative_id: 'vid-2', assets: { video: { ...video.assets.video, duration_ms: 45000 } } };

      const preview = await task('sync_creatives', { creatives: [video, banner], dry_run: true });
      expect(preview.body).toMatchObject({ dry_run: true, creatives: [{ creative_id: 'vid-1', action: 'created' }, { creative_id: 'ban-1', action: 'created' }] });
      expect((await task('list_creatives', {})).body.query_summary.total_matching).toBe(0);

      const r = await task('sync_creatives', {
        creatives: [video, banner, tooLong, { creative_id: 'x', name: 'bad', format_id: { agent_url: agent, id: 'nope' }, assets: {} }],
        assignments: { 'vid-1': [sports.package_id], 'ban-1': [news.package_id, sports.package_id] },
      });
      expect(r.status).toBe(200);
      const by = Object.fromEntries(r.body.creatives.map((c: { creative_id: string }) => [c.creative_id, c]));
      expect(by['vid-1']).toMatchObject({ action: 'created', status: 'approved', assigned_to: [sports.package_id] });
      expect(by['ban-1'].action).toBe('failed');
      expect(by['ban-1'].errors).toEqual([{ code: 'UNSUPPORTED_FEATURE', message: 'product sports_video_auction does not accept format display_300x250', field: 'assignments.ban-1[1]' }]);
      expect(by['vid-2'].errors[0]).toMatchObject({ field: 'creatives[2].assets.video.duration_ms' });
      expect(by['x'].errors[0]).toMatchObject({ field: 'creatives[3].format_id' });

      const again = await task('sync_creatives', { creatives: [video, { ...banner }], assignments: { 'ban-1': [news.package_id] } });
      expect(again.body.creatives.map((c: { action: string }) => c.action)).toEqual(['unchanged', 'created']);
      const renamed = await task('sync_creatives', { creatives: [{ ...video, name: 'Spot 30s v2' }] });
      expect(renamed.body.creatives[0].action).toBe('updated');

      await eventually(async () => (await task('list_creatives', {})).body.query_summary?.total_matching === 2, 10_000, 'two creatives listed');
      const videos = await task('list_creatives', { filters: { format_types: ['video'] } });
      expect(videos.body.creatives.map((c: { creative_id: string; name: string }) => [c.creative_id, c.name])).toEqual([['vid-1', 'Spot 30s v2']]);
      expect(videos.body.creatives[0].assignments).toEqual({ assignment_count: 1, assigned_packages: [{ package_id: sports.package_id, assigned_date: expect.any(String) }] });
      const page = await task('list_creatives', { limit: 1 });
      expect(page.body.pagination).toEqual({ has_more: true, cursor: 'ban-1' });
      expect((await task('list_creatives', { limit: 1, cursor: 'ban-1' })).body.creatives[0].creative_id).toBe('vid-1');

      const archive = await task('sync_creatives', { creatives: [banner], delete_missing: true });
      expect(archive.body.creatives).toContainEqual({ creative_id: 'vid-1', action: 'archived', status: 'archived' });
      await eventually(async () => (await task('list_creatives', {})).body.query_summary?.total_matching === 1, 10_000, 'archived hidden');
      expect((await task('list_creatives', { filters: { status: ['archived'] } })).body.creatives.map((c: { creative_id: string }) => c.creative_id)).toEqual(['vid-1']);
      // Another buyer's library is separate.
      expect((await task('list_creatives', {}, other)).body.query_summary.total_matching).toBe(0);
      expect((await task('sync_creatives', { creatives: [] })).body.error).toMatchObject({ code: 'VALIDATION_ERROR', field: 'creatives' });
    });

    it('simulates delivery: after a day, totals = Σ by_package = Σ daily series; spend never exceeds budget; the flight completes', async () => {
      const created = (await task('create_media_buy', buy({ end_time: future(3) }))).body;
      await eventually(async () => (await task('get_media_buys', { media_buy_id: created.media_buy_id })).body.media_buys?.[0]?.status === 'active', 10_000, 'active');
      const advance = (seconds: number, key = seller) => graphql(gw.url, 'mutation($s: Int!) { advanceClock(seconds: $s) }', { s: seconds }, key);
      expect((await advance(3600, buyer)).body.errors![0]!.extensions).toMatchObject({ code: 'FORBIDDEN' });
      expect((await advance(0)).body.errors![0]!.extensions).toMatchObject({ code: 'VALIDATION_ERROR', field: 'seconds' });
      expect((await advance(86_400)).body.errors).toBeUndefined();

      const report = async (granularity?: string) => (await task('get_media_buy_delivery', { media_buy_id: created.media_buy_id, ...(granularity ? { granularity } : {}) })).body;
      const day = await eventually(async () => {
        const r = await report('daily');
        return r.delivery?.impressions > 0 ? r : undefined;
      }, 10_000, 'delivery after a day');
      const sum = (xs: { impressions: number; clicks: number; spend: number }[]) => ({
        impressions: xs.reduce((s, x) => s + x.impressions, 0),
        clicks: xs.reduce((s, x) => s + x.clicks, 0),
        spend: Math.round(xs.reduce((s, x) => s + x.spend, 0) * 100) / 100,
      });
      const totals = { impressions: day!.delivery.impressions, clicks: day!.delivery.clicks, spend: day!.delivery.spend };
      expect(sum(day!.by_package)).toEqual(totals);
      expect(sum(day!.timeseries)).toEqual(totals);
      expect(day!.timeseries.length).toBeGreaterThanOrEqual(1);
      expect(day!.timeseries.length).toBeLessThanOrEqual(2);
      // Even pacing over a 3-day flight: about a third of each budget after one day.
      for (const p of day!.by_package) {
        expect(p.spend).toBeGreaterThan(p.budget * 0.25);
        expect(p.spend).toBeLessThan(p.budget * 0.4);
        expect(p.ctr).toBeGreaterThan(0);
      }
      const hourly = await report('hourly');
      expect(hourly.timeseries).toHaveLength(24);
      expect(sum(hourly.timeseries)).toEqual(totals);

      // Past the end of the flight: budgets are spent, never exceeded, and the buy completes.
      await advance(5 * 86_400);
      const final = await eventually(async () => {
        const r = await report();
        return r.media_buy_deliveries?.[0]?.status === 'completed' && r.delivery.spend >= 7999 ? r : undefined;
      }, 10_000, 'completed');
      for (const p of final!.by_package) expect(p.spend).toBeLessThanOrEqual(p.budget);
      expect(final!.delivery.spend).toBeLessThanOrEqual(8000);

      expect((await task('get_media_buy_delivery', { media_buy_id: created.media_buy_id }, other)).status).toBe(404);
      const bad = await task('get_media_buy_delivery', { media_buy_id: created.media_buy_id, date_range: { start: '2027-02-01', end: '2027-01-01' } });
      expect(bad.body.error).toMatchObject({ code: 'VALIDATION_ERROR', field: 'date_range.start' });
      expect((await task('get_media_buy_delivery', {})).body.error).toMatchObject({ code: 'INVALID_REQUEST', field: 'media_buy_id' });
    });

    it('runs the spec flow over REST and over GraphQL: products → formats → create → creatives → delivery', async () => {
      const agent = 'https://creative.adcontextprotocol.org';
      const rest = async (name: string, body: unknown) => {
        const r = await task(name, body);
        expect({ name, status: r.status }).toEqual({ name, status: 200 });
        return r.body;
      };
      const gql = async (field: string, body: unknown, mutation = false) => {
        const r = await graphql(gw.url, `${mutation ? 'mutation' : 'query'}($r: JSONObject!) { ${field}(request: $r) }`, { r: body }, buyer);
        expect(r.body.errors).toBeUndefined();
        return r.body.data![field];
      };
      const bindings: [string, (name: string, body: Record<string, unknown>) => Promise<Record<string, any>>][] = [
        ['REST', rest],
        [
          'GraphQL',
          async (name, body) => {
            switch (name) {
              case 'get_products': {
                const r = await graphql(gw.url, 'query($b: String) { products(brief: $b) { productId pricingOptions { pricingOptionId } } }', { b: body.brief }, buyer);
                return { products: r.body.data!.products.map((p: any) => ({ product_id: p.productId, pricing_options: p.pricingOptions.map((o: any) => ({ pricing_option_id: o.pricingOptionId })) })) };
              }
              case 'list_creative_formats': {
                const r = await graphql(gw.url, '{ creativeFormats(formatTypes: ["video"]) { formatId { agentUrl id } } }', undefined, buyer);
                return { formats: r.body.data!.creativeFormats.map((f: any) => ({ format_id: { agent_url: f.formatId.agentUrl, id: f.formatId.id } })) };
              }
              case 'create_media_buy':
                return gql('createMediaBuy', body, true);
              case 'sync_creatives':
                return gql('syncCreatives', body, true);
              case 'get_media_buy_delivery':
                return gql('mediaBuyDelivery', body);
              default:
                throw new Error(name);
            }
          },
        ],
      ];
      for (const [binding, call] of bindings) {
        const products = (await call('get_products', { brief: 'sports highlights video', brand_manifest: { url: 'https://acme.example' } })).products;
        const chosen = products.find((p: { product_id: string }) => p.product_id === 'sports_video_auction');
        expect(chosen).toBeDefined();
        const formats = (await call('list_creative_formats', { format_types: ['video'] })).formats;
        const created = await call('create_media_buy', {
          buyer_ref: `flow-${binding}-${randomBytes(3).toString('hex')}`,
          brand_manifest: { url: 'https://acme.example' },
          packages: [{ product_id: chosen.product_id, pricing_option_id: chosen.pricing_options[0].pricing_option_id, budget: 2400, bid_price: 13 }],
          start_time: { type: 'asap' },
          end_time: future(10),
        });
        expect(created.status).toBe('active');
        const synced = await call('sync_creatives', {
          creatives: [{ creative_id: `flow-${binding}`, name: 'Flow spot', format_id: formats[0].format_id, assets: { video: { url: 'https://cdn.acme.example/f.mp4', width: 1920, height: 1080, duration_ms: 15000 } } }],
          assignments: { [`flow-${binding}`]: [created.packages[0].package_id] },
        });
        expect(synced.creatives[0]).toMatchObject({ action: 'created', assigned_to: [created.packages[0].package_id] });
        await eventually(async () => (await task('get_media_buys', { media_buy_id: created.media_buy_id })).body.media_buys?.[0]?.status === 'active', 10_000, 'active');
        await graphql(gw.url, 'mutation { advanceClock(seconds: 86400) }', undefined, seller);
        const delivered = await eventually(async () => {
          const d = await call('get_media_buy_delivery', { media_buy_id: created.media_buy_id, granularity: 'daily' });
          return d.delivery.impressions > 0 ? d : undefined;
        }, 10_000, `${binding} delivery`);
        expect(delivered!.by_package[0].package_id).toBe(created.packages[0].package_id);
        expect(delivered!.delivery.spend).toBeLessThanOrEqual(2400);
      }
    });

    it('creates over GraphQL with the same handler', async () => {
      const r = await graphql(gw.url, 'mutation($r: JSONObject!) { createMediaBuy(request: $r) }', { r: buy() }, buyer);
      expect(r.body.data!.createMediaBuy).toMatchObject({ status: 'active', total_budget: 8000 });
      const bad = await graphql(gw.url, 'mutation($r: JSONObject!) { createMediaBuy(request: $r) }', { r: buy({ packages: [{ ...buy().packages[1], bid_price: 1 }] }) }, buyer);
      expect(bad.body.errors![0]!.extensions).toEqual({ code: 'VALIDATION_ERROR', field: 'packages[0].bidPrice' });
    });
  });
}

mediaBuySuite('SQLite', async () => ({ env: {}, cleanup: async () => {} }));

describeWith('PostgreSQL and Kafka', !!PG_ADMIN_URL && !!KAFKA_BROKERS, 'server mode', () => {
  mediaBuySuite('PostgreSQL + Kafka', async () => {
    const db = await createTestDatabase();
    return { env: { EVENT_STORE_URL: db.url, KAFKA_BROKERS: KAFKA_BROKERS!, KAFKA_TOPIC: `adcp.events.mb-${randomBytes(4).toString('hex')}` }, cleanup: db.drop };
  });
});

describe('an idempotent command that failed between writing and recording its answer', () => {
  /** A gateway whose store refuses the next `n` response records (a crash between the two appends). */
  async function gatewayDroppingRecords(policy: string) {
    const gw = await startTestGateway({ APPROVAL_POLICY: policy });
    const key = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
    const store = gw.app.store as { append: typeof gw.app.store.append };
    const append = store.append.bind(store);
    const drop = { next: 0 };
    store.append = async (streamId, events, options) => {
      if (drop.next > 0 && events[0]?.type === 'IdempotentResponseRecorded') {
        drop.next--;
        throw new Error('simulated crash before the response was recorded');
      }
      return append(streamId, events, options);
    };
    const task = async (name: string, body: unknown) => {
      const res = await fetch(`${gw.url}/api/tasks/${name}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify(body) });
      return { status: res.status, body: (await res.json()) as Record<string, any> };
    };
    return { gw, task, drop };
  }
  const order = (ref: string, extra: Record<string, unknown> = {}) => ({
    buyer_ref: ref,
    brand_manifest: { url: 'https://acme.example' },
    packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 1000 }],
    start_time: { type: 'asap' },
    end_time: future(7),
    ...extra,
  });

  it('a retried create answers as the first attempt would have (no 409), and an update is not applied twice', async () => {
    const { gw, task, drop } = await gatewayDroppingRecords('never');
    try {
      const create = order('idem-retry', { idempotency_key: `create-${randomBytes(8).toString('hex')}` });
      drop.next = 1;
      expect((await task('create_media_buy', create)).status).toBe(500);
      const retried = await task('create_media_buy', create);
      expect(retried.status).toBe(200);
      expect(retried.body).toMatchObject({ buyer_ref: 'idem-retry', status: 'active', total_budget: 1000, revision: 1 });
      const id = retried.body.media_buy_id as string;
      const replayed = await task('create_media_buy', create);
      expect(replayed.body).toMatchObject({ media_buy_id: id, replayed: true });
      // The same buyer_ref under another key is still taken.
      expect((await task('create_media_buy', { ...create, idempotency_key: `other-${randomBytes(8).toString('hex')}` })).status).toBe(409);

      const update = { media_buy_id: id, updates: { budget_change: 500 }, idempotency_key: `update-${randomBytes(8).toString('hex')}` };
      drop.next = 1;
      expect((await task('update_media_buy', update)).status).toBe(500);
      const again = await task('update_media_buy', update);
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ media_buy_id: id, total_budget: 1500, revision: 2, changed: ['budget'] });
      const events = await gw.app.store.readStream(`media-buy-${id}`);
      expect(events.filter((e) => e.type === 'MediaBuyUpdated')).toHaveLength(1);
      // A later, different update is applied as usual.
      expect((await task('update_media_buy', { ...update, idempotency_key: `update-${randomBytes(8).toString('hex')}` })).body.total_budget).toBe(2000);
    } finally {
      await gw.stop();
    }
  });

  it('with seller approval, the retry answers pending with the first attempt\'s task', async () => {
    const { gw, task, drop } = await gatewayDroppingRecords('manual');
    try {
      const create = order('idem-manual', { idempotency_key: `create-${randomBytes(8).toString('hex')}` });
      drop.next = 1;
      expect((await task('create_media_buy', create)).status).toBe(500);
      const events = await gw.app.store.readAll({ limit: 10_000 });
      const firstTask = (events.find((e) => e.type === 'TaskSubmitted')!.data as { task_id: string }).task_id;
      const retried = await task('create_media_buy', create);
      expect(retried.status).toBe(200);
      expect(retried.body).toMatchObject({ status: 'pending', task_id: firstTask });
      expect((await gw.app.store.readAll({ limit: 10_000 })).filter((e) => e.type === 'TaskSubmitted')).toHaveLength(1);
    } finally {
      await gw.stop();
    }
  });
});

describeWith('PostgreSQL', Boolean(PG_ADMIN_URL), 'buy ids on a PostgreSQL with a linguistic collation', () => {
  it('orders and pages buys bytewise on every path (the SQL list, the per-buy cache), whatever the database collation', async () => {
    // en-US ICU sorts `mb_a` before `mb_B` and ignores `_`/`-` at first; bytewise order does not.
    const name = `adcp_icu_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'`);
    const u = new URL(PG_ADMIN_URL!);
    u.pathname = `/${name}`;
    const gw = await startTestGateway({ EVENT_STORE_URL: u.toString(), APPROVAL_POLICY: 'never' });
    try {
      const key = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
      const task = async (taskName: string, body: unknown) => {
        const res = await fetch(`${gw.url}/api/tasks/${taskName}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify(body) });
        return (await res.json()) as Record<string, any>;
      };
      await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 20_000, 'readyz');
      const ids: string[] = [];
      for (let i = 0; i < 24; i++) {
        ids.push(
          (await task('create_media_buy', {
            buyer_ref: `icu-${i}`,
            brand_manifest: { url: 'https://acme.example' },
            packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 1000 }],
            start_time: { type: 'asap' },
            end_time: future(7),
          })).media_buy_id,
        );
      }
      const bytewise = [...ids].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
      const idsOf = (r: Record<string, any>) => r.media_buys.map((b: { media_buy_id: string }) => b.media_buy_id);
      expect(idsOf(await task('get_media_buys', { pagination: { max_results: 100 } }))).toEqual(bytewise);
      expect(idsOf(await task('get_media_buys', { media_buy_ids: ids }))).toEqual(bytewise);
      // The same cursor pages the same way on both paths.
      const sqlPage = await task('get_media_buys', { pagination: { max_results: 10, cursor: bytewise[5] } });
      const cachePage = await task('get_media_buys', { media_buy_ids: ids, pagination: { max_results: 10, cursor: bytewise[5] } });
      expect(idsOf(sqlPage)).toEqual(bytewise.slice(6, 16));
      expect(idsOf(cachePage)).toEqual(bytewise.slice(6, 16));
      // An empty id list means no filter, as before the cache.
      expect(idsOf(await task('get_media_buys', { media_buy_ids: [], pagination: { max_results: 100 } }))).toEqual(bytewise);
    } finally {
      await gw.stop();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }
  }, 90_000);
});

describeWith('PostgreSQL', Boolean(PG_ADMIN_URL), 'two gateways on one PostgreSQL', () => {
  it("a buy one gateway has cached shows the other gateway's change within seconds, not at the cache's TTL", async () => {
    const db = await createTestDatabase('adcp_mbcache');
    const a = await startTestGateway({ EVENT_STORE_URL: db.url });
    const b = await startTestGateway({ EVENT_STORE_URL: db.url });
    try {
      const key = (await issueApiKey(a.app.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
      const task = async (gw: Gateway, name: string, body: unknown) => {
        const res = await fetch(`${gw.url}/api/tasks/${name}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify(body) });
        return { status: res.status, body: (await res.json()) as Record<string, any> };
      };
      const created = await eventually(async () => {
        const r = await task(a, 'create_media_buy', {
          buyer_ref: 'two-instances',
          brand_manifest: { url: 'https://acme.example' },
          packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 1000 }],
          start_time: { type: 'asap' },
          end_time: future(7),
        });
        return r.status === 200 || r.status === 409 ? r : undefined;
      }, 20_000, 'gateway a ready');
      expect(created!.status).toBe(200);
      const id = created!.body.media_buy_id as string;
      const statusOn = async (gw: Gateway) => (await task(gw, 'get_media_buys', { media_buy_id: id })).body.media_buys?.[0]?.status;
      expect(await eventually(async () => (await statusOn(b)) === 'active', 15_000, 'gateway b sees the buy')).toBe(true);
      expect(await statusOn(b)).toBe('active'); // now cached on b
      expect((await task(a, 'update_media_buy', { media_buy_id: id, updates: { status: 'pause' } })).status).toBe(200);
      const started = Date.now();
      await eventually(async () => (await statusOn(b)) === 'paused', 15_000, 'gateway b shows the pause');
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      await a.stop();
      await b.stop();
      await db.drop();
    }
  }, 90_000);
});

describe('APPROVAL_POLICY=manual', () => {
  let gw: Gateway;
  let buyer: string;
  let seller: string;
  const task = async (name: string, body: unknown) => {
    const res = await fetch(`${gw.url}/api/tasks/${name}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${buyer}` }, body: JSON.stringify(body) });
    return (await res.json()) as Record<string, any>;
  };
  beforeAll(async () => {
    gw = await startTestGateway({ APPROVAL_POLICY: 'manual' });
    buyer = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
    seller = (await issueApiKey(gw.app.store, { org: 'pub', role: 'seller' }, { now: new Date().toISOString() })).key;
    await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 15_000, 'readyz');
  });
  afterAll(async () => {
    await gw.stop();
  });

  it('holds every create_media_buy and sync_creatives for the seller, then applies them on approval', async () => {
    const created = await task('create_media_buy', {
      buyer_ref: 'manual-1',
      brand_manifest: { url: 'https://acme.example' },
      packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 100 }],
      start_time: { type: 'asap' },
      end_time: future(5),
    });
    expect(created).toMatchObject({ status: 'pending' });
    const approve = (t: string) => graphql(gw.url, 'mutation($t: ID!) { approveTask(taskId: $t) }', { t }, seller);
    expect((await approve(created.task_id)).body.data).toEqual({ approveTask: 'completed' });

    const banner = { creative_id: 'm-1', name: 'MPU', format_id: { agent_url: 'https://creative.adcontextprotocol.org', id: 'display_300x250' }, assets: { image: { url: 'https://cdn.acme.example/m.png', width: 300, height: 250 } } };
    const synced = await task('sync_creatives', { creatives: [banner], assignments: { 'm-1': [created.packages[0].package_id] } });
    expect(synced).toMatchObject({ status: 'pending', creatives: [{ creative_id: 'm-1', action: 'created' }] });
    expect((await task('list_creatives', {})).query_summary.total_matching).toBe(0);
    expect((await task('tasks_get', { task_id: synced.task_id })).status).toBe('submitted');

    expect((await approve(synced.task_id)).body.data).toEqual({ approveTask: 'completed' });
    const done = await task('tasks_get', { task_id: synced.task_id });
    expect(done).toMatchObject({ status: 'completed', task_type: 'sync_creatives', result: { creatives: [{ creative_id: 'm-1', action: 'created' }] } });
    expect((await task('list_creatives', {})).creatives.map((c: { creative_id: string }) => c.creative_id)).toEqual(['m-1']);

    // A sync whose every creative fails is answered at once: a terminal answer carries no task.
    const failed = await task('sync_creatives', { creatives: [{ ...banner, creative_id: 'm-2', format_id: { ...banner.format_id, id: 'nope' } }] });
    expect(failed).not.toHaveProperty('task_id');
    expect(failed.creatives[0].action).toBe('failed');
  });
});
