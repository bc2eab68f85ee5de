import fc from 'fast-check';

/**
 * The malformed-input suites' probe corpus, one copy for every binding: arbitrary JSON with the
 * awkward corners weighted in, valid requests of every task and the damage done to them, values of
 * every JSON type, hostile bodies, and what an answer must never say. REST and GraphQL
 * (test/integration/malformed-input.test.ts) and MCP and A2A (malformed-input-rpc.test.ts) send it.
 */

export type Json = unknown;

export const AGENT = 'https://creative.adcontextprotocol.org';

/** Any string, with the awkward ones weighted in: empty, NUL, a lone surrogate, proto names, paths, SQL, URLs, long. */
export const awkwardString = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.constantFrom('', ' ', '\u0000', '\ud800', '__proto__', 'constructor', 'toString', '../../etc/passwd', "'; DROP TABLE events; --", 'https://127.0.0.1/x', '2026-13-45T99:99:99Z', 'x'.repeat(5000)),
);
/** Strings a URL can carry (a lone surrogate cannot be percent-encoded). */
export const urlSafe = awkwardString.filter((s) => {
  try {
    return encodeURIComponent(s).length >= 0;
  } catch {
    return false;
  }
});
export const awkwardNumber = fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(0, -1, 1e308, -1e308, 2 ** 53 + 1, 5e-324, 1e21));
/** Any JSON value, with the awkward corners weighted in: big and negative numbers, odd strings, proto keys. */
export const anyJson: fc.Arbitrary<Json> = fc.letrec<{ value: Json }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    awkwardNumber,
    awkwardString,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(awkwardString, tie('value'), { maxKeys: 4 }),
  ),
})).value;

/** One value of each JSON type (and the awkward members of each), named: for what must hold of every type. */
export const EVERY_JSON_TYPE: readonly [label: string, value: Json][] = [
  ['null', null],
  ['true', true],
  ['false', false],
  ['zero', 0],
  ['a negative number', -1],
  ['a fraction', 1.5],
  ['a huge number', 1e308],
  ['the empty string', ''],
  ['a string', 'x'],
  ['a NUL string', '\u0000'],
  ['the empty array', []],
  ['an array of a number', [1]],
  ['an array of null', [null]],
  ['an array of an object', [{}]],
  ['the empty object', {}],
  ['an object', { a: 1 }],
];
/** Every JSON type but the object: what may not stand where an object must. */
export const EVERY_NON_OBJECT: readonly [label: string, value: Json][] = EVERY_JSON_TYPE.filter(([, v]) => !isObject(v));

export function isObject(value: Json): value is Record<string, Json> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The paths to every value inside a JSON document (objects and arrays), the root excluded. */
export function pathsOf(value: Json, prefix: (string | number)[] = []): (string | number)[][] {
  if (value === null || typeof value !== 'object') return [];
  const entries: [string | number, Json][] = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  return entries.flatMap(([k, v]) => [[...prefix, k], ...pathsOf(v, [...prefix, k])]);
}

export function clone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

export function valueAt(doc: Json, path: (string | number)[]): Json {
  return path.reduce<Json>((node, k) => (node as Record<string | number, Json>)[k], doc);
}

function parentOf(doc: Json, path: (string | number)[]): Record<string | number, Json> {
  let node = doc as Record<string | number, Json>;
  for (const k of path.slice(0, -1)) node = node[k] as Record<string | number, Json>;
  return node;
}

/** A valid request with one kind of damage applied, chosen and placed at random. */
export function damaged(valid: Record<string, Json>): fc.Arbitrary<Json> {
  const paths = pathsOf(valid);
  const at = fc.constantFrom(...paths);
  return fc.oneof(
    // A value anywhere replaced by arbitrary JSON.
    fc.tuple(at, anyJson).map(([path, v]) => {
      const doc = clone(valid);
      parentOf(doc, path)[path[path.length - 1]!] = v;
      return doc;
    }),
    // A field (or array element) removed.
    at.map((path) => {
      const doc = clone(valid);
      const parent = parentOf(doc, path);
      const key = path[path.length - 1]!;
      if (Array.isArray(parent)) parent.splice(key as number, 1);
      else delete parent[key];
      return doc;
    }),
    // Unknown keys beside the known ones, at the top or inside any object.
    fc.tuple(fc.constantFrom<(string | number)[]>([], ...paths.filter((p) => isObject(valueAt(valid, p)))), awkwardString, anyJson).map(([path, k, v]) => {
      const doc = clone(valid);
      (valueAt(doc, path) as Record<string, Json>)[k] = v;
      return doc;
    }),
    // The whole document as something else.
    anyJson,
    fc.constant([valid]),
  );
}

export function safeJson(text: string): Json {
  try {
    return JSON.parse(text) as Json;
  } catch {
    return undefined;
  }
}

