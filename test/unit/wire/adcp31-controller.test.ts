import { adcp30 } from '../../../src/wire/adcp3/answers';
import { adcp31 } from '../../../src/wire/adcp31/answers';
import { REQUEST_RULES } from '../../../src/wire/requests-by-release';
import { adcp31 as schemas31 } from '../../support/adcp31';

const ctx = { now: new Date('2026-11-27T12:00:00Z') };

/** Issue 36, part 3: the 3.1 codec's controller, sync_governance and capabilities encoders, and 3.1's request rules. */
describe('AdCP 3.1 codec: comply_test_controller', () => {
  it('adds the task status (completed, or failed on a controller error) and closes `forced` to {arm, task_id}; each arm valid against 3.1.19', () => {
    const cases = [
      { success: true, scenarios: ['seed_account'] },
      { success: true, previous_state: 'active', current_state: 'paused' },
      { success: true, simulated: { impressions: 1 }, cumulative: { impressions: 1 } },
      { success: true, forced: { scenario: 'create_media_buy', arm: 'submitted', task_id: 't1' }, message: 'm' },
      { success: true, message: 'seeded' },
      { success: false, error: 'UNKNOWN_SCENARIO', error_detail: 'no' },
    ];
    for (const result of cases) {
      const body: Record<string, unknown> = { ...adcp31.answer('comply_test_controller', result, ctx), adcp_version: '3.1' };
      expect(body.status).toBe(result.success ? 'completed' : 'failed');
      expect({ result, validation: schemas31().validateResponse('comply_test_controller', body) }).toMatchObject({ validation: { valid: true } });
    }
    expect(adcp31.answer('comply_test_controller', cases[3]!, ctx).forced).toEqual({ arm: 'submitted', task_id: 't1' });
    // 3.0's answer is the controller's as it was.
    expect(adcp30.answer('comply_test_controller', cases[3]!, ctx)).toEqual(cases[3]);
  });
});

describe('AdCP 3.1 codec: sync_governance and capabilities', () => {
  it('answers each account\'s governance agent as {url} (3.0 keeps categories)', () => {
    const result = { accounts: [{ account: { account_id: 'a' }, status: 'synced', governance_agents: [{ url: 'https://g.example/mcp', categories: ['budget_authority'] }] }] };
    expect(adcp31.answer('sync_governance', result, ctx).accounts[0].governance_agents).toEqual([{ url: 'https://g.example/mcp' }]);
    expect(adcp30.answer('sync_governance', result, ctx)).toEqual(result);
  });

  it('3.1 declares governance_aware and every controller scenario; 3.0 narrows the scenarios to 3.0.6\'s enum', () => {
    const declared = { media_buy: { features: {} }, compliance_testing: { scenarios: ['force_media_buy_status', 'seed_product', 'seed_account', 'simulate_delivery'] } };
    expect(adcp31.capabilities(declared)).toMatchObject({ media_buy: { governance_aware: true }, compliance_testing: { scenarios: declared.compliance_testing.scenarios } });
    expect(adcp30.capabilities(declared)).toEqual({ media_buy: { features: {} }, compliance_testing: { scenarios: ['force_media_buy_status', 'simulate_delivery'] } });
  });
});

describe('AdCP 3.1 request rules', () => {
  const agent = { url: 'https://g.example/mcp', authentication: { schemes: ['Bearer'], credentials: 'x'.repeat(32) } };
  it('get_products is a keyed read in 3.1 only, and its key must be a key', () => {
    expect(REQUEST_RULES['3.1'].keyedReads.has('get_products')).toBe(true);
    expect(REQUEST_RULES['3.0'].keyedReads.size).toBe(0);
    expect(() => REQUEST_RULES['3.1'].check('get_products', { idempotency_key: 'short' })).toThrow(expect.objectContaining({ code: 'INVALID_REQUEST', field: 'idempotency_key' }));
    expect(() => REQUEST_RULES['3.1'].check('get_products', { idempotency_key: 'a-read-key-0000000001' })).not.toThrow();
    // Other reads tolerate whatever key they are sent (it is an envelope field there).
    expect(() => REQUEST_RULES['3.1'].check('list_accounts', { idempotency_key: 'short' })).not.toThrow();
  });

  it('sync_governance: one agent per account, without categories, in 3.1; 3.0 allows both', () => {
    const two = { accounts: [{ account: {}, governance_agents: [agent, agent] }] };
    const categories = { accounts: [{ account: {}, governance_agents: [{ ...agent, categories: ['x'] }] }] };
    expect(() => REQUEST_RULES['3.1'].check('sync_governance', two)).toThrow(expect.objectContaining({ code: 'INVALID_REQUEST', field: 'accounts[0].governance_agents' }));
    expect(() => REQUEST_RULES['3.1'].check('sync_governance', categories)).toThrow(expect.objectContaining({ field: 'accounts[0].governance_agents[0].categories' }));
    expect(() => REQUEST_RULES['3.1'].check('sync_governance', { accounts: [{ account: {}, governance_agents: [agent] }] })).not.toThrow();
    expect(() => REQUEST_RULES['3.0'].check('sync_governance', two)).not.toThrow();
  });
});
