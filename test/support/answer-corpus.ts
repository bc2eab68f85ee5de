import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { mcpCall } from './mcp-call';

type Json = Record<string, any>;

/**
 * The corpus the schema conformance tests send (test/conformance/mcp-schema.test.ts for 3.0,
 * adcp31-schema.test.ts for 3.1): storyboard `sample_request`s with their placeholders filled
 * from fixtures made first, and hand-made probes of each tool's success and error paths.
 */

/** One call of the corpus: the tool, its arguments, another buyer's key if not the suite's, and where it came from. */
export interface CorpusEntry {
  tool: string;
  args: unknown;
  key?: string;
  source: string;
}

/** One answer, as a buyer reads it off the binding: the AdCP payload, and whether it was an error. */
export interface Answer {
  isError: boolean;
  body: Json;
}

export type CorpusCall = (tool: string, args: unknown, key: string) => Promise<Answer>;

/** MCP `tools/call`; the corpus validates every answer itself. */
export const mcpAnswer = (gwUrl: string): CorpusCall => (tool, args, key) => mcpCall(gwUrl, key, tool, args, { validate: false });

let messageSeq = 0;

/**
 * A2A `message/send` with one DataPart `{ skill, parameters }`, as @adcp/sdk's A2A client sends
 * it: the answer is the last DataPart of the task's first artifact (named `error` on failure).
 */
export const a2aAnswer = (gwUrl: string): CorpusCall => async (tool, args, key) => {
  const res = await fetch(`${gwUrl}/a2a`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { kind: 'message', role: 'user', messageId: `corpus-${++messageSeq}`, parts: [{ kind: 'data', data: { skill: tool, parameters: args } }] } } }),
  });
  if (res.status !== 200) throw new Error(`A2A ${tool}: HTTP ${res.status}`);
  const { result, error } = (await res.json()) as { result?: Json; error?: Json };
  if (!result) throw new Error(`A2A ${tool}: JSON-RPC error ${JSON.stringify(error)}`);
  const artifact = result.artifacts?.[0];
  const data = (artifact?.parts ?? []).filter((p: Json) => p.kind === 'data').at(-1)?.data as Json | undefined;
  if (!data) throw new Error(`A2A ${tool}: no DataPart in ${JSON.stringify(result).slice(0, 300)}`);
  return { isError: artifact.name === 'error', body: data };
};

export const future = (days: number): string => new Date(Date.now() + days * 86_400_000).toISOString();
export const LIVE = { brand: { domain: 'acme-outdoor.com' }, operator: 'pinnacle-media.com' };
export const SANDBOX = { brand: { domain: 'acme.example' }, operator: 'agency.example', sandbox: true };
export const FORMAT = { agent_url: 'https://creative.adcontextprotocol.org', id: 'display_300x250' };

/** What the samples' `$context.*` placeholders and the probes name: a live buy, a pending buy's task, a creative. */
export interface Fixtures {
  buy: Json;
  pending: Json;
  context: Json;
}

/**
 * Makes the fixtures as the buyer `key`, through `call` (`extra`: fields every call carries, such
 * as a version pin). `pending: false` for a seller that confirms every order at once
 * (APPROVAL_POLICY=never), whose guaranteed create leaves no task waiting.
 */
export async function makeFixtures(call: CorpusCall, key: string, extra: Json = {}, opts: { pending?: boolean } = {}): Promise<Fixtures> {
  await call('sync_accounts', { ...extra, accounts: [{ ...LIVE, billing: 'operator' }], idempotency_key: randomUUID() }, key);
  const buy = (await call('create_media_buy', { ...extra, account: LIVE, brand: { domain: 'acme-outdoor.com' }, idempotency_key: randomUUID(), start_time: 'asap', end_time: future(20), packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 3000 }] }, key)).body;
  const pending = (await call('create_media_buy', { ...extra, account: LIVE, brand: { domain: 'acme-outdoor.com' }, idempotency_key: randomUUID(), start_time: 'asap', end_time: future(20), packages: [{ product_id: 'premium_ctv_guaranteed', pricing_option_id: 'cpm_usd_guaranteed', budget: 20000 }] }, key)).body;
  await call('sync_creatives', { ...extra, account: LIVE, idempotency_key: randomUUID(), creatives: [{ creative_id: 'schema-banner', name: 'Banner', format_id: FORMAT, assets: { image: { asset_type: 'image', url: 'https://cdn.acme-outdoor.com/b.png', width: 300, height: 250 } } }] }, key);
  if (!buy.media_buy_id || (opts.pending !== false && !pending.task_id)) throw new Error(`corpus fixtures: no buy or no pending task (${JSON.stringify({ buy, pending }).slice(0, 400)})`);
  const context: Json = {
    product_id: 'news_display_run_of_site',
    pricing_option_id: 'cpm_usd_fixed',
    media_buy_id: buy.media_buy_id,
    package_id: buy.packages[0].package_id,
    creative_id: 'schema-banner',
    task_id: pending.task_id,
    product_format_id: FORMAT,
    format_id: FORMAT,
  };
  return { buy, pending, context };
}

