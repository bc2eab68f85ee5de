import { createHmac } from 'node:crypto';
import { elapsedPeriods } from '../../src/domain/reporting/periods';
import { reportLogStream } from '../../src/domain/reporting/report-log';
import { issueApiKey } from '../../src/application/api-keys';
import { KAFKA_BROKERS, PG_ADMIN_URL, createTestDatabase, describeWith, eventually } from '../support/infra';
import { graphql, startTestGateway } from '../support/gateway';
import { startReceiver, type ReceivedWebhook } from '../support/receiver';
import { sdkVerifyWebhooks } from '../support/sdk-oracle';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;
const future = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();

function webhookSuite(name: string, env: () => Promise<{ env: Record<string, string>; cleanup: () => Promise<void> }>): void {
  describe(`signed task webhooks (${name})`, () => {
    let gw: Gateway;
    let cleanup: () => Promise<void>;
    let buyer: string;
    let seller: string;
    // The receiver fails the first two deliveries of every `completed` webhook with 503.
    let receiver: Awaited<ReturnType<typeof startReceiver>>;

    const task = async (taskName: string, body: unknown) => {
      const res = await fetch(`${gw.url}/api/tasks/${taskName}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${buyer}` },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Record<string, any> };
    };
    const order = (buyerRef: string, push: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
      buyer_ref: buyerRef,
      brand_manifest: { url: 'https://acme.example' },
      packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 1200 }],
      start_time: { type: 'asap' },
      end_time: future(7),
      push_notification_config: push,
      ...extra,
    });
    const forTask = (taskId: string) => receiver.received.filter((w) => w.json.task_id === taskId);

    beforeAll(async () => {
      receiver = await startReceiver((w, seen) => {
        if (w.json.status !== 'completed') return 200;
        const earlier = seen.filter((s) => s.json.idempotency_key === w.json.idempotency_key).length;
        return earlier < 2 ? 503 : 200;
      });
      const e = await env();
      cleanup = e.cleanup;
      gw = await startTestGateway({ ...e.env, APPROVAL_POLICY: 'manual', ALLOW_PRIVATE_WEBHOOK_URLS: '1', WEBHOOK_KEY_PURPOSE: 'webhook-signing' });
      const ctx = { now: new Date().toISOString() };
      buyer = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, ctx)).key;
      seller = (await issueApiKey(gw.app.store, { org: 'publisher', role: 'seller' }, ctx)).key;
      await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 20_000, 'readyz');
    }, 60_000);
    afterAll(async () => {
      await gw?.stop();
      await cleanup?.();
      await receiver?.close();
    });

    it('approval → signed working and completed webhooks with the full envelope; 503, 503, 200 keep one idempotency_key; activity shows every attempt', async () => {
      const url = `${receiver.origin}/webhooks/create_media_buy/agent_1/rt_${Date.now()}`;
      const context = { trace_id: 'tr-42', nested: { keep: ['verbatim', 1, null] } };
      const created = await task('create_media_buy', order('wh-approve', { url, operation_id: 'op-approve-1' }, { context }));
      expect(created.status).toBe(200);
      expect(created.body).toMatchObject({ status: 'pending', context });
      const taskId = created.body.task_id as string;

      const approved = await graphql(gw.url, 'mutation($t: ID!) { approveTask(taskId: $t, note: "IO signed") }', { t: taskId }, seller);
      expect(approved.body.data).toEqual({ approveTask: 'completed' });

      const delivered = (await eventually(() => {
        const ws = forTask(taskId);
        return ws.some((w) => w.json.status === 'completed' && w.answered === 200) ? ws : undefined;
      }, 30_000, 'completed webhook delivered after two 503s'))!;

      // No webhook for the initial `submitted` answer; one per later status change.
      // The two fires go out concurrently, so they may interleave; each keeps its own order.
      expect(delivered.map((w) => w.json.status).sort()).toEqual(['completed', 'completed', 'completed', 'working']);
      const working = delivered.find((w) => w.json.status === 'working') as ReceivedWebhook;
      const completed = delivered.filter((w) => w.json.status === 'completed');
      expect(completed.map((w) => w.answered)).toEqual([503, 503, 200]);
      // Exponential back-off from 1 s with ±25 % jitter: ≥ 0.75 s, then ≥ 1.5 s apart.
      expect(completed[1]!.at - completed[0]!.at).toBeGreaterThanOrEqual(700);
      expect(completed[2]!.at - completed[1]!.at).toBeGreaterThanOrEqual(1400);
      expect(new Set(completed.map((w) => w.json.idempotency_key)).size).toBe(1);
      expect(new Set(completed.map((w) => w.body)).size).toBe(1); // identical bytes on every retry
      expect(new Set(completed.map((w) => w.headers['signature-input'])).size).toBe(3); // fresh signature each time
      expect(working.json.idempotency_key).not.toBe(completed[0]!.json.idempotency_key);

      for (const w of delivered) {
        expect(w.method).toBe('POST');
        expect(w.path).toBe(new URL(url).pathname);
        expect(w.headers['content-type']).toBe('application/json');
        expect(w.json).toMatchObject({
          task_id: taskId,
          operation_id: 'op-approve-1',
          task_type: 'create_media_buy',
          domain: 'media-buy',
          context,
        });
        expect(w.json.idempotency_key).toMatch(/^[A-Za-z0-9_.:-]{16,255}$/);
        expect(Date.parse(w.json.timestamp)).not.toBeNaN();
        expect(typeof w.json.message).toBe('string');
      }
      expect(completed[0]!.json.result).toMatchObject({ media_buy_id: created.body.media_buy_id, status: 'active' });

      // The official SDK verifies every delivery against our published JWKS.
      const jwks = ((await (await fetch(`${gw.url}/.well-known/jwks.json`)).json()) as { keys: Record<string, unknown>[] }).keys;
      const verdicts = await sdkVerifyWebhooks(
        jwks,
        delivered.map((w) => ({ method: w.method, url: w.url, headers: w.headers, body: w.body })),
      );
      expect(verdicts.map((v) => v.status)).toEqual(['verified', 'verified', 'verified', 'verified']);

      const activity = (await eventually(async () => {
        const r = await task('get_media_buys', { media_buy_id: created.body.media_buy_id, include_webhook_activity: true });
        const a = r.body.media_buys[0].webhook_activity as Record<string, any>[];
        return a.filter((x) => x.idempotency_key === completed[0]!.json.idempotency_key && x.status !== 'pending').length === 3 ? a : undefined;
      }, 10_000, 'activity for every attempt'))!;
      const forCompleted = activity.filter((x) => x.idempotency_key === completed[0]!.json.idempotency_key).sort((a, b) => a.attempt - b.attempt);
      expect(forCompleted.map((x) => [x.attempt, x.status, x.http_status_code])).toEqual([
        [1, 'failed', 503],
        [2, 'failed', 503],
        [3, 'success', 200],
      ]);
      expect(forCompleted[0]).toMatchObject({ url, error_message: expect.stringContaining('503'), task_id: taskId });
      expect(activity.find((x) => x.idempotency_key === working.json.idempotency_key)).toMatchObject({ attempt: 1, status: 'success', http_status_code: 200 });
    }, 60_000);

    it('rejection and input-required fire too, with the reason in result; HMAC registrations get X-ADCP-Signature', async () => {
      const secret = 'a-shared-secret-of-at-least-32-characters!';
      const url = `${receiver.origin}/webhooks/create_media_buy/agent_1/rt_hmac`;
      const created = await task('create_media_buy', order('wh-hmac', { url, operation_id: 'op-hmac', authentication: { schemes: ['HMAC-SHA256'], credentials: secret } }));
      const taskId = created.body.task_id as string;
      await graphql(gw.url, 'mutation($t: ID!) { requestInput(taskId: $t, reason: "Need the signed IO") }', { t: taskId }, seller);
      await graphql(gw.url, 'mutation($t: ID!) { rejectTask(taskId: $t, reason: "Budget too small") }', { t: taskId }, seller);
      const got = (await eventually(() => (forTask(taskId).length >= 2 ? forTask(taskId) : undefined), 20_000, 'two webhooks'))!;
      expect(got.map((w) => w.json.status).sort()).toEqual(['input-required', 'rejected']);
      expect(got.find((w) => w.json.status === 'input-required')!.json.result).toMatchObject({ reason: 'APPROVAL_REQUIRED', message: 'Need the signed IO', errors: [] });
      expect(got.find((w) => w.json.status === 'rejected')!.json.result).toMatchObject({ reason: 'Budget too small' });
      for (const w of got) {
        expect(w.headers).not.toHaveProperty('signature');
        const ts = w.headers['x-adcp-timestamp']!;
        expect(Math.abs(Number(ts) - Date.now() / 1000)).toBeLessThan(60);
        const expected = `sha256=${createHmac('sha256', secret).update(`${ts}.${w.body}`).digest('hex')}`;
        expect(w.headers['x-adcp-signature']).toBe(expected);
      }
      // The read models keep no callback secret.
      const rows = await gw.app.readModels.query<{ c: string }>('SELECT push_notification_config AS c FROM tasks WHERE task_id = ?', [taskId]);
      expect(rows[0]!.c).not.toContain(secret);
    }, 60_000);

    it('refuses Bearer for these callbacks, and a registration without operation_id, naming the field', async () => {
      const bearer = await task('create_media_buy', order('wh-bearer', { url: `${receiver.origin}/x`, operation_id: 'op-b', authentication: { schemes: ['Bearer'], credentials: 'x'.repeat(40) } }));
      expect(bearer.status).toBe(422);
      expect(bearer.body.error).toMatchObject({ code: 'VALIDATION_ERROR', field: 'push_notification_config.authentication.schemes[0]' });
      const noOp = await task('create_media_buy', order('wh-noop', { url: `${receiver.origin}/x` }));
      expect(noOp.status).toBe(400);
      expect(noOp.body.error.field).toBe('push_notification_config.operation_id');
    });

    it('delivery reports: scheduled daily with increasing sequence_number, then final once the flight completes, then silence', async () => {
      const url = `${receiver.origin}/reports/acme`;
      const reports = () => receiver.received.filter((w) => w.path === '/reports/acme' && w.answered === 200).map((w) => w.json);
      const created = await task('create_media_buy', {
        ...order('wh-reports', { url: `${receiver.origin}/unused`, operation_id: 'op-reports' }),
        end_time: future(3),
        reporting_webhook: { url, reporting_frequency: 'daily' },
      });
      const taskId = created.body.task_id as string;
      await graphql(gw.url, 'mutation($t: ID!) { approveTask(taskId: $t) }', { t: taskId }, seller);
      await eventually(async () => (await task('get_media_buys', { media_buy_id: created.body.media_buy_id })).body.media_buys?.[0]?.status === 'active', 10_000, 'active');
      const advance = (seconds: number) => graphql(gw.url, 'mutation($s: Int!) { advanceClock(seconds: $s) }', { s: seconds }, seller);

      await advance(86_400);
      await eventually(() => reports().length >= 1, 20_000, 'first daily report');
      await advance(2 * 86_400);
      await advance(2 * 86_400); // past the end of the flight: the buy completes
      // At-least-once with no ordering: wait for the final and every report numbered before it.
      const complete = () => {
        const final = reports().find((r) => r.result.notification_type === 'final');
        return final && reports().length === final.result.sequence_number ? reports().sort((x, y) => x.result.sequence_number - y.result.sequence_number) : undefined;
      };
      const all = (await eventually(complete, 30_000, 'final report and all before it'))!;
      await advance(86_400);
      await new Promise((r) => setTimeout(r, 1500)); // give a wrong extra report the chance to show
      expect(reports()).toHaveLength(all.length);

      const mine = all.filter((r) => r.result.media_buy_deliveries[0].media_buy_id === created.body.media_buy_id);
      expect(mine).toHaveLength(all.length);
      const kinds = mine.map((r) => r.result.notification_type);
      expect(kinds.at(-1)).toBe('final');
      expect(kinds.slice(0, -1).every((k) => k === 'scheduled')).toBe(true);
      expect(kinds.length).toBeGreaterThanOrEqual(3); // a 3-day flight crosses at least two UTC midnights
      expect(mine.map((r) => r.result.sequence_number)).toEqual(mine.map((_, i) => i + 1));
      for (const r of mine) {
        expect(r).toMatchObject({ task_type: 'media_buy_delivery', status: 'completed', operation_id: `delivery_report_${created.body.media_buy_id}` });
        expect(r.idempotency_key).toMatch(/^[A-Za-z0-9_.:-]{16,255}$/);
        expect(r).not.toHaveProperty('notification_id');
        expect(r.result).not.toHaveProperty('aggregated_totals');
        expect(r.result).toMatchObject({ currency: 'USD', reporting_period: { start: expect.any(String), end: expect.any(String) } });
        const d = r.result.media_buy_deliveries[0];
        const spend = d.by_package.reduce((s: number, p: { spend: number }) => s + p.spend, 0);
        expect(d.totals.spend).toBeCloseTo(spend, 2);
        expect(d.totals.impressions).toBe(d.by_package.reduce((s: number, p: { impressions: number }) => s + p.impressions, 0));
      }
      const scheduled = mine.slice(0, -1);
      for (let i = 1; i < scheduled.length; i++) expect(scheduled[i].result.reporting_period.start).toBe(scheduled[i - 1].result.reporting_period.end);
      const final = mine.at(-1)!;
      expect(final.result.media_buy_deliveries[0].status).toBe('completed');
      const delivery = (await task('get_media_buy_delivery', { media_buy_id: created.body.media_buy_id })).body;
      expect(final.result.media_buy_deliveries[0].totals).toEqual({ impressions: delivery.delivery.impressions, spend: delivery.delivery.spend, clicks: delivery.delivery.clicks });

      const activity = (await task('get_media_buys', { media_buy_id: created.body.media_buy_id, include_webhook_activity: true })).body.media_buys[0].webhook_activity;
      // The receiver 503s every `completed` body twice, reports included: one key per report, retried.
      type Activity = { notification_type?: string; idempotency_key: string; sequence_number: number; status: string };
      const keysOf = (kind: string) => new Set((activity as Activity[]).filter((a) => a.notification_type === kind).map((a) => a.idempotency_key));
      expect(keysOf('final').size).toBe(1);
      expect(keysOf('scheduled').size).toBe(scheduled.length);
      const seqs = new Set((activity as Activity[]).filter((a) => a.notification_type === 'scheduled' && a.status === 'success').map((a) => a.sequence_number));
      expect([...seqs].sort()).toEqual(scheduled.map((_, i) => i + 1));
    }, 60_000);

    /** A live three-day buy sending daily reports to `/reports/<name>`, planned on the gateway's clock (earlier tests move it). */
    const reportingBuy = async (name: string) => {
      const url = `${receiver.origin}/reports/${name}`;
      const reports = () =>
        receiver.received
          .filter((w) => w.path === `/reports/${name}` && w.answered === 200)
          .map((w) => w.json)
          .sort((x, y) => x.result.sequence_number - y.result.sequence_number);
      const advance = (seconds: number) => graphql(gw.url, 'mutation($s: Int!) { advanceClock(seconds: $s) }', { s: seconds }, seller);
      const clock = Date.parse((await advance(1)).body.data!.advanceClock as string);
      const created = await task('create_media_buy', {
        ...order(`wh-${name}`, { url: `${receiver.origin}/unused`, operation_id: `op-${name}` }),
        end_time: new Date(clock + 3 * 86_400_000).toISOString(),
        reporting_webhook: { url, reporting_frequency: 'daily' },
      });
      const mediaBuyId = created.body.media_buy_id as string;
      await graphql(gw.url, 'mutation($t: ID!) { approveTask(taskId: $t) }', { t: created.body.task_id }, seller);
      const buy = (await eventually(async () => {
        const b = (await task('get_media_buys', { media_buy_id: mediaBuyId })).body.media_buys?.[0];
        return b?.status === 'active' ? b : undefined;
      }, 10_000, 'active'))!;
      return { url, reports, advance, clock, mediaBuyId, buy };
    };

    it('update_media_buy replaces reporting_webhook: honoured from the next report, while a report already fired keeps its URL through its retries', async () => {
      const { advance, mediaBuyId } = await reportingBuy('cfg-old');
      const at = (path: string) => receiver.received.filter((w) => w.path === path);
      await advance(86_400);
      // Report 1 is fired (the receiver answers its first two attempts 503) before the update lands.
      await eventually(() => at('/reports/cfg-old').length >= 1, 20_000, 'first attempt of report 1');
      const updated = await task('update_media_buy', { media_buy_id: mediaBuyId, updates: { reporting_webhook: { url: `${receiver.origin}/reports/cfg-new`, reporting_frequency: 'daily' } } });
      expect({ status: updated.status, changed: updated.body.changed }).toEqual({ status: 200, changed: expect.arrayContaining(['reporting_webhook']) });
      await eventually(() => at('/reports/cfg-old').some((w) => w.answered === 200), 20_000, 'report 1 delivered at the old URL after its retries');
      await advance(86_400);
      const next = (await eventually(() => at('/reports/cfg-new').find((w) => w.answered === 200), 20_000, 'report 2 at the new URL'))!;
      expect(next.json.result).toMatchObject({ notification_type: 'scheduled', sequence_number: 2 });
      const old = at('/reports/cfg-old');
      expect({ answered: old.map((w) => w.answered), sequence: [...new Set(old.map((w) => w.json.result.sequence_number))], keys: new Set(old.map((w) => w.json.idempotency_key)).size }).toEqual({
        answered: [503, 503, 200],
        sequence: [1],
        keys: 1,
      });
    }, 60_000);

    it('late data: an adjusted report restates a reported period, a delayed report says when to expect the next; sequence numbers stay gapless', async () => {
      const { reports, advance, clock, mediaBuyId } = await reportingBuy('late');

      await advance(86_400);
      const first = (await eventually(() => reports()[0], 45_000, 'first scheduled report'))!;
      expect(first.result).toMatchObject({ notification_type: 'scheduled', sequence_number: 1 });

      // Restate the busiest hour of the reported period: fewer impressions, less spend.
      const delivery = (await task('get_media_buy_delivery', { media_buy_id: mediaBuyId, granularity: 'hourly' })).body;
      const packageId = delivery.by_package[0].package_id as string;
      const period = first.result.reporting_period;
      const hour = (delivery.timeseries as { start: string; impressions: number; spend: number; clicks: number }[]).find(
        (h) => h.start >= period.start.slice(0, 13) && h.start < period.end && h.impressions > 10,
      )!;
      const adjust = (vars: Record<string, unknown>, key = seller) =>
        graphql(gw.url, 'mutation($in: DeliveryAdjustmentInput!) { adjustDelivery(input: $in) { packageId hourStart hour { impressions clicks spend } previous { impressions spend } reason } }', { in: { mediaBuyId, packageId, hourStart: hour.start, impressions: 10, clicks: 0, spend: 0.05, reason: 'invalid traffic filtered', ...vars } }, key);
      // Bad input names its field; a buyer may not restate delivery.
      expect((await adjust({ hourStart: '2020-01-01T00:00:00Z' })).body.errors![0]!.extensions).toMatchObject({ code: 'NOT_FOUND', field: 'hourStart' });
      expect((await adjust({ impressions: -1 })).body.errors![0]!.extensions).toMatchObject({ code: 'VALIDATION_ERROR', field: 'impressions' });
      expect((await adjust({ spend: 1_000_000 })).body.errors![0]!.extensions).toMatchObject({ code: 'VALIDATION_ERROR', field: 'spend' });
      expect((await adjust({}, buyer)).body.errors![0]!.extensions).toMatchObject({ code: 'FORBIDDEN' });
      const adjusted = await adjust({});
      expect(adjusted.body.errors).toBeUndefined();
      expect(adjusted.body.data!.adjustDelivery).toEqual({ packageId, hourStart: hour.start, hour: { impressions: 10, clicks: 0, spend: 0.05 }, previous: { impressions: hour.impressions, spend: hour.spend }, reason: 'invalid traffic filtered' });

      const restated = (await eventually(() => reports().find((r) => r.result.notification_type === 'adjusted'), 45_000, 'adjusted report'))!;
      expect(restated.result).toMatchObject({ sequence_number: 2, reporting_period: period });
      const before = first.result.media_buy_deliveries[0];
      const after = restated.result.media_buy_deliveries[0];
      expect(after).toMatchObject({ media_buy_id: mediaBuyId, is_adjusted: true, status: 'active' });
      expect(after.totals.impressions).toBe(before.totals.impressions - hour.impressions + 10);
      expect(after.totals.spend).toBeCloseTo(before.totals.spend - hour.spend + 0.05, 2);

      const expected = new Date(clock + 4 * 86_400_000).toISOString();
      const delayed = await graphql(gw.url, 'mutation($in: DeliveryDelayInput!) { reportDeliveryDelay(input: $in) { expectedAvailability } }', { in: { mediaBuyId, expectedAvailability: expected, reason: 'upstream feed late' } }, seller);
      expect(delayed.body.errors).toBeUndefined();
      const late = (await eventually(() => reports().find((r) => r.result.notification_type === 'delayed'), 45_000, 'delayed report'))!;
      expect(late.result).toMatchObject({ sequence_number: 3, reporting_period: { start: period.end } });
      expect(late.result.media_buy_deliveries[0]).toMatchObject({ status: 'reporting_delayed', expected_availability: expected });

      await advance(2 * 86_400);
      await advance(2 * 86_400); // past the end: the final report
      const all = (await eventually(() => {
        const r = reports();
        const final = r.find((x) => x.result.notification_type === 'final');
        return final && r.length === final.result.sequence_number ? r : undefined;
      }, 45_000, 'final and everything before it'))!;
      expect(all.map((r) => r.result.sequence_number)).toEqual(all.map((_, i) => i + 1));
      expect(all.map((r) => r.result.notification_type).slice(0, 3)).toEqual(['scheduled', 'adjusted', 'delayed']);
      expect(all.at(-1)!.result.media_buy_deliveries[0]).toMatchObject({ status: 'completed', is_final: true });
      // The restatement stays in the record: the final totals are what get_media_buy_delivery says now.
      const now = (await task('get_media_buy_delivery', { media_buy_id: mediaBuyId })).body.delivery;
      expect(all.at(-1)!.result.media_buy_deliveries[0].totals).toEqual({ impressions: now.impressions, spend: now.spend, clicks: now.clicks });
      // After the final report, late data is silent.
      await graphql(gw.url, 'mutation($in: DeliveryAdjustmentInput!) { adjustDelivery(input: $in) { at } }', { in: { mediaBuyId, packageId, hourStart: hour.start, impressions: 9, clicks: 0, spend: 0.04, reason: 'x' } }, seller);
      await new Promise((r) => setTimeout(r, 1500));
      expect(reports()).toHaveLength(all.length);
    }, 240_000);

    it('a report number claimed without its webhook (a crash between the two appends) is sent on the next delivery event', async () => {
      const { reports, advance, mediaBuyId, buy } = await reportingBuy('orphan');
      // The state a crash leaves: the first period's number claimed, its webhook never appended.
      const [first] = elapsedPeriods(buy.start_time, buy.end_time, 'daily', buy.end_time);
      await gw.app.store.append(reportLogStream(mediaBuyId), [
        { type: 'DeliveryReportSequenced', data: { media_buy_id: mediaBuyId, key: '1', notification_type: 'scheduled', sequence_number: 1, period: { start: first!.start, end: first!.end }, at: new Date().toISOString() } },
      ], { expectedVersion: 'no_stream' });

      await advance(86_400);
      const sent = (await eventually(() => reports().find((r) => r.result.sequence_number === 1), 45_000, 'the orphaned report'))!;
      expect(sent.result).toMatchObject({ notification_type: 'scheduled', reporting_period: { start: first!.start, end: first!.end } });
      await new Promise((r) => setTimeout(r, 1000));
      expect(reports().filter((r) => r.result.sequence_number === 1)).toHaveLength(1);
    }, 120_000);

    it('a buy that sent reports before the report log existed goes on numbering from them', async () => {
      const { url, reports, clock, mediaBuyId, buy } = await reportingBuy('legacy');
      const [first, second] = elapsedPeriods(buy.start_time, buy.end_time, 'daily', buy.end_time);
      // How an earlier version left it: report 1 as its own webhook stream, and no report log.
      const body = JSON.stringify({ idempotency_key: 'whk_legacy_report_1_xxxxxxxx', task_id: `delivery_report_${mediaBuyId}_000001`, operation_id: `delivery_report_${mediaBuyId}`, task_type: 'media_buy_delivery', status: 'completed', timestamp: new Date().toISOString(), result: { notification_type: 'scheduled', sequence_number: 1, reporting_period: { start: first!.start, end: first!.end }, currency: 'USD', media_buy_deliveries: [] } });
      await gw.app.store.append(`webhook-report-${mediaBuyId}.1`, [
        { type: 'WebhookScheduled', data: { idempotency_key: 'whk_legacy_report_1_xxxxxxxx', owner: 'acme', notification_type: 'delivery_report', adcp_notification_type: 'scheduled', sequence_number: 1, media_buy_id: mediaBuyId, url, auth: { scheme: 'rfc9421' }, body, scheduled_at: new Date().toISOString() } },
      ], { expectedVersion: 'no_stream' });

      const delayed = await graphql(gw.url, 'mutation($in: DeliveryDelayInput!) { reportDeliveryDelay(input: $in) { at } }', { in: { mediaBuyId, expectedAvailability: new Date(clock + 5 * 86_400_000).toISOString(), reason: 'late feed' } }, seller);
      expect(delayed.body.errors).toBeUndefined();
      const late = (await eventually(() => reports().find((r) => r.result.notification_type === 'delayed'), 45_000, 'delayed report'))!;
      expect(late.result).toMatchObject({ sequence_number: 2, reporting_period: { start: second!.start, end: second!.end } });
    }, 120_000);
  });
}

webhookSuite('SQLite, embedded bus', async () => ({ env: {}, cleanup: async () => {} }));

describeWith('PostgreSQL and Kafka', Boolean(PG_ADMIN_URL && KAFKA_BROKERS), 'webhooks on PostgreSQL + Kafka', () => {
  webhookSuite('PostgreSQL + Kafka', async () => {
    const db = await createTestDatabase('adcp_wh');
    return { env: { EVENT_STORE_URL: db.url, KAFKA_BROKERS: KAFKA_BROKERS!, KAFKA_TOPIC: `adcp.wh.${Date.now()}` }, cleanup: db.drop };
  });
});
