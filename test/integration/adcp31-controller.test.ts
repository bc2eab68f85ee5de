import { randomUUID } from 'node:crypto';
import { issueApiKey } from '../../src/application/api-keys';
import fs from 'fs';
import path from 'path';
import { CONTROLLER_SCENARIOS } from '../../src/application/sandbox/controller';
import { validateAdcp3Response } from '../../src/wire/adcp3/schemas';
import { ADCP31_SCHEMA_DIR, adcp31 } from '../support/adcp31';
import { a2aCall } from '../support/a2a-call';
import { startTestGateway } from '../support/gateway';
import { mcpCall } from '../support/mcp-call';

type Json = Record<string, any>;
type Call = (name: string, args: Json) => Promise<{ isError: boolean; body: Json }>;

/**
 * The compliance test controller for a 3.1 buyer (issue 36, part 3), over MCP and A2A: every
 * answer valid against 3.1.19's compliance/comply-test-controller-response.json (and each task
 * answer against its tool's), `account.sandbox: true` required, unknown scenarios answered
 * UNKNOWN_SCENARIO, list_scenarios naming what this seller runs, and the scenarios 3.1 adds
 * (seed_account, force_get_products_arm, force_upstream_unavailable) acting for real on the
 * caller's sandbox. A caller without a pin gets the controller it always had.
 */

/**
 * get_products' `cache_scope` (and the task `status` on errors) are part 1's (issue 36, the
 * media-buy answers): supplied here only when the answer lacks them, so the check holds before
 * and after that lands, and still fails on anything else.
 */
const part1 = (tool: string, body: Json): Json => ({ ...(tool === 'get_products' && body.products ? { cache_scope: 'public' } : {}), ...(body.adcp_error ? { status: 'failed' } : {}), ...body });

function expectValid31(tool: string, body: Json): void {
  expect({ tool, validation: adcp31().validateResponse(tool, part1(tool, body)) }).toMatchObject({ tool, validation: { valid: true } });
}