/**
 * Fills a sample's placeholders: `$generate:*` with a fresh UUID, `$context.<name>` from the
 * fixtures (left as written when they name nothing made here: the agent answers that with an
 * error, which the corpus checks too), `{{runner.webhook_url…}}` with a receiver URL.
 */
export function placeholderFiller(context: Json, webhookUrl: () => string): (v: unknown) => unknown {
  const fill = (v: unknown): unknown => {
    if (typeof v === 'string') {
      if (v.startsWith('$generate:')) return randomUUID();
      const ctxRef = /^\$context\.(\w+)$/.exec(v);
      if (ctxRef) return context[ctxRef[1]!] ?? v;
      if (v.startsWith('{{runner.webhook_url')) return webhookUrl();
      return v;
    }
    if (Array.isArray(v)) return v.map(fill);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fill(x)]));
    return v;
  };
  return fill;
}

/** Every storyboard file (`*.yaml`) under a folder. */
export function yamlFiles(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? yamlFiles(path.join(dir, e.name)) : e.name.endsWith('.yaml') ? [path.join(dir, e.name)] : []));
}

/** The `sample_request` of every step of `files` whose task is one of `tools` (and not skipped by `skip`), filled. */
export function storyboardSamples(files: readonly string[], tools: ReadonlySet<string>, fill: (v: unknown) => unknown, skip: (task: string) => boolean = () => false): CorpusEntry[] {
  const out: CorpusEntry[] = [];
  for (const file of files) {
    let doc: Json;
    try {
      doc = YAML.parse(fs.readFileSync(file, 'utf8')) as Json;
    } catch {
      continue;
    }
    for (const phase of (doc?.phases ?? []) as Json[]) {
      for (const step of (phase.steps ?? []) as Json[]) {
        if (typeof step.task !== 'string' || !tools.has(step.task) || skip(step.task) || !step.sample_request) continue;
        out.push({ tool: step.task, args: fill(step.sample_request), source: `${path.basename(file)}#${step.id}` });
      }
    }
  }
  return out;
}

/**
 * Hand-made probes: each tool's success and error paths, another buyer's ids (`other`), and the
 * same reads under a sandbox account, where the answers differ (test-product).
 */
export function answerProbes(fx: Fixtures, other: string): CorpusEntry[] {
  const { buy, pending } = fx;
  const format = FORMAT;
  const corpus: CorpusEntry[] = [];
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
  for (const tool of ['get_products', 'list_creative_formats', 'list_accounts', 'get_media_buys']) probe(tool, { account: SANDBOX });
  for (let i = 0; i < 20; i++) probe('create_media_buy', { account: SANDBOX, brand: { domain: 'acme.example' }, idempotency_key: randomUUID(), start_time: 'asap', end_time: future(3 + i), packages: [{ product_id: 'test-product', pricing_option_id: 'default', budget: 100 + i }] });
  return corpus;
}

/**
 * Tools whose response schema in the release at `schemaDir` has an error arm (a branch that
 * requires `errors`): their error answers must validate as a whole, not only their error objects.
 */
export function toolsWithErrorArm(schemaDir: string): Set<string> {
  const manifest = JSON.parse(fs.readFileSync(path.join(schemaDir, 'manifest.json'), 'utf8')) as { tools: Record<string, { response_schema: string }> };
  const out = new Set<string>();
  for (const [tool, { response_schema }] of Object.entries(manifest.tools)) {
    const file = path.join(schemaDir, response_schema);
    if (!fs.existsSync(file)) continue;
    const schema = JSON.parse(fs.readFileSync(file, 'utf8')) as { oneOf?: { required?: string[] }[]; anyOf?: { required?: string[] }[] };
    if ([...(schema.oneOf ?? []), ...(schema.anyOf ?? [])].some((b) => b.required?.includes('errors'))) out.add(tool);
  }
  return out;
}
