import fs from 'node:fs';
import path from 'node:path';
import { issueApiKey } from '../../src/application/api-keys';
import { ROOT, startTestGateway } from '../support/gateway';
import { eventually } from '../support/infra';
import { mcpCall } from '../support/mcp-call';
import { startReceiver } from '../support/receiver';

const SANDBOX = { brand: { domain: 'acme.example' }, operator: 'agency.example', sandbox: true };
const future = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();

/** One sample's value from Prometheus text, or undefined when the series is absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = (m[2] ?? '').split(',').filter(Boolean);
    if (wanted.every((w) => have.includes(w))) return Number(m[3]);
  }
  return undefined;
}

/** The metric names a dashboard's queries use (histogram series folded into their metric). */
function dashboardMetrics(): string[] {
  const dashboard = JSON.parse(fs.readFileSync(path.join(ROOT, 'deploy', 'grafana-dashboard.json'), 'utf8')) as { panels: { targets: { expr: string }[] }[] };
  const names = dashboard.panels.flatMap((p) => p.targets.flatMap((t) => t.expr.match(/\b(?:adcp|nodejs)_[a-z0-9_]+\b/g) ?? []));
  return [...new Set(names)];
}

/**
 * Issue 38, item 4: the metrics an operator alerts on, read from a running gateway's /metrics after
 * real work: appends and conflicts, webhook attempts by outcome and the queue they leave, consumer
 * and projection lag in events and seconds (made to lag by stopping them); and the Grafana
 * dashboard in deploy/ charts only names the gateway exports, covering each of those.
 */
describe('/metrics: what an operator alerts on', () => {
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  const scrape = async () => (await fetch(`${gw.url}/metrics`)).text();

  beforeAll(async () => {
    receiver = await startReceiver(() => 503); // the buyer's endpoint is down: every attempt fails and is retried
    gw = await startTestGateway({ APPROVAL_POLICY: 'manual', SANDBOX_APPROVAL_DELAY_MS: '0', ALLOW_PRIVATE_WEBHOOK_URLS: '1' });
  });
  afterAll(async () => {
    await gw?.stop();
    await receiver?.close();
  });

  it('counts appends, conflicts and webhook attempts; shows the queue; lag is 0 when caught up', async () => {
    const key = (await issueApiKey(gw.app.ports.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
    const before = await scrape();
    const created = await mcpCall(gw.url, key, 'create_media_buy', {
      account: SANDBOX,
      brand: { domain: 'acme.example' },
      packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 1000 }],
      start_time: 'asap',
      end_time: future(10),
      idempotency_key: 'operator-metrics-create-01',
      push_notification_config: { url: `${receiver.origin}/hooks/create_media_buy`, operation_id: 'op-metrics' },
    });
    expect(created.isError).toBe(false);
    // A stream written twice at the same expected version: the second append is a conflict.
    await gw.app.store.append('metrics-probe', [{ type: 'ProbeRecorded', data: {}, metadata: { time: new Date().toISOString() } }], { expectedVersion: 0 });
    await expect(gw.app.store.append('metrics-probe', [{ type: 'ProbeRecorded', data: {}, metadata: { time: new Date().toISOString() } }], { expectedVersion: 0 })).rejects.toThrow(/expected 0/);

    await eventually(() => receiver.received.length >= 2, 20_000, 'two failed attempts');
    const text = (await eventually(async () => {
      const t = await scrape();
      return (sample(t, 'adcp_webhook_queue_depth', { state: 'pending' }) ?? 0) >= 1 && sample(t, 'adcp_consumer_lag_events', { consumer: 'webhook-dispatcher' }) === 0 ? t : undefined;
    }, 10_000, 'the queue and the caught-up dispatcher in /metrics'))!;

    expect(sample(text, 'adcp_appends_total', { outcome: 'ok' })! - (sample(before, 'adcp_appends_total', { outcome: 'ok' }) ?? 0)).toBeGreaterThanOrEqual(3);
    expect(sample(text, 'adcp_appends_total', { outcome: 'conflict' })! - (sample(before, 'adcp_appends_total', { outcome: 'conflict' }) ?? 0)).toBe(1);
    expect(sample(text, 'adcp_appended_events_total')!).toBeGreaterThan(sample(before, 'adcp_appended_events_total') ?? 0);
    expect(sample(text, 'adcp_webhook_attempts_total', { outcome: 'failed' })).toBeGreaterThanOrEqual(2);
    expect(sample(text, 'adcp_webhook_attempts_total', { outcome: 'success' })).toBeUndefined();
    for (const consumer of ['webhook-dispatcher', 'delivery-reporter', 'change-feed', 'sandbox-approver']) {
      expect({ consumer, lag: sample(text, 'adcp_consumer_lag_events', { consumer }), seconds: sample(text, 'adcp_consumer_lag_seconds', { consumer }) }).toEqual({ consumer, lag: 0, seconds: 0 });
    }
    expect(sample(text, 'adcp_projection_lag_seconds', { projection: 'webhooks' })).toBe(0);
    expect(sample(text, 'nodejs_eventloop_lag_p99_seconds')).toBeGreaterThan(0);
  });

  it('lag in events and seconds when consumers and projections stop while the log grows', async () => {
    await gw.app.bus.close();
    await gw.app.projections.stop();
    const minuteAgo = new Date(Date.now() - 60_000).toISOString();
    for (let i = 0; i < 3; i++) await gw.app.store.append(`metrics-lag-${i}`, [{ type: 'ProbeRecorded', data: {}, metadata: { time: minuteAgo } }]);
    // A scrape is reused for up to a second: the one after the appends shows them.
    const text = (await eventually(async () => {
      const t = await scrape();
      return (sample(t, 'adcp_consumer_lag_events', { consumer: 'webhook-dispatcher' }) ?? 0) >= 3 ? t : undefined;
    }, 5_000, 'the lag in /metrics'))!;
    expect(sample(text, 'adcp_consumer_lag_events', { consumer: 'webhook-dispatcher' })).toBeGreaterThanOrEqual(3);
    expect(sample(text, 'adcp_consumer_lag_seconds', { consumer: 'webhook-dispatcher' })).toBeGreaterThanOrEqual(59);
    expect(sample(text, 'adcp_projection_lag_seconds', { projection: 'webhooks' })).toBeGreaterThanOrEqual(59);
  });

  it('the Grafana dashboard charts only metrics the gateway exports, and every one an operator alerts on', async () => {
    const text = await scrape();
    const exported = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
    const used = dashboardMetrics();
    const base = (name: string) => name.replace(/_(bucket|count|sum)$/, '');
    expect(used.filter((n) => !exported.has(n) && !exported.has(base(n)))).toEqual([]);
    expect(used.map(base).sort()).toEqual(
      [
        'adcp_appended_events_total',
        'adcp_appends_total',
        'adcp_consumer_lag_events',
        'adcp_consumer_lag_seconds',
        'adcp_event_loop_stall_seconds',
        'adcp_projection_lag_events',
        'adcp_projection_lag_seconds',
        'adcp_webhook_attempts_total',
        'adcp_webhook_queue_depth',
        'nodejs_eventloop_lag_p99_seconds',
      ].sort(),
    );
  });
});