/** A valid create_media_buy (the spec's shape, which every binding accepts), ending in 30 days. */
export function validCreateMediaBuy(): Record<string, Json> {
  return {
    buyer_ref: 'fuzz-base',
    brand_manifest: { url: 'https://acme.example' },
    packages: [{ buyer_ref: 'p1', product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 1000, targeting_overlay: { geo_country_any_of: ['US'] } }],
    start_time: { type: 'asap' },
    end_time: new Date(Date.now() + 30 * 86_400_000).toISOString(),
    push_notification_config: { url: 'https://buyer.example/hooks', operation_id: 'op-1' },
    context: { trace: 'fuzz' },
  };
}

/** What the valid requests refer to: a buy made with validCreateMediaBuy, a pending task, and the gateway itself. */
export interface CorpusFixtures {
  create: Record<string, Json>;
  mediaBuyId: string;
  packageId: string;
  taskId: string;
  /** host:port of the gateway under test (its own MCP endpoint stands in for a governance agent). */
  gatewayHost: string;
}

/** A valid request of every task the gateway serves, the damage's starting points. */
export function validRequests(f: CorpusFixtures): Record<string, Record<string, Json>> {
  return {
    get_products: { brief: 'video for sports fans', brand_manifest: { url: 'https://acme.example' }, filters: { format_types: ['video'], delivery_type: 'guaranteed' } },
    list_authorized_properties: { adcp_version: '3.1', publisher_domains: ['news.example'] },
    list_creative_formats: { format_types: ['video'], asset_types: ['image'] },
    create_media_buy: f.create,
    update_media_buy: {
      media_buy_id: f.mediaBuyId,
      updates: { budget_change: 10, end_time: new Date(Date.now() + 40 * 86_400_000).toISOString(), status: 'pause', packages: [{ package_id: f.packageId, budget: 900, creative_ids: ['ban-1'] }] },
    },
    get_media_buys: { media_buy_ids: [f.mediaBuyId], include_webhook_activity: true, status_filter: ['active'], limit: 5 },
    sync_creatives: {
      creatives: [{ creative_id: 'ban-1', name: 'MPU', format_id: { agent_url: AGENT, id: 'display_300x250' }, assets: { image: { url: 'https://cdn.acme.example/mpu.png', width: 300, height: 250 } } }],
      assignments: { 'ban-1': [f.packageId] },
      dry_run: true,
    },
    list_creatives: { filters: { status: ['approved'], format_types: ['display'] }, limit: 10, cursor: 'x' },
    get_media_buy_delivery: { media_buy_id: f.mediaBuyId, granularity: 'daily', date_range: { start: '2026-01-01', end: '2026-12-31' } },
    tasks_get: { task_id: f.taskId, include_result: true },
    sync_accounts: { accounts: [{ brand: { domain: 'acme.example' }, operator: 'agency.example', billing: 'operator' }], idempotency_key: 'fuzz-sync-accounts-0001' },
    list_accounts: { status: 'active', sandbox: true, pagination: { max_results: 5 } },
    tasks_list: { filters: { statuses: ['submitted'], task_types: ['create_media_buy'], created_after: '2026-01-01T00:00:00Z' }, pagination: { max_results: 5 } },
    get_task_status: { task_id: f.taskId, include_result: true, include_history: true },
    list_tasks: {
      filters: { statuses: ['submitted'], task_types: ['create_media_buy'], task_ids: [f.taskId], protocols: ['media-buy'], updated_after: '2026-01-01T00:00:00Z', has_webhook: true, context_contains: 'mb' },
      sort: { field: 'updated_at', direction: 'asc' },
      pagination: { max_results: 5 },
    },
    preview_creative: {
      request_type: 'single',
      creative_manifest: { creative_id: 'ban-1', name: 'MPU', format_id: { agent_url: AGENT, id: 'display_300x250' }, assets: { image: { asset_type: 'image', url: 'https://cdn.acme.example/mpu.png', width: 300, height: 250 } } },
      output_format: 'url',
    },
    sync_audiences: {
      account: { brand: { domain: 'acme.example' }, operator: 'agency.example' },
      audiences: [{ audience_id: 'aud-1', name: 'Loyal', audience_type: 'crm', add: [{ external_id: 'u1', hashed_email: 'a'.repeat(64), uids: [{ type: 'uid2', value: 'x' }] }], remove: [{ external_id: 'u2', hashed_phone: 'b'.repeat(64) }] }],
      idempotency_key: 'fuzz-sync-audiences-0001',
    },
    sync_catalogs: {
      account: { brand: { domain: 'acme.example' }, operator: 'agency.example' },
      catalogs: [{ catalog_id: 'cat-1', type: 'product', content_id_type: 'sku', items: [{ item_id: 'i1', sku: 'a&b', title: 'Pack', url: 'https://acme.example/p', price: { amount: 10, currency: 'USD' } }] }],
      validation_mode: 'lenient',
    },
    sync_event_sources: { account: { brand: { domain: 'acme.example' }, operator: 'agency.example' }, event_sources: [{ event_source_id: 'web', name: 'Web', event_types: ['purchase'], allowed_domains: ['acme.example'] }] },
    log_event: { event_source_id: 'web', events: [{ event_id: 'e1', event_type: 'purchase', event_time: '2026-01-01T00:00:00Z', user_match: { hashed_email: 'a'.repeat(64) }, custom_data: { value: 1, currency: 'USD' } }] },
    get_account_financials: { account: { brand: { domain: 'acme.example' }, operator: 'agency.example' }, period: { start: '2026-01-01', end: '2026-01-31' } },
    provide_performance_feedback: { media_buy_id: f.mediaBuyId, measurement_period: { start: '2026-01-01T00:00:00Z', end: '2026-01-02T00:00:00Z' }, performance_index: 1.1, package_id: f.packageId },
    sync_governance: { accounts: [{ account: { brand: { domain: 'acme.example' }, operator: 'agency.example' }, governance_agents: [{ url: `https://${f.gatewayHost}/mcp`, authentication: { schemes: ['Bearer'], credentials: 'g'.repeat(40) }, categories: ['budget_authority'] }] }] },
    sync_plans: { plans: [{ plan_id: 'p1', brand: { domain: 'acme.example' }, objectives: 'Q3', budget: { total: 50_000, currency: 'USD' }, flight: { start: '2026-01-01T00:00:00Z', end: '2036-01-01T00:00:00Z' }, countries: ['US'], custom_policies: [{ policy_id: 'weekly', enforcement: 'must', policy: 'Weekly reporting.' }] }] },
    check_governance: { plan_id: 'p1', caller: 'https://buyer.example/agent', tool: 'create_media_buy', payload: { total_budget: 1000, start_time: '2030-01-01T00:00:00Z', end_time: '2030-02-01T00:00:00Z' } },
    report_plan_outcome: { plan_id: 'p1', outcome: 'completed', governance_context: 'gctx_x', seller_response: { seller_reference: 'mb_1', committed_budget: 1000 } },
    get_plan_audit_logs: { plan_ids: ['p1'], include_entries: true },
    build_creative: { message: 'Spring sale.', target_format_id: { agent_url: AGENT, id: 'display_300x250' }, creative_manifest: { assets: { pixel: { asset_type: 'url', url: 'https://t.acme.example/i?s={SKU}' } } }, include_preview: true, macro_values: { CACHEBUSTER: '1' } },
  };
}

