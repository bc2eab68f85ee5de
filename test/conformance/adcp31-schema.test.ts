import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { issueApiKey } from '../../src/application/api-keys';
import { adcp3SchemaDir, validateAdcp3, validateAdcp3Response } from '../../src/wire/adcp3/schemas';
import type { SchemaValidation } from '../../src/wire/schema-set';
import { ADCP31_SCHEMA_DIR, adcp31 } from '../support/adcp31';
import { LIVE, SANDBOX, a2aAnswer, answerProbes, future, makeFixtures, mcpAnswer, placeholderFiller, storyboardSamples, toolsWithErrorArm, yamlFiles, type CorpusCall, type CorpusEntry } from '../support/answer-corpus';
import { startTestGateway } from '../support/gateway';
import { startReceiver, type ReceivedWebhook } from '../support/receiver';

type Json = Record<string, any>;

/** The AdCP 3.1.18 storyboards (the repository's copy of the spec's compliance tree), or the folder ADCP_31_COMPLIANCE names. */
const COMPLIANCE_31 = process.env.ADCP_31_COMPLIANCE ?? path.resolve(__dirname, '..', '..', '..', 'test', 'fixtures', 'compliance', '3.1.18');

/** One release's schemas as the corpus uses them. */
interface Release {
  name: string;
  response(tool: string, body: unknown): SchemaValidation | undefined;
  validate(schema: string, body: unknown): SchemaValidation;
  errorArm: ReadonlySet<string>;
}

/** Tools outside the manifests, by their response schema (the same file in both releases). */
const OUTSIDE_MANIFEST: Readonly<Record<string, string>> = {
  tasks_get: 'core/tasks-get-response.json',
  'tasks/get': 'core/tasks-get-response.json',
  tasks_list: 'core/tasks-list-response.json',
  'tasks/list': 'core/tasks-list-response.json',
};

const release31 = (): Release => {
  const set = adcp31();
  return {
    name: '3.1.19',
    response: (tool, body) => (Object.hasOwn(OUTSIDE_MANIFEST, tool) ? set.validate(OUTSIDE_MANIFEST[tool]!, body) : set.validateResponse(tool, body)),
    validate: (schema, body) => set.validate(schema, body),
    errorArm: toolsWithErrorArm(ADCP31_SCHEMA_DIR),
  };
};

/** 3.1's task reads, which a 3.0 caller gets in 3.0's tasks_get / tasks_list shapes (docs/mcp.md). */
const OUTSIDE_MANIFEST_30: Readonly<Record<string, string>> = {
  ...OUTSIDE_MANIFEST,
  get_task_status: 'core/tasks-get-response.json',
  list_tasks: 'core/tasks-list-response.json',
};

const release30 = (): Release => ({
  name: '3.0.6',
  // 3.0.6 publishes no comply_test_controller response schema: its answers are sent, not judged.
  response: (tool, body) => (Object.hasOwn(OUTSIDE_MANIFEST_30, tool) ? validateAdcp3(OUTSIDE_MANIFEST_30[tool]!, body) : tool === 'comply_test_controller' ? undefined : validateAdcp3Response(tool, body)),
  validate: validateAdcp3,
  errorArm: toolsWithErrorArm(adcp3SchemaDir()),
});

/**
 * The sandbox controller answers a refusal in its own body (`success: false`, `error`), which its
 * response schema describes as a branch: every answer of it is judged as a whole.
 */
const ANSWERS_ERRORS_IN_BODY = new Set(['comply_test_controller']);

/**
 * The schemas of a webhook a buyer's receiver gets: the task envelope (MCP style, which is what a
 * `push_notification_config` in the arguments registers on either binding) and, once the task is
 * over, its `result` as the task's own response ("for completed/failed, the full task response":
 * the envelope's `async-response-data` union alone would take almost anything); or a delivery report.
 */
function webhookChecks(r: Release, hook: ReceivedWebhook): (SchemaValidation | undefined)[] | string {
  const body = hook.json;
  if (typeof body.task_type === 'string') {
    const over = (body.status === 'completed' || body.status === 'failed') && body.result;
    return [r.validate('core/mcp-webhook-payload.json', body), ...(over ? [r.response(body.task_type, body.result)] : [])];
  }
  if (Array.isArray(body.media_buy_deliveries)) return [r.response('get_media_buy_delivery', body)];
  return `an unrecognised webhook ${hook.body.slice(0, 200)}`;
}