/**
 * Issue 45 (LOW): /readyz and /metrics are anonymous and unthrottled, and each answer reads the
 * log's head, a row per lagging projection, the webhook queue and the consumer groups' offsets.
 * Concurrent hits share one computation, and an answer is reused for a second, so a flood of
 * them costs what one scrape does.
 */
describe('/readyz and /metrics: many hits cost one computation', () => {
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(async () => {
    await gw?.stop();
  });

  it('50 concurrent /readyz and 50 /metrics read the store about as often as one of each', async () => {
    // The projections stopped behind a grown log: every scrape has a lag to read per projection.
    await gw.app.projections.stop();
    await gw.app.store.append('metrics-flood', [{ type: 'ProbeRecorded', data: {}, metadata: { time: new Date().toISOString() } }]);
    // Every read /readyz and /metrics make of the log and the read models, counted as they pass.
    let reads = 0;
    const store = gw.app.store as unknown as Record<string, (...args: unknown[]) => unknown>;
    const readModels = gw.app.readModels as unknown as Record<string, (...args: unknown[]) => unknown>;
    for (const [target, method] of [[store, 'headPosition'], [store, 'readAll'], [readModels, 'query']] as const) {
      const original = target[method]!.bind(target);
      target[method] = (...args: unknown[]) => {
        reads++;
        return original(...args);
      };
    }
    const hit = (path: string) => fetch(`${gw.url}${path}`).then(async (r) => ({ status: r.status, text: await r.text() }));
    const pause = () => new Promise((r) => setTimeout(r, 1_100)); // past the second an answer is reused

    await pause();
    reads = 0;
    const one = [await hit('/readyz'), await hit('/metrics')];
    const single = reads;
    expect(one.map((r) => r.status)).toEqual([503, 200]);
    expect(single).toBeGreaterThan(0);

    await pause();
    reads = 0;
    const began = performance.now();
    const flood = await Promise.all(Array.from({ length: 100 }, (_, i) => hit(i % 2 ? '/metrics' : '/readyz')));
    // An answer is computed at most once a second: the flood may span more than one on a loaded machine.
    const seconds = Math.ceil((performance.now() - began) / 1000);
    expect(flood.filter((r, i) => r.status !== (i % 2 ? 200 : 503))).toEqual([]);
    expect(sample(flood[1]!.text, 'adcp_projection_lag_events', { projection: 'webhooks' })).toBeGreaterThanOrEqual(1);
    // One computation of each per second the flood spanned (and one more if it straddled a second's end), not fifty.
    process.stdout.write(`/readyz + /metrics store reads: one of each ${single}, 50 of each concurrently ${reads} (over ${seconds} s)\n`);
    expect(reads).toBeLessThanOrEqual((seconds + 1) * single);
  });
});

describe('/metrics behind METRICS_TOKEN', () => {
  it('with METRICS_TOKEN set, /metrics answers 401 without the token or with another, and the metrics with it; /readyz stays open', async () => {
    const token = 'metrics-token-0b7c4f1e9a2d4c6b8e3f5a7d9c1b2e4f';
    const gw = await startTestGateway({ METRICS_TOKEN: token });
    try {
      const scrape = (authorization?: string) => fetch(`${gw.url}/metrics`, { headers: authorization ? { authorization } : {} });
      const none = await scrape();
      expect(none.status).toBe(401);
      expect(none.headers.get('www-authenticate')).toBe('Bearer');
      expect(await none.json()).toEqual({ error: { code: 'UNAUTHENTICATED', message: 'the metrics need a bearer token (METRICS_TOKEN)' } });
      expect((await scrape(`Bearer ${token}x`)).status).toBe(401);
      expect((await scrape(`Basic ${token}`)).status).toBe(401);
      const ok = await scrape(`Bearer ${token}`);
      expect(ok.status).toBe(200);
      expect(sample(await ok.text(), 'adcp_appends_total', { outcome: 'ok' })).toBeGreaterThanOrEqual(0);
      expect((await fetch(`${gw.url}/readyz`)).status).toBe(200);
    } finally {
      await gw.stop();
    }
  });
});