/** Bodies that are hostile whatever the path: deep nesting, not JSON, non-object JSON, proto keys, huge and oversized. */
export function hostileBodies(create: Record<string, Json>): [label: string, body: string][] {
  const deep = '['.repeat(20_000) + ']'.repeat(20_000);
  const deepObject = '{"a":'.repeat(5_000) + '1' + '}'.repeat(5_000);
  return [
    ['deep array', deep],
    ['deep object', deepObject],
    ['deep request', JSON.stringify({ ...create, buyer_ref: 'fuzz-deep', context: 0 }).replace('"context":0', `"context":${deepObject}`)],
    ['not JSON', '{"buyer_ref": '],
    ['empty', ''],
    ['a string', '"hello"'],
    ['null', 'null'],
    ['a huge number', '1' + '0'.repeat(400)],
    ['proto pollution', '{"__proto__": {"role": "admin"}, "constructor": {"prototype": {"x": 1}}}'],
    ['many packages', JSON.stringify({ ...create, buyer_ref: 'fuzz-many', packages: Array.from({ length: 5000 }, () => (create.packages as Json[])[0]) })],
    ['oversized', JSON.stringify({ brief: 'x'.repeat(3 * 1024 * 1024) })],
    // Deep GraphQL documents: nesting inside a JSON string, which only the GraphQL parser sees.
    ['deep selection', JSON.stringify({ query: '{ a '.repeat(5_000) + '}'.repeat(5_000) })],
    ['deep literal', JSON.stringify({ query: `query { mediaBuys(request: {a: ${'['.repeat(10_000)}${']'.repeat(10_000)}}) }` })],
    ['many tokens', JSON.stringify({ query: `{ ${'__typename '.repeat(100_000)}}` })],
  ];
}

/**
 * What an answer must never say: a stack frame, an engine's own words about a value it choked on,
 * a path on the server, a validator's report.
 */
const LEAKS: readonly RegExp[] = [
  /\bat [\w$.<>]+ \(/,
  /\bat (?:async )?[^\s()]+:\d+:\d+/,
  /is not a function/,
  /is not iterable/,
  /Cannot read propert/,
  /Cannot convert undefined or null/,
  /\bundefined is not\b/,
  /Unexpected token/,
  /\b(?:TypeError|ReferenceError|RangeError|SyntaxError)\b/,
  /\$?ZodError|"code":\s*"invalid_type"|"expected":/,
  /node_modules|\/src\/|\/dist\/|\.[cm]?[jt]s:\d+/,
  /\/(?:home|root|usr|work|tmp|var)\//,
];

/** The first leak in an answer's text, if any. */
export function leakIn(text: string): string | undefined {
  return LEAKS.map((re) => re.exec(text)?.[0]).find((m) => m !== undefined);
}
