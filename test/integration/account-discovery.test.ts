import { issueApiKey } from '../../src/application/api-keys';
import { startTestGateway } from '../support/gateway';
import { mcpCall } from '../support/mcp-call';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;

const future = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();
const create = (account: unknown, key: string) => ({
  account,
  brand: { domain: 'acme.com' },
  packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 1000 }],
  start_time: 'asap',
  end_time: future(10),
  idempotency_key: key,
});

/**
 * Issue 35, item 5: what a buyer learns of accounts before it trips on them. get_adcp_capabilities
 * says accounts are implicit and that sandbox accounts exist (schema-checked by mcpCall), and an
 * unknown account answers with the recovery that fits: sync it first (correctable) for a brand and
 * operator this buyer never synced, terminal for an id this seller issued to nobody of theirs.
 */
describe('accounts: discovery and the recovery of ACCOUNT_NOT_FOUND', () => {
  let gw: Gateway;
  let key: string;

  beforeAll(async () => {
    gw = await startTestGateway();
    key = (await issueApiKey(gw.app.ports.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
  });
  afterAll(async () => {
    await gw?.stop();
  });

  it('get_adcp_capabilities has an account block: implicit accounts, products without one, sandbox', async () => {
    const { body } = await mcpCall(gw.url, key, 'get_adcp_capabilities', {});
    expect(body.account).toEqual({ require_operator_auth: false, supported_billing: ['operator', 'agent', 'advertiser'], required_for_products: false, account_financials: true, sandbox: true });
  });

  it('a brand and operator never synced: ACCOUNT_NOT_FOUND, correctable (sync_accounts first)', async () => {
    const answer = await mcpCall(gw.url, key, 'create_media_buy', create({ brand: { domain: 'acme.com' }, operator: 'agency.com' }, 'acct-recovery-000000001'));
    expect(answer.isError).toBe(true);
    expect(answer.body.adcp_error).toMatchObject({ code: 'ACCOUNT_NOT_FOUND', recovery: 'correctable', message: expect.stringContaining('call sync_accounts first') });
    expect(answer.body.adcp_error.details?.recovery).toBeUndefined();

    // And once synced, the same create goes through.
    const synced = await mcpCall(gw.url, key, 'sync_accounts', { accounts: [{ brand: { domain: 'acme.com' }, operator: 'agency.com', billing: 'operator' }], idempotency_key: 'acct-recovery-sync-00001' });
    expect(synced.isError).toBe(false);
    const created = await mcpCall(gw.url, key, 'create_media_buy', create({ brand: { domain: 'acme.com' }, operator: 'agency.com' }, 'acct-recovery-000000002'));
    expect(created.isError).toBe(false);
  });

  it('an issued-shape account_id that is none of the caller\'s: ACCOUNT_NOT_FOUND, terminal', async () => {
    const answer = await mcpCall(gw.url, key, 'create_media_buy', create({ account_id: `acct_${'x'.repeat(22)}` }, 'acct-recovery-000000003'));
    expect(answer.body.adcp_error).toMatchObject({ code: 'ACCOUNT_NOT_FOUND', recovery: 'terminal' });
  });
});
