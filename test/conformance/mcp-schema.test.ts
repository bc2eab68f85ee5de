import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { issueApiKey } from '../../src/application/api-keys';
import { validateAdcp3, validateAdcp3Response } from '../../src/wire/adcp3/schemas';
import { redatedComplianceDir } from '../../src/conformance/compliance-tree';
import { startTestGateway } from '../support/gateway';
import { mcpCall } from '../support/mcp-call';
import { startReceiver } from '../support/receiver';

type Json = Record<string, any>;
const future = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();
const LIVE = { brand: { domain: 'acme-outdoor.com' }, operator: 'pinnacle-media.com' };
const SANDBOX = { brand: { domain: 'acme.example' }, operator: 'agency.example', sandbox: true };

/** Tools the 3.0 manifest does not list, by their response schema. */
const OUTSIDE_MANIFEST: Readonly<Record<string, string>> = { tasks_get: 'core/tasks-get-response.json', 'tasks/get': 'core/tasks-get-response.json', tasks_list: 'core/tasks-list-response.json' };
const validateAnswer = (tool: string, body: unknown) => (Object.hasOwn(OUTSIDE_MANIFEST, tool) ? validateAdcp3(OUTSIDE_MANIFEST[tool]!, body) : validateAdcp3Response(tool, body));

/** Tools whose 3.0 response schema has an error arm: their error answers must validate as a whole. */
const ERROR_ARM = new Set(['create_media_buy', 'update_media_buy', 'sync_creatives', 'sync_accounts', 'sync_audiences', 'sync_catalogs', 'sync_event_sources', 'log_event', 'get_account_financials', 'provide_performance_feedback', 'build_creative']);

/**
 * Every answer of every task over MCP, success and error, checked against the AdCP 3.0 schemas
 * `@adcp/sdk` bundles: successes against the tool's response schema; errors by their `adcp_error`
 * and each `errors[]` item against `core/error.json` (and, for tools with an error arm, the whole
 * body against the response schema). The corpus: every storyboard `sample_request` for a tool the
 * agent has (placeholders filled from a buy, creative and task made here), and hand-made requests
 * that probe each tool's success and error paths.
 */