/**
 * The 3.1 schema corpus (issue 36): the `sample_request` of every step of every AdCP 3.1.18
 * storyboard that applies to a media-buy seller (the universal ones, the media-buy protocol's,
 * the governance protocol's, which this seller also speaks, and those of the specialisms it
 * claims in get_adcp_capabilities), plus the hand-made
 * probes of each tool's success and error paths (test/support/answer-corpus.ts), sent over MCP
 * and over A2A:
 * - pinned `adcp_version: "3.1"` (a sample's own pin kept: the version-negotiation probes), every
 *   answer valid against the 3.1.19 schemas;
 * - without `adcp_version`, every answer valid against 3.0.6, as today.
 * Successes against the tool's response schema; errors by `adcp_error` and each `errors[]` item
 * against `core/error.json` and, for tools whose response has an error arm, as a whole; and every
 * webhook the run's calls make a real receiver get, against the same release.
 */
describe('the AdCP 3.1 schema corpus over MCP and A2A', () => {
  /**
   * Two sellers, since which specialisms this agent claims depends on its approval policy: the
   * default rules (the same guaranteed create waits for a human) and APPROVAL_POLICY=never (it is
   * confirmed at once). The second runs the samples of the specialisms only it claims.
   */
  type Seller = 'rules' | 'never';
  const sellers = {} as Record<Seller, { gw: Awaited<ReturnType<typeof startTestGateway>>; files: string[] }>;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let tools: Set<string>;
  const tallies: Record<string, Record<string, number>> = {};

  const newKey = async (gw: Awaited<ReturnType<typeof startTestGateway>>, org: string) => {
    const { key } = await issueApiKey(gw.app.store, { org: `${org}-${randomUUID().slice(0, 8)}`, role: 'buyer' }, { now: new Date().toISOString() });
    await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
    return key;
  };

  beforeAll(async () => {
    receiver = await startReceiver();
    const claims: Record<string, string[]> = {};
    for (const [seller, env] of [['rules', {}], ['never', { APPROVAL_POLICY: 'never' }]] as const) {
      const gw = await startTestGateway({ ALLOW_PRIVATE_WEBHOOK_URLS: '1', SANDBOX_APPROVAL_DELAY_MS: '200', ...env });
      const key = await newKey(gw, 'corpus-setup');
      const list = (await (await fetch(`${gw.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) })).json()) as Json;
      tools = new Set(list.result.tools.map((t: { name: string }) => t.name));
      claims[seller] = ((await mcpAnswer(gw.url)('get_adcp_capabilities', {}, key)).body.specialisms ?? []) as string[];
      const specialisms = seller === 'rules' ? claims.rules! : claims.never!.filter((s) => !claims.rules!.includes(s));
      const base = seller === 'rules' ? [path.join(COMPLIANCE_31, 'universal'), path.join(COMPLIANCE_31, 'protocols', 'media-buy'), path.join(COMPLIANCE_31, 'protocols', 'governance')] : [];
      sellers[seller] = { gw, files: [...base, ...specialisms.map((s) => path.join(COMPLIANCE_31, 'specialisms', s))].flatMap(yamlFiles) };
    }
  }, 60_000);
  afterAll(async () => {
    // What each run checked, per tool (answers, then webhooks), for the record.
    if (Object.keys(tallies).length) console.log(`answers checked per tool:\n${JSON.stringify(tallies, null, 1)}`);
    await receiver?.close();
    for (const { gw } of Object.values(sellers)) await gw.stop();
  });

  const RUNS: { binding: 'MCP' | 'A2A'; pin: '3.1' | undefined; seller: Seller }[] = [
    { binding: 'MCP', pin: '3.1', seller: 'rules' },
    { binding: 'A2A', pin: '3.1', seller: 'rules' },
    { binding: 'MCP', pin: undefined, seller: 'rules' },
    { binding: 'A2A', pin: undefined, seller: 'rules' },
    { binding: 'MCP', pin: '3.1', seller: 'never' },
    { binding: 'MCP', pin: undefined, seller: 'never' },
  ];

  it.each(RUNS)('$binding, adcp_version $pin, $seller seller: every answer and webhook valid', async ({ binding, pin, seller }) => {
    const { gw, files } = sellers[seller];
    const release = pin ? release31() : release30();
    const call: CorpusCall = (binding === 'MCP' ? mcpAnswer : a2aAnswer)(gw.url);
    const run = `${binding}-${pin ?? 'none'}-${seller}`;
    const buyer = await newKey(gw, `corpus-${run}`);
    const other = await newKey(gw, `corpus-other-${run}`);
    // A pinned run pins every call, its fixtures' too; a call that names its own release (either
    // field: the version-negotiation probes) keeps it. An unpinned run drops every adcp_version.
    const pinned = (args: unknown): unknown => {
      if (!args || typeof args !== 'object' || Array.isArray(args)) return args;
      const { adcp_version, ...rest } = args as Json;
      if (!pin) return rest;
      return adcp_version === undefined && rest.adcp_major_version !== undefined ? rest : { ...rest, adcp_version: adcp_version ?? pin };
    };
    const hookPrefix = `/hook/${run}/`;
    const fx = await makeFixtures((tool, args, key) => call(tool, pinned(args), key), buyer, {}, { pending: seller === 'rules' });
    // The governance protocol's placeholders: a plan, and a check against it.
    const plan = { plan_id: `plan_${run.toLowerCase().replace(/[^a-z0-9]/g, '_')}`, brand: { domain: 'acme-outdoor.com' }, objectives: 'Corpus plan', budget: { total: 50_000, currency: 'USD', reallocation_threshold: 20_000 }, flight: { start: '2020-01-01T00:00:00Z', end: '2099-06-30T23:59:59Z' }, countries: ['US'] };
    const synced = await call('sync_plans', pinned({ idempotency_key: randomUUID(), plans: [plan] }), buyer);
    const checked = await call('check_governance', pinned({ plan_id: plan.plan_id, caller: 'https://pinnacle-media.com', tool: 'create_media_buy', payload: { account: LIVE, brand: { domain: 'acme-outdoor.com' }, start_time: 'asap', end_time: future(10), packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 1000 }] } }), buyer);
    expect({ synced: synced.isError, checked: checked.isError }).toEqual({ synced: false, checked: false });
    Object.assign(fx.context, {
      plan_id: plan.plan_id,
      check_id: checked.body.check_id,
      governance_context: checked.body.governance_context,
      product_1_id: 'news_display_run_of_site',
      pricing_option_1_id: 'cpm_usd_fixed',
      product_2_id: 'recipes_homepage_takeover',
      pricing_option_2_id: 'flat_fee_daily',
    });
    const fill = placeholderFiller(fx.context, () => `${receiver.origin}${hookPrefix}${randomUUID()}`);
    const corpus: CorpusEntry[] = storyboardSamples(files, tools, fill);
    const samples = corpus.length;
    corpus.push(...answerProbes(fx, other));
    // 3.1's own paths: the tasks it adds, and negotiation's errors (another major, a patch pin, fields that disagree).
    const probe = (tool: string, args: unknown) => corpus.push({ tool, args, source: 'probe' });
    probe('get_task_status', { task_id: fx.pending.task_id });
    probe('get_task_status', { task_id: 'task_nope' });
    probe('list_tasks', {});
    probe('list_tasks', { filters: { statuses: ['bogus'] } });
    probe('get_products', { adcp_version: '4.0', buying_mode: 'brief', brief: 'news' });
    probe('get_products', { adcp_version: '3.1.2', buying_mode: 'brief', brief: 'news' });
    probe('get_products', { adcp_version: '3.1', adcp_major_version: 4, buying_mode: 'brief', brief: 'news' });
    probe('get_media_buys', { media_buy_ids: [fx.buy.media_buy_id], adcp_version: '3.2' });
    // Webhooks: a sandbox guaranteed buy, approved by the simulated seller a moment later.
    for (let i = 0; i < 2; i++) probe('create_media_buy', { account: SANDBOX, brand: { domain: 'acme.example' }, idempotency_key: randomUUID(), start_time: 'asap', end_time: future(6 + i), push_notification_config: { url: `${receiver.origin}${hookPrefix}${randomUUID()}`, operation_id: `op-corpus-${i}` }, packages: [{ product_id: 'premium_ctv_guaranteed', pricing_option_id: 'cpm_usd_guaranteed', budget: 20_000 + i }] });
    // The governance tasks' own paths.
    probe('report_plan_outcome', { plan_id: plan.plan_id, governance_context: fx.context.governance_context, check_id: fx.context.check_id, outcome: 'completed', seller_response: { seller_reference: fx.buy.media_buy_id, committed_budget: 1000 }, idempotency_key: randomUUID() });
    probe('report_plan_outcome', { plan_id: 'plan_nope', outcome: 'completed', idempotency_key: randomUUID() });
    probe('get_plan_audit_logs', { plan_ids: [plan.plan_id], include_entries: true });
    probe('get_plan_audit_logs', { plan_ids: ['plan_nope'] });
    probe('check_governance', { plan_id: 'plan_nope', caller: 'https://pinnacle-media.com', tool: 'create_media_buy', payload: {} });
    probe('sync_plans', { idempotency_key: randomUUID(), plans: [{ plan_id: 'x' }] });
    probe('sync_governance', { idempotency_key: randomUUID(), accounts: [{ account: LIVE, governance_agents: [{ url: 'not a url' }] }] });
    probe('call_adcp_agent', { task: 'no_such_task', params: {} });

    const invalid: string[] = [];
    const tally: Record<string, number> = {};
    const answered = { success: new Set<string>(), error: new Set<string>() };
    const check = (what: string, v: SchemaValidation | undefined, body: unknown) => {
      if (v && !v.valid) invalid.push(`${what} ${v.schema}: ${v.errors.slice(0, 4).join('; ')} — sent ${JSON.stringify(body).slice(0, 300)}`);
    };
    // A sample that names only `adcp_major_version: 3` is a 3.0 request here (docs/mcp.md: the one
    // deliberate deviation, since that is what 3.0 buyers send): its answer is judged as 3.0's.
    const as30 = release30();
    for (const { tool, args, key, source } of corpus) {
      if (!tools.has(tool)) continue;
      const sent = pinned(args);
      const judge = pin && sent !== null && typeof sent === 'object' && (sent as Json).adcp_version === undefined ? as30 : release;
      const { isError, body } = await call(tool, sent, key ?? buyer);
      const judged = tool === 'call_adcp_agent' ? (args as { task: string }).task : tool;
      tally[tool] = (tally[tool] ?? 0) + 1;
      answered[isError ? 'error' : 'success'].add(tool);
      const what = `${tool} (${source}, ${isError ? 'error' : 'success'})`;
      if (pin && (sent as Json).adcp_version === pin && body.adcp_error?.code !== 'VERSION_UNSUPPORTED' && body.adcp_version !== pin) invalid.push(`${what}: no adcp_version "${pin}" echo — sent ${JSON.stringify(body).slice(0, 200)}`);
      if (ANSWERS_ERRORS_IN_BODY.has(judged)) check(what, judge.response(judged, body), body);
      else if (isError) {
        if (!body.adcp_error) invalid.push(`${what}: an error without adcp_error`);
        else check(what, judge.validate('core/error.json', body.adcp_error), body);
        for (const e of (body.errors ?? []) as unknown[]) check(what, judge.validate('core/error.json', e), body);
        if (judge.errorArm.has(judged)) check(what, judge.response(judged, body), body);
      } else check(what, judge.response(judged, body), body);
    }

    // The webhooks this run's registrations made a real receiver get, once they stop arriving.
    let count = -1;
    for (let waited = 0; waited < 20_000; waited += 2_000) {
      const now = receiver.received.filter((h) => h.path.startsWith(hookPrefix)).length;
      if (now === count) break;
      count = now;
      await new Promise((r) => setTimeout(r, 2_000));
    }
    const hooks = receiver.received.filter((h) => h.path.startsWith(hookPrefix));
    for (const hook of hooks) {
      const checks = webhookChecks(release, hook);
      const name = `webhook ${hook.json.task_type ?? 'delivery report'} (${hook.json.status ?? 'report'})`;
      tally[name] = (tally[name] ?? 0) + 1;
      if (typeof checks === 'string') invalid.push(`${name}: ${checks}`);
      else for (const v of checks) check(name, v, hook.json);
    }
    tallies[`${binding}, ${seller} seller, ${pin ? `adcp_version ${pin} against 3.1.19` : 'no adcp_version, against 3.0.6'}`] = tally;
    // Every invalid answer, for whoever works through them (the assertion shows the first 40).
    if (process.env.ADCP31_CORPUS_REPORT) fs.appendFileSync(process.env.ADCP31_CORPUS_REPORT, invalid.map((l) => `${run}\t${l}\n`).join(''));

    expect(samples).toBeGreaterThanOrEqual(seller === 'rules' ? 400 : 20);
    // The rules seller's corpus reaches everything (the confirming seller's adds its specialisms'
    // samples; its guaranteed buys are confirmed at once, so no task waits and no webhook follows).
    if (seller === 'rules') expect(hooks.length).toBeGreaterThan(0);
    // Every tool this agent lists answered both ways, but the two aliases of tasks_get / tasks_list.
    const listed = seller === 'rules' ? [...tools].filter((t) => !t.includes('/')) : [];
    expect({ noSuccess: listed.filter((t) => !answered.success.has(t)), noError: listed.filter((t) => !answered.error.has(t)) }).toEqual({ noSuccess: [], noError: [] });
    // Last, so that the corpus's reach is checked even while answers are not yet valid.
    expect({ invalid: invalid.length, first: invalid.slice(0, 40) }).toEqual({ invalid: 0, first: [] });
  }, 600_000);
});

// The corpus's storyboards must be there: a missing tree would make an empty corpus pass.
it('the 3.1.18 compliance tree is present', () => {
  expect(fs.existsSync(path.join(COMPLIANCE_31, 'index.json'))).toBe(true);
});
