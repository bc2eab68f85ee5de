import { randomUUID } from 'node:crypto';
import { issueApiKey } from '../../src/application/api-keys';
import { validateAdcp3Response } from '../../src/wire/adcp3/schemas';
import { adcp31 } from '../support/adcp31';
import { a2aAnswer, future, LIVE, mcpAnswer, type CorpusCall } from '../support/answer-corpus';
import { startTestGateway } from '../support/gateway';

type Json = Record<string, any>;

/**
 * The governance tasks in 3.1 (issue 36): 3.1 makes `status` the task's status on every answer,
 * so a check's decision is `verdict`, an outcome's acceptance `outcome_state`, and an audit
 * entry's decision `verdict`. A call pinned to 3.1 gets those names and is valid against 3.1.19;
 * the same calls without a pin get 3.0's `status` and are valid against 3.0.6, over MCP and A2A.
 */
describe('governance answers in 3.1 and in 3.0', () => {
  let gw: Awaited<ReturnType<typeof startTestGateway>>;

  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(async () => {
    await gw?.stop();
  });

  describe.each<[string, (url: string) => CorpusCall]>([
    ['MCP', mcpAnswer],
    ['A2A', a2aAnswer],
  ])('over %s', (_binding, bindingCall) => {
    /** sync_plans, a check within budget and one over it, an outcome, the audit log: as one buyer, pinned or not. */
    const lifecycle = async (pin: Json) => {
      const call = bindingCall(gw.url);
      const { key } = await issueApiKey(gw.app.store, { org: `gov-${randomUUID().slice(0, 8)}`, role: 'buyer' }, { now: new Date().toISOString() });
      await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
      const plan_id = `plan_${randomUUID().slice(0, 8)}`;
      const plan = { plan_id, brand: { domain: 'acme-outdoor.com' }, objectives: 'Q3 outdoor', budget: { total: 10_000, currency: 'USD' }, flight: { start: '2020-01-01T00:00:00Z', end: '2099-06-30T23:59:59Z' }, countries: ['US'] };
      const synced = await call('sync_plans', { ...pin, idempotency_key: randomUUID(), plans: [plan] }, key);
      expect(synced.isError).toBe(false);
      const check = (budget: number) =>
        call('check_governance', { ...pin, plan_id, caller: 'https://pinnacle-media.com', tool: 'create_media_buy', payload: { account: LIVE, brand: { domain: 'acme-outdoor.com' }, start_time: 'asap', end_time: future(10), packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget }] } }, key);
      const approved = await check(1_000);
      const denied = await check(50_000);
      const outcome = await call('report_plan_outcome', { ...pin, plan_id, governance_context: approved.body.governance_context, check_id: approved.body.check_id, outcome: 'completed', seller_response: { seller_reference: 'mb_1', committed_budget: 1_000 }, idempotency_key: randomUUID() }, key);
      const audit = await call('get_plan_audit_logs', { ...pin, plan_ids: [plan_id], include_entries: true }, key);
      for (const a of [approved, denied, outcome, audit]) expect(a.isError).toBe(false);
      return { approved: approved.body, denied: denied.body, outcome: outcome.body, audit: audit.body };
    };

    it('pinned to 3.1: verdict, outcome_state and the entries\' verdict beside the task status; valid against 3.1.19', async () => {
      const { approved, denied, outcome, audit } = await lifecycle({ adcp_version: '3.1' });
      expect(approved).toMatchObject({ adcp_version: '3.1', status: 'completed', verdict: 'approved' });
      expect(denied).toMatchObject({ status: 'completed', verdict: 'denied' });
      expect(outcome).toMatchObject({ status: 'completed', outcome_state: 'accepted' });
      const entries = audit.plans[0].entries as Json[];
      expect(entries.filter((e) => e.type === 'check').map((e) => [e.verdict, e.status])).toEqual([
        ['approved', undefined],
        ['denied', undefined],
      ]);
      // The plan's own status is its lifecycle, in 3.1 as in 3.0.
      expect(audit.plans[0].status).toBe('active');
      const v = adcp31();
      expect({
        check: v.validateResponse('check_governance', approved).errors,
        denied: v.validateResponse('check_governance', denied).errors,
        outcome: v.validateResponse('report_plan_outcome', outcome).errors,
        audit: v.validateResponse('get_plan_audit_logs', audit).errors,
      }).toEqual({ check: [], denied: [], outcome: [], audit: [] });
      // 3.0's names would not do in 3.1: the check is a real one.
      expect(v.validateResponse('check_governance', { ...approved, verdict: undefined, status: 'approved' }).valid).toBe(false);
    });

    it('without a pin: 3.0\'s status, as before; valid against 3.0.6', async () => {
      const { approved, denied, outcome, audit } = await lifecycle({});
      expect(approved).toMatchObject({ status: 'approved' });
      expect(approved).not.toHaveProperty('verdict');
      expect(approved).not.toHaveProperty('adcp_version');
      expect(denied).toMatchObject({ status: 'denied' });
      expect(outcome).toMatchObject({ status: 'accepted' });
      expect(outcome).not.toHaveProperty('outcome_state');
      expect((audit.plans[0].entries as Json[]).filter((e) => e.type === 'check').map((e) => e.status)).toEqual(['approved', 'denied']);
      expect({
        check: validateAdcp3Response('check_governance', approved).errors,
        outcome: validateAdcp3Response('report_plan_outcome', outcome).errors,
        audit: validateAdcp3Response('get_plan_audit_logs', audit).errors,
      }).toEqual({ check: [], outcome: [], audit: [] });
    });
  });
});