describe('MCP answers validate against the AdCP 3.0 schemas', () => {
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let buyer: string;
  let other: string;

  // This suite validates every answer itself (errors included): the helper's own check is off.
  const call = (name: string, args: unknown, key = buyer) => mcpCall(gw.url, key, name, args, { validate: false });

  beforeAll(async () => {
    gw = await startTestGateway({ ALLOW_PRIVATE_WEBHOOK_URLS: '1', SANDBOX_APPROVAL_DELAY_MS: '200' });
    receiver = await startReceiver();
    const ctx = { now: new Date().toISOString() };
    buyer = (await issueApiKey(gw.app.store, { org: 'schema-acme', role: 'buyer' }, ctx)).key;
    other = (await issueApiKey(gw.app.store, { org: 'schema-globex', role: 'buyer' }, ctx)).key;
    await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
  });
  afterAll(async () => {
    await receiver?.close();
    await gw?.stop();
  });

  it('100 % of at least 200 answers valid, successes and errors for every tool', async () => {
    const tools = new Set(
      ((await (await fetch(`${gw.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${buyer}` }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) })).json()) as Json).result.tools.map((t: { name: string }) => t.name) as string[],
    );
    // Fixtures the samples' placeholders name.
    await call('sync_accounts', { accounts: [{ ...LIVE, billing: 'operator' }], idempotency_key: randomUUID() });
    const buy = (await call('create_media_buy', { account: LIVE, brand: { domain: 'acme-outdoor.com' }, idempotency_key: randomUUID(), start_time: 'asap', end_time: future(20), packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 3000 }] })).body;
    const pending = (await call('create_media_buy', { account: LIVE, brand: { domain: 'acme-outdoor.com' }, idempotency_key: randomUUID(), start_time: 'asap', end_time: future(20), packages: [{ product_id: 'premium_ctv_guaranteed', pricing_option_id: 'cpm_usd_guaranteed', budget: 20000 }] })).body;
    const format = { agent_url: 'https://creative.adcontextprotocol.org', id: 'display_300x250' };
    await call('sync_creatives', { account: LIVE, idempotency_key: randomUUID(), creatives: [{ creative_id: 'schema-banner', name: 'Banner', format_id: format, assets: { image: { asset_type: 'image', url: 'https://cdn.acme-outdoor.com/b.png', width: 300, height: 250 } } }] });
    const context: Json = {
      product_id: 'news_display_run_of_site',
      pricing_option_id: 'cpm_usd_fixed',
      media_buy_id: buy.media_buy_id,
      package_id: buy.packages[0].package_id,
      creative_id: 'schema-banner',
      task_id: pending.task_id,
      product_format_id: format,
      format_id: format,
    };
    const fill = (v: unknown): unknown => {
      if (typeof v === 'string') {
        if (v.startsWith('$generate:')) return randomUUID();
        const ctxRef = /^\$context\.(\w+)$/.exec(v);
        if (ctxRef) return context[ctxRef[1]!] ?? v;
        if (v.startsWith('{{runner.webhook_url')) return `${receiver.origin}/hook/${randomUUID()}`;
        return v;
      }
      if (Array.isArray(v)) return v.map(fill);
      if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fill(x)]));
      return v;
    };

    const corpus: { tool: string; args: unknown; key?: string; source: string }[] = [];
    const walk = (dir: string): string[] => fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : e.name.endsWith('.yaml') ? [path.join(dir, e.name)] : []));
    for (const file of walk(redatedComplianceDir())) {
      let doc: Json;
      try {
        doc = YAML.parse(fs.readFileSync(file, 'utf8')) as Json;
      } catch {
        continue;
      }
      for (const phase of (doc?.phases ?? []) as Json[]) {
        for (const step of (phase.steps ?? []) as Json[]) {
          if (typeof step.task !== 'string' || !tools.has(step.task) || step.task === 'comply_test_controller' || !step.sample_request) continue;
          corpus.push({ tool: step.task, args: fill(step.sample_request), source: `${path.basename(file)}#${step.id}` });
        }
      }
    }
    const samples = corpus.length;
    // Hand-made probes: each tool's success and error paths, and another buyer's ids.
    const probe = (tool: string, args: unknown, key?: string) => corpus.push({ tool, args, key, source: 'probe' });
    probe('get_adcp_capabilities', {});
    probe('get_adcp_capabilities', { adcp_major_version: 2 });
    probe('get_products', { buying_mode: 'brief', brief: 'sports video', filters: { channels: ['olv'], delivery_type: 'non_guaranteed' } });
    probe('get_products', { buying_mode: 'brief', brief: 'x', filters: { budget_range: { min: 10, max: 1 } } });
    probe('get_products', { buying_mode: 'wholesale', account: SANDBOX });
    probe('get_products', { account: { account_id: 'acct_AAAAAAAAAAAAAAAAAAAAAA' } });
    probe('get_products', { buying_mode: 'refine', account: LIVE, refine: [{ scope: 'proposal', proposal_id: 'balanced_reach_q2', ask: 'drop display' }, { scope: 'product', product_id: 'news_display_run_of_site', action: 'more_like_this' }, { scope: 'request', ask: 'cheaper' }] });
    probe('get_products', { buying_mode: 'refine', account: LIVE, refine: [{ scope: 'proposal', proposal_id: 'sports_fans_video', action: 'finalize' }] });
    probe('get_products', { buying_mode: 'refine', account: LIVE, refine: [{ scope: 'galaxy' }] });
    probe('get_products', { buying_mode: 'refine' });
    probe('create_media_buy', { account: LIVE, brand: { domain: 'acme-outdoor.com' }, idempotency_key: randomUUID(), start_time: 'asap', end_time: future(5), proposal_id: 'sports_fans_video', total_budget: { amount: 5000, currency: 'USD' } });
    probe('create_media_buy', { account: LIVE, brand: { domain: 'acme-outdoor.com' }, idempotency_key: randomUUID(), start_time: 'asap', end_time: future(5), proposal_id: 'no_such_plan', total_budget: { amount: 5000, currency: 'USD' } });
    probe('sync_audiences', { account: LIVE, idempotency_key: randomUUID(), audiences: [{ audience_id: 'schema-aud', name: 'Schema', add: [{ external_id: 'u1', hashed_email: 'a'.repeat(64), uids: [{ type: 'uid2', value: 'x' }] }] }] });
    probe('sync_audiences', { account: LIVE, idempotency_key: randomUUID() });
    probe('sync_audiences', { account: LIVE, idempotency_key: randomUUID(), audiences: [{ audience_id: 'schema-aud', delete: true }, { audience_id: 'nope', delete: true }] });
    probe('sync_audiences', { account: LIVE, idempotency_key: randomUUID(), audiences: [{ audience_id: 'x', add: [{ external_id: 'u' }] }] });
    probe('sync_catalogs', { account: LIVE, idempotency_key: randomUUID(), catalogs: [{ catalog_id: 'schema-cat', type: 'product', items: [{ item_id: 'a', title: 'A', url: 'https://acme-outdoor.com/a', price: { amount: 1, currency: 'USD' } }, { item_id: 'b' }] }] });
    probe('sync_catalogs', { account: LIVE, idempotency_key: randomUUID() });
    probe('sync_catalogs', { account: LIVE, idempotency_key: randomUUID(), validation_mode: 'lenient', catalogs: [{ catalog_id: 'feed', type: 'product', url: 'https://acme-outdoor.com/feed' }] });
    probe('sync_catalogs', { account: LIVE, idempotency_key: randomUUID(), catalogs: [{ catalog_id: 'feed', type: 'product', url: 'https://acme-outdoor.com/feed' }] });
    probe('sync_event_sources', { account: LIVE, idempotency_key: randomUUID(), event_sources: [{ event_source_id: 'schema-web', event_types: ['purchase'] }] });
    probe('sync_event_sources', { account: LIVE, idempotency_key: randomUUID() });
    probe('sync_event_sources', { account: LIVE, idempotency_key: randomUUID(), event_sources: [{ event_source_id: 'bad id!' }] });
    probe('log_event', { event_source_id: 'schema-web', account: LIVE, idempotency_key: randomUUID(), events: [{ event_id: 'e1', event_type: 'purchase', event_time: new Date().toISOString() }, { event_id: 'e2', event_type: 'lead', event_time: new Date().toISOString() }] });
    probe('log_event', { event_source_id: 'nope', idempotency_key: randomUUID(), events: [{ event_id: 'e1', event_type: 'purchase', event_time: new Date().toISOString() }] });
    probe('get_account_financials', { account: LIVE });
    probe('get_account_financials', { account: LIVE, period: { start: '2026-13-01', end: '2026-01-01' } });
    probe('provide_performance_feedback', { media_buy_id: buy.media_buy_id, idempotency_key: randomUUID(), measurement_period: { start: future(-2), end: future(-1) }, performance_index: 0.8 });
    probe('provide_performance_feedback', { media_buy_id: 'mb_nope', idempotency_key: randomUUID(), measurement_period: { start: future(-2), end: future(-1) }, performance_index: 0.8 });
    probe('build_creative', { idempotency_key: randomUUID(), message: 'Spring sale. Everything must go.', target_format_id: format, include_preview: true });
    probe('build_creative', { idempotency_key: randomUUID(), message: 'x', target_format_ids: [format, { ...format, id: 'display_728x90' }] });
    probe('build_creative', { idempotency_key: randomUUID(), message: 'x', target_format_id: { ...format, id: 'nope' } });
    probe('list_creative_formats', { format_ids: [format] });
    probe('list_creative_formats', { pagination: { max_results: 1 } });
    probe('list_creative_formats', { pagination: { cursor: '!!' } });
    probe('create_media_buy', { account: LIVE, brand: { domain: 'acme-outdoor.com' }, idempotency_key: randomUUID(), start_time: 'asap', end_time: future(5), packages: [{ product_id: 'sports_video_auction', pricing_option_id: 'cpm_auction_usd', budget: 500, bid_price: 15 }] });
    probe('create_media_buy', { account: LIVE, brand: { domain: 'acme-outdoor.com' }, idempotency_key: randomUUID(), start_time: 'asap', end_time: future(5), packages: [{ product_id: 'sports_video_auction', pricing_option_id: 'cpm_auction_usd', budget: 500, bid_price: 1 }] });
    probe('create_media_buy', { account: LIVE, brand: { domain: 'acme-outdoor.com' }, idempotency_key: randomUUID(), start_time: '2020-01-01T00:00:00Z', end_time: future(5), packages: [] });
    probe('create_media_buy', { account: LIVE, brand: { domain: 'acme-outdoor.com' }, start_time: 'asap', end_time: future(5), packages: [] });
    probe('create_media_buy', { account: { brand: { domain: 'unknown-brand.com' }, operator: 'nobody.com' }, brand: { domain: 'x.com' }, idempotency_key: randomUUID(), start_time: 'asap', end_time: future(5), packages: [] });
    probe('update_media_buy', { account: LIVE, media_buy_id: buy.media_buy_id, idempotency_key: randomUUID(), packages: [{ package_id: buy.packages[0].package_id, budget: 3500 }] });
    probe('update_media_buy', { account: LIVE, media_buy_id: buy.media_buy_id, idempotency_key: randomUUID(), paused: true });
    probe('update_media_buy', { account: LIVE, media_buy_id: buy.media_buy_id, idempotency_key: randomUUID(), packages: [{ package_id: 'nope', paused: true }] });
    probe('update_media_buy', { account: LIVE, media_buy_id: buy.media_buy_id, idempotency_key: randomUUID(), paused: true }, other);
    probe('get_media_buys', {});
    probe('get_media_buys', { media_buy_ids: [buy.media_buy_id], include_webhook_activity: true });
    probe('get_media_buys', { media_buy_ids: [buy.media_buy_id] }, other);
    probe('get_media_buys', { pagination: { max_results: 1 } });
    probe('get_media_buys', { media_buy_ids: [''] });
    probe('get_media_buy_delivery', { media_buy_ids: [buy.media_buy_id], time_granularity: 'daily' });
    probe('get_media_buy_delivery', {});
    probe('get_media_buy_delivery', { media_buy_ids: ['mb_nope'] });
    probe('sync_creatives', { account: LIVE, idempotency_key: randomUUID(), creatives: [{ creative_id: 'bad', name: 'Bad', format_id: { agent_url: 'https://nowhere.example.com', id: 'x' }, assets: {} }] });
    probe('sync_creatives', { account: LIVE, idempotency_key: randomUUID(), creatives: [{ creative_id: 'schema-banner', name: 'Banner', format_id: format, assets: { image: { asset_type: 'image', url: 'https://cdn.acme-outdoor.com/b.png', width: 300, height: 250 } } }], assignments: [{ creative_id: 'schema-banner', package_id: buy.packages[0].package_id }] });
    probe('sync_creatives', { account: LIVE, idempotency_key: randomUUID(), creatives: 'none' });
    probe('list_creatives', { filters: { creative_ids: ['schema-banner'] } });
    probe('list_creatives', { pagination: { max_results: 1 } });
    probe('list_creatives', { pagination: { cursor: '$$' } });
    probe('preview_creative', { request_type: 'single', creative_id: 'schema-banner' });
    probe('preview_creative', { request_type: 'batch', requests: [] });
    probe('preview_creative', { request_type: 'single', creative_id: 'missing' });
    probe('tasks_get', { task_id: pending.task_id, include_result: true });
    probe('tasks_get', { task_id: 'task_nope' });
    probe('tasks_get', { task_id: pending.task_id }, other);
    probe('tasks_list', { filters: { statuses: ['submitted'] }, pagination: { max_results: 1 } });
    probe('tasks_list', { filters: { status: 'bogus' } });
    probe('list_accounts', { pagination: { max_results: 1 } });
    probe('list_accounts', { status: 'closed' });
    probe('sync_accounts', { idempotency_key: randomUUID(), accounts: [{ brand: { domain: 'not a domain' }, operator: 'x' }] });
    probe('sync_accounts', { idempotency_key: randomUUID(), accounts: [{ ...SANDBOX, billing: 'agent' }] });
    probe('call_adcp_agent', { task: 'get_products', params: { buying_mode: 'brief', brief: 'news' } });
    probe('call_adcp_agent', { task: 'get_media_buys', params: { media_buy_ids: ['mb_nope'] } });
    // The same probes once more under a sandbox account, where the answers differ (test-product).
    for (const tool of ['get_products', 'list_creative_formats', 'list_accounts', 'get_media_buys']) probe(tool, { account: SANDBOX });
    for (let i = 0; i < 20; i++) probe('create_media_buy', { account: SANDBOX, brand: { domain: 'acme.example' }, idempotency_key: randomUUID(), start_time: 'asap', end_time: future(3 + i), packages: [{ product_id: 'test-product', pricing_option_id: 'default', budget: 100 + i }] });

    const invalid: string[] = [];
    const seen = new Map<string, { ok: number; error: number }>();
    for (const { tool, args, key, source } of corpus) {
      const { isError, body } = await call(tool, args, key);
      const counted = tool === 'call_adcp_agent' ? (args as { task: string }).task : tool;
      const tally = seen.get(tool) ?? { ok: 0, error: 0 };
      tally[isError ? 'error' : 'ok']++;
      seen.set(tool, tally);
      const checks = isError
        ? [validateAdcp3('core/error.json', body.adcp_error), ...((body.errors ?? []) as unknown[]).map((e) => validateAdcp3('core/error.json', e)), ...(ERROR_ARM.has(counted) ? [validateAnswer(counted, body)] : [])]
        : [validateAnswer(counted, body)];
      if (isError && !body.adcp_error) invalid.push(`${tool} (${source}): an error without adcp_error`);
      for (const c of checks) if (!c.valid) invalid.push(`${tool} (${source}) ${c.schema}: ${c.errors.slice(0, 3).join('; ')} — sent ${JSON.stringify(body).slice(0, 300)}`);
    }
    expect(invalid.slice(0, 30)).toEqual([]);
    expect(samples).toBeGreaterThanOrEqual(60);
    expect(corpus.length).toBeGreaterThanOrEqual(200);
    // Every tool answered both ways somewhere in the corpus (capabilities cannot fail but on version).
    for (const tool of ['get_adcp_capabilities', 'get_products', 'list_creative_formats', 'create_media_buy', 'update_media_buy', 'get_media_buys', 'get_media_buy_delivery', 'sync_creatives', 'list_creatives', 'preview_creative', 'tasks_get', 'tasks_list', 'sync_accounts', 'sync_audiences', 'sync_catalogs', 'sync_event_sources', 'log_event', 'get_account_financials', 'provide_performance_feedback', 'build_creative']) {
      expect({ tool, ...seen.get(tool) }).toEqual({ tool, ok: expect.any(Number), error: expect.any(Number) });
      expect(seen.get(tool)!.ok).toBeGreaterThan(0);
      expect(seen.get(tool)!.error).toBeGreaterThan(0);
    }
  }, 180_000);
});