describe('AdCP 3.1 comply_test_controller, MCP and A2A', () => {
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  const keys: Record<string, string> = {};

  beforeAll(async () => {
    gw = await startTestGateway();
    const now = new Date().toISOString();
    for (const org of ['mcp-buyer', 'a2a-buyer', 'mcp-stale', 'a2a-stale', 'live-only']) keys[org] = (await issueApiKey(gw.app.store, { org, role: 'buyer' }, { now })).key;
    // The two buyers test in a sandbox account and also hold live ones (synced below): with
    // `{sandbox: true}` alone the controller checks each entity; a caller whose accounts are all
    // live is refused outright (the last test).
    for (const org of ['mcp-buyer', 'a2a-buyer']) {
      const synced = await mcpCall(gw.url, keys[org]!, 'sync_accounts', { accounts: [{ brand: { domain: `${org}.example` }, operator: 'pinnacle-agency.example', billing: 'operator', sandbox: true }], idempotency_key: randomUUID() });
      expect(synced.body.accounts?.[0]).toMatchObject({ sandbox: true });
    }
    await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
  });

  it('a caller whose every account is live is refused before any scenario runs, even with account: {sandbox: true}', async () => {
    const key = keys['live-only']!;
    await mcpCall(gw.url, key, 'sync_accounts', { accounts: [{ brand: { domain: 'live-only-buyer.com' }, operator: 'agency.com', billing: 'operator' }], idempotency_key: randomUUID() });
    for (const scenario of ['force_creative_status', 'list_scenarios', 'no_such_scenario']) {
      const { isError, body } = await mcpCall(gw.url, key, 'comply_test_controller', { adcp_version: '3.1', scenario, account: { sandbox: true }, params: { creative_id: 'probe', status: 'approved' } }, { validate: false });
      expect({ scenario, isError, body }).toMatchObject({ scenario, isError: true, body: { success: false, error: 'FORBIDDEN', status: 'failed' } });
      expectValid31('comply_test_controller', body);
    }
  });
  /**
   * Issue 45, finding 8 (c): on the 3.0 wire (no pin, no `account`) the mode gate was skipped, so a
   * caller whose every account is live could seed a buy, and it sat in its live get_media_buys.
   * One rule on both wires: refused FORBIDDEN (3.0's ControllerError), nothing seeded.
   */
  it('on 3.0 too (no pin, no account), a caller whose every account is live is refused and seeds nothing its live reads show', async () => {
    const key = (await issueApiKey(gw.app.store, { org: 'live-only-30', role: 'buyer' }, { now: new Date().toISOString() })).key;
    await mcpCall(gw.url, key, 'sync_accounts', { accounts: [{ brand: { domain: 'live-only-30-buyer.com' }, operator: 'agency.com', billing: 'operator' }], idempotency_key: randomUUID() });
    await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
    const attempts: [string, Json][] = [
      ['list_scenarios', {}],
      ['seed_media_buy', { media_buy_id: 'mb_fixture_live_probe', fixture: { status: 'active', total_budget: 5000 } }],
      ['seed_product', { product_id: 'live_probe_product' }],
    ];
    for (const [binding, call] of [
      ['MCP', (args: Json) => mcpCall(gw.url, key, 'comply_test_controller', args, { validate: false })],
      ['A2A', (args: Json) => a2aCall(gw.url, key, 'comply_test_controller', args)],
    ] as const) {
      for (const [scenario, params] of attempts) {
        const { isError, body } = await call({ scenario, params });
        expect({ binding, scenario, isError, body }).toMatchObject({ binding, scenario, isError: true, body: { success: false, error: 'FORBIDDEN' } });
        // 3.0's ControllerError: no 3.1 status on an unpinned call.
        expect(body.status).toBeUndefined();
      }
    }
    const buys = await mcpCall(gw.url, key, 'get_media_buys', {});
    expect(buys.body.media_buys).toEqual([]);
    const products = await mcpCall(gw.url, key, 'get_products', { buying_mode: 'brief', brief: 'live probe' });
    expect(products.body.products.map((p: Json) => p.product_id)).not.toContain('live_probe_product');
  });

  afterAll(async () => {
    await gw?.stop();
  });

  const SANDBOX = { sandbox: true };
  /** A sandbox account by natural key (a brand on a domain reserved for examples). */
  const SANDBOX_BRAND = { brand: { domain: 'acmeoutdoor.example' }, operator: 'pinnacle-agency.example' };
  const pin = (args: Json): Json => ({ adcp_version: '3.1', context: { correlation_id: `c-${randomUUID()}` }, ...args });

  describe.each<[string, (key: string) => Call]>([
    ['MCP', (key) => (name, args) => mcpCall(gw.url, key, name, args, { validate: false })],
    ['A2A', (key) => (name, args) => a2aCall(gw.url, key, name, args)],
  ])('over %s', (binding, callFor) => {
    const call: Call = (name, args) => callFor(keys[`${binding.toLowerCase()}-buyer`]!)(name, args);
    const controller = async (args: Json) => {
      const sent = pin(args);
      const answer = await call('comply_test_controller', sent);
      expect(answer.body).toMatchObject({ adcp_version: '3.1', context: sent.context });
      expectValid31('comply_test_controller', answer.body);
      return answer;
    };

    it('list_scenarios names every scenario this seller runs in 3.1, the new ones included; a 3.0 caller gets its list as before', async () => {
      const { isError, body } = await controller({ scenario: 'list_scenarios', account: SANDBOX });
      expect(isError).toBe(false);
      expect(body).toMatchObject({ success: true, status: 'completed' });
      expect(body.scenarios).toEqual(expect.arrayContaining(['force_media_buy_status', 'force_create_media_buy_arm', 'seed_product', 'seed_account', 'force_get_products_arm', 'force_upstream_unavailable']));
      // Every name is a scenario 3.1.19's request schema defines (list_scenarios names no private ones).
      const request = JSON.parse(fs.readFileSync(path.join(ADCP31_SCHEMA_DIR, 'compliance', 'comply-test-controller-request.json'), 'utf8'));
      const defined = new Set(request.allOf.map((b: Json) => b.if?.properties?.scenario?.const).filter(Boolean));
      expect(body.scenarios.filter((s: string) => !defined.has(s))).toEqual([]);
      const plain = await call('comply_test_controller', { scenario: 'list_scenarios' });
      expect(plain.isError).toBe(false);
      expect(plain.body.adcp_version).toBeUndefined();
      expect(plain.body.status).toBeUndefined();
      expect(plain.body.scenarios).not.toContain('seed_account');
      expect(plain.body.scenarios).not.toContain('force_get_products_arm');
      // And the 3.0 caller is refused the 3.1 scenarios as any unknown one.
      expect((await call('comply_test_controller', { scenario: 'seed_account', params: { account_id: 'acct_fixture_30' } })).body).toMatchObject({ success: false, error: 'UNKNOWN_SCENARIO' });
    });

    it('a 3.1 request must assert account.sandbox: true (missing, or false: INVALID_PARAMS); a named live account is FORBIDDEN', async () => {
      for (const account of [undefined, { sandbox: false }, 'sandbox']) {
        const { isError, body } = await controller({ scenario: 'list_scenarios', ...(account === undefined ? {} : { account }) });
        expect(isError).toBe(true);
        expect(body).toMatchObject({ success: false, error: 'INVALID_PARAMS', status: 'failed' });
        expect(body.error_detail).toMatch(/sandbox/);
      }
      const synced = await call('sync_accounts', { accounts: [{ brand: { domain: `live-${binding.toLowerCase()}.com` }, operator: 'agency.com', billing: 'operator' }], idempotency_key: randomUUID() });
      expect(synced.isError).toBe(false);
      const live = synced.body.accounts[0].account_id;
      const { isError, body } = await controller({ scenario: 'force_account_status', account: { account_id: live, sandbox: true }, params: { account_id: live, status: 'suspended' } });
      expect(isError).toBe(true);
      expect(body).toMatchObject({ success: false, error: 'FORBIDDEN' });
      // Named through the scenario alone, the live account is refused too.
      expect((await controller({ scenario: 'force_account_status', account: SANDBOX, params: { account_id: live, status: 'suspended' } })).body).toMatchObject({ success: false, error: 'FORBIDDEN' });
    });

    it('an unknown scenario string is accepted and answered UNKNOWN_SCENARIO', async () => {
      const { isError, body } = await controller({ scenario: 'force_something_from_3_4', account: SANDBOX, params: { anything: 1 } });
      expect(isError).toBe(true);
      expect(body).toMatchObject({ success: false, error: 'UNKNOWN_SCENARIO', status: 'failed' });
    });

    it('force_create_media_buy_arm answers a closed `forced` {arm, task_id} in 3.1 (3.0 still names the operation)', async () => {
      const taskId = `task_${binding}_${randomUUID().slice(0, 8)}`;
      const { body } = await controller({ scenario: 'force_create_media_buy_arm', account: SANDBOX, params: { arm: 'submitted', task_id: taskId } });
      expect(body).toMatchObject({ success: true, status: 'completed' });
      expect(body.forced).toEqual({ arm: 'submitted', task_id: taskId });
      const plain = await call('comply_test_controller', { scenario: 'force_create_media_buy_arm', params: { arm: 'submitted', task_id: `${taskId}_30` } });
      expect(plain.body.forced).toEqual({ scenario: 'create_media_buy', arm: 'submitted', task_id: `${taskId}_30` });
    });

    it('seed_account makes the sandbox account the fixture names, in its status; the same seed again is `existing`, a diverging one INVALID_PARAMS; force_account_status then moves it', async () => {
      const id = `acct_seeded_${binding.toLowerCase()}`;
      const seeded = await controller({ scenario: 'seed_account', account: SANDBOX, params: { account_id: id, fixture: { status: 'payment_required' } } });
      expect(seeded).toMatchObject({ isError: false, body: { success: true } });
      const listed = await call('list_accounts', { sandbox: true });
      expect(listed.body.accounts).toEqual(expect.arrayContaining([expect.objectContaining({ account_id: id, status: 'payment_required', sandbox: true })]));
      const again = await controller({ scenario: 'seed_account', account: SANDBOX, params: { account_id: id, fixture: { status: 'payment_required' } } });
      expect(again.body).toMatchObject({ success: true, previous_state: 'existing', current_state: 'payment_required' });
      const diverging = await controller({ scenario: 'seed_account', account: SANDBOX, params: { account_id: id, fixture: { status: 'active' } } });
      expect(diverging.body).toMatchObject({ success: false, error: 'INVALID_PARAMS' });
      const forced = await controller({ scenario: 'force_account_status', account: { account_id: id, sandbox: true }, params: { account_id: id, status: 'active' } });
      expect(forced.body).toMatchObject({ success: true, previous_state: 'payment_required', current_state: 'active' });
      // An id of the shape this seller issues, or a fixture claiming a live account, is refused.
      for (const params of [{ account_id: 'acct_ABCDEFGHIJKLMNOPQRSTUV' }, { account_id: `${id}_2`, fixture: { sandbox: false } }, { account_id: `${id}_3`, fixture: { status: 'dormant' } }, {}]) {
        expect((await controller({ scenario: 'seed_account', account: SANDBOX, params })).body).toMatchObject({ success: false, error: 'INVALID_PARAMS' });
      }
    });

    it('force_get_products_arm: the next curated get_products under a sandbox account is submitted with the forced task_id (a wholesale read does not take it), then products again', async () => {
      const taskId = `task_gp_${binding}_${randomUUID().slice(0, 8)}`;
      const forced = await controller({ scenario: 'force_get_products_arm', account: SANDBOX, params: { arm: 'submitted', task_id: taskId, message: 'Curation queued' } });
      expect(forced.body).toMatchObject({ success: true, forced: { arm: 'submitted', task_id: taskId } });
      const wholesale = await call('get_products', pin({ buying_mode: 'wholesale', account: SANDBOX_BRAND }));
      expect(wholesale.isError).toBe(false);
      expect(wholesale.body.products.length).toBeGreaterThan(0);
      const submitted = await call('get_products', pin({ buying_mode: 'brief', brief: 'outdoor video', account: SANDBOX_BRAND }));
      expect(submitted.isError).toBe(false);
      expect(submitted.body).toMatchObject({ status: 'submitted', task_id: taskId, message: 'Curation queued', adcp_version: '3.1' });
      expect(submitted.body.products).toBeUndefined();
      expectValid31('get_products', submitted.body);
      // The task is the buyer's to poll under the id it forced.
      const polled = await call('tasks_get', pin({ task_id: taskId }));
      expect(polled).toMatchObject({ isError: false, body: { task_id: taskId, status: 'submitted' } });
      const after = await call('get_products', pin({ buying_mode: 'brief', brief: 'outdoor video', account: SANDBOX_BRAND }));
      expect(after.body.products.length).toBeGreaterThan(0);
      // 3.1.19 allows only the submitted arm here.
      expect((await controller({ scenario: 'force_get_products_arm', account: SANDBOX, params: { arm: 'completed', task_id: 't' } })).body).toMatchObject({ success: false, error: 'INVALID_PARAMS' });
    });

    it('force_upstream_unavailable: later get_products under a sandbox account succeed from the last catalog read with a STALE_RESPONSE advisory; other callers and live reads are untouched', async () => {
      const stale = callFor(keys[`${binding.toLowerCase()}-stale`]!);
      const before = await stale('get_products', pin({ buying_mode: 'brief', brief: 'display', account: SANDBOX_BRAND }));
      expect(before.body.errors).toBeUndefined();
      const forced = await stale('comply_test_controller', pin({ scenario: 'force_upstream_unavailable', account: SANDBOX, params: { tool: 'get_products', upstream_name: 'inventory-service' } }));
      expect(forced.body).toMatchObject({ success: true, previous_state: 'available', current_state: 'unavailable' });
      expectValid31('comply_test_controller', forced.body);
      const { isError, body } = await stale('get_products', pin({ buying_mode: 'brief', brief: 'display', account: SANDBOX_BRAND }));
      expect(isError).toBe(false);
      expect(body.adcp_error).toBeUndefined();
      expect(body.products.map((p: Json) => p.product_id)).toEqual(before.body.products.map((p: Json) => p.product_id));
      expect(body.errors).toHaveLength(1);
      const [advisory] = body.errors;
      expect(advisory).toMatchObject({ code: 'STALE_RESPONSE', field: 'products', recovery: 'transient', details: { served_from_cache: true, upstream: { name: 'inventory-service' } } });
      expect(Number.isInteger(advisory.details.cache_age_seconds) && advisory.details.cache_age_seconds >= 0).toBe(true);
      expect(adcp31().validate('core/error.json', advisory)).toMatchObject({ valid: true });
      expect(adcp31().validate('error-details/stale-response.json', advisory.details)).toMatchObject({ valid: true });
      expectValid31('get_products', body);
      // No account (the operator's catalog, perhaps a live buyer's read): no advisory. Nor for another buyer.
      expect((await stale('get_products', pin({ buying_mode: 'brief', brief: 'display' }))).body.errors).toBeUndefined();
      expect((await call('get_products', pin({ buying_mode: 'brief', brief: 'display', account: SANDBOX_BRAND }))).body.errors).toBeUndefined();
      // Only get_products (or '*') can be served stale here.
      expect((await stale('comply_test_controller', pin({ scenario: 'force_upstream_unavailable', account: SANDBOX, params: { tool: 'create_media_buy' } }))).body).toMatchObject({ success: false, error: 'INVALID_PARAMS' });
    });

    it('a caller without a pin: the controller as before (no account needed, no task status, the 3.0 scenarios)', async () => {
      const { isError, body } = await call('comply_test_controller', { scenario: 'list_scenarios' });
      expect(isError).toBe(false);
      expect(body).toEqual({ success: true, scenarios: [...CONTROLLER_SCENARIOS] });
      // Its get_products stays 3.0.6-valid.
      const products = await call('get_products', { buying_mode: 'brief', brief: 'video' });
      expect(validateAdcp3Response('get_products', products.body)).toMatchObject({ valid: true });
    });
  });
});
