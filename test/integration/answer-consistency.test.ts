import { issueApiKey } from '../../src/application/api-keys';
import { mcpCall } from '../support/mcp-call';
import { eventually } from '../support/infra';
import { graphql, startTestGateway } from '../support/gateway';
import { startReceiver } from '../support/receiver';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;
type Json = Record<string, any>;

const future = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const ACCOUNT = { brand: { domain: 'acme-outdoor.com' }, operator: 'pinnacle-media.com' };
const AGENT = 'https://creative.adcontextprotocol.org';
const banner = (id: string) => ({ creative_id: id, name: 'MPU', format_id: { agent_url: AGENT, id: 'display_300x250' }, assets: { image: { url: 'https://cdn.acme.example/mpu.png', width: 300, height: 250 } } });
let n = 0;
const key = (what: string) => `answers-${what}-${Date.now()}-${++n}`.padEnd(16, '0');

/** A 3.0 buyer (the official SDK's wire) over MCP, with `fetch`. */
async function mcp(gw: Gateway, apiKey: string, name: string, args: Json): Promise<Json> {
  const answer = await mcpCall(gw.url, apiKey, name, args, { validate: false });
  expect({ name, error: answer.isError ? answer.body : undefined }).toEqual({ name, error: undefined });
  return answer.body;
}

async function buyerOf(gw: Gateway): Promise<string> {
  const apiKey = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
  await mcp(gw, apiKey, 'sync_accounts', { accounts: [{ ...ACCOUNT, billing: 'operator' }], idempotency_key: key('accounts') });
  return apiKey;
}

const createArgs = (over: Json = {}): Json => ({
  account: ACCOUNT,
  brand: { domain: 'acme-outdoor.com' },
  idempotency_key: key('create'),
  start_time: 'asap',
  end_time: future(10),
  packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 2000 }],
  ...over,
});

const buyOf = async (gw: Gateway, apiKey: string, id: string) => (await mcp(gw, apiKey, 'get_media_buys', { account: ACCOUNT, media_buy_ids: [id] })).media_buys[0] as Json;

/** Issue 35, item 4: every binding tells one story about a buy (one default gateway, one with manual approval). */
describe('answers that agree with each other (AdCP 3.0 over MCP)', () => {
  let gw: Gateway;
  let manual: Gateway;
  let buyer: string;
  let manualBuyer: string;
  let seller: string;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    receiver = await startReceiver();
    gw = await startTestGateway({ ALLOW_PRIVATE_WEBHOOK_URLS: '1', WEBHOOK_KEY_PURPOSE: 'webhook-signing' });
    manual = await startTestGateway({ APPROVAL_POLICY: 'manual', ALLOW_PRIVATE_WEBHOOK_URLS: '1', WEBHOOK_KEY_PURPOSE: 'webhook-signing' });
    buyer = await buyerOf(gw);
    manualBuyer = await buyerOf(manual);
    seller = (await issueApiKey(manual.app.store, { org: 'publisher', role: 'seller' }, { now: new Date().toISOString() })).key;
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
    await manual?.stop();
    await receiver?.close();
  });

  const approve = async (taskId: string) => {
    const approved = await graphql(manual.url, 'mutation($t: ID!) { approveTask(taskId: $t) }', { t: taskId }, seller);
    expect(approved.body.errors).toBeUndefined();
  };
  /** Creates a buy that waits for the seller, then approves it; `before` is just before the approval was asked. */
  const approvedBuy = async (over: Json = {}) => {
    const created = await mcp(manual, manualBuyer, 'create_media_buy', createArgs(over));
    expect(created).toMatchObject({ status: 'submitted', task_id: expect.any(String) });
    await sleep(50);
    const before = new Date().toISOString();
    await approve(created.task_id);
    const task = (await eventually(async () => {
      const t = await mcp(manual, manualBuyer, 'tasks_get', { account: ACCOUNT, task_id: created.task_id });
      return t.status === 'completed' ? t : undefined;
    }, 10_000, 'task completed'))!;
    const id = task.result.media_buy_id as string;
    const buy = (await eventually(async () => {
      const b = await buyOf(manual, manualBuyer, id);
      return b?.confirmed_at ? b : undefined;
    }, 10_000, 'buy approved'))!;
    return { created, before, task, id, buy };
  };

  it('(a) after a creative sync, get_media_buys and get_media_buy_delivery tell one status, and the period never ends before it starts', async () => {
    const start = future(2);
    const created = await mcp(gw, buyer, 'create_media_buy', createArgs({ start_time: start, reporting_webhook: { url: `${receiver.origin}/reports/a`, reporting_frequency: 'daily' } }));
    expect(created.status).toBe('pending_creatives');
    await mcp(gw, buyer, 'sync_creatives', {
      account: ACCOUNT,
      idempotency_key: key('sync'),
      creatives: [banner('consistent-mpu')],
      assignments: [{ creative_id: 'consistent-mpu', package_id: created.packages[0].package_id }],
    });
    const buy = await buyOf(gw, buyer, created.media_buy_id);
    expect(buy.status).toBe('pending_start');
    const delivery = await mcp(gw, buyer, 'get_media_buy_delivery', { account: ACCOUNT, media_buy_ids: [created.media_buy_id] });
    expect(delivery.media_buy_deliveries[0]).toMatchObject({ media_buy_id: created.media_buy_id, status: 'pending_start' });
    expect(delivery.media_buy_deliveries[0]).not.toHaveProperty('start_time');
    const period = delivery.reporting_period as { start: string; end: string };
    expect(Date.parse(period.start)).toBeLessThanOrEqual(Date.parse(period.end));
    // Nothing has started: the period is empty, at the time of asking.
    expect(period.start).toBe(period.end);

    // Canceled before its flight began: the final delivery report is an empty period too, in 3.0's words.
    await mcp(gw, buyer, 'update_media_buy', { account: ACCOUNT, media_buy_id: created.media_buy_id, canceled: true, idempotency_key: key('cancel') });
    const final = (await eventually(() => receiver.received.find((w) => w.path === '/reports/a' && w.json.result?.notification_type === 'final'), 15_000, 'final report'))!.json;
    const finalPeriod = final.result.reporting_period as { start: string; end: string };
    expect(Date.parse(finalPeriod.start)).toBeLessThanOrEqual(Date.parse(finalPeriod.end));
    expect(final.result.media_buy_deliveries[0]).toMatchObject({ status: 'canceled', is_final: true });
  });

  it('(b) the approval webhook\'s message agrees with its result\'s status', async () => {
    const url = `${receiver.origin}/tasks/b`;
    const { created, buy } = await approvedBuy({ push_notification_config: { url } });
    const completed = (await eventually(() => receiver.received.find((w) => w.path === '/tasks/b' && w.json.status === 'completed' && w.json.task_id === created.task_id), 15_000, 'completed webhook'))!.json;
    // No creatives yet: approved, but not serving.
    expect(completed.result.status).toBe('pending_creatives');
    expect(buy.status).toBe('pending_creatives');
    expect(completed.message).not.toMatch(/\bactive\b/);
    expect(completed.message).toMatch(/approved/i);
    expect(completed.message).toMatch(/creative/i);
    // The result says when the seller confirmed it: the approval.
    expect(completed.result.confirmed_at).toBe(buy.confirmed_at);
  });

  it('(c) confirmed_at is when the seller confirmed: the approval for a buy that waited, the creation for one confirmed at once', async () => {
    const { before, buy } = await approvedBuy();
    expect(buy.confirmed_at).toBeDefined();
    expect(Date.parse(buy.confirmed_at)).toBeGreaterThanOrEqual(Date.parse(before));
    expect(Date.parse(buy.confirmed_at)).toBeGreaterThan(Date.parse(buy.created_at));

    const at = await mcp(gw, buyer, 'create_media_buy', createArgs());
    const atOnce = await buyOf(gw, buyer, at.media_buy_id);
    expect(atOnce.confirmed_at).toBe(atOnce.created_at);
    expect(at.confirmed_at).toBe(atOnce.confirmed_at);
  });

  it('(d) an "asap" buy that waited for approval starts when approved, not when submitted', async () => {
    const submittedAt = new Date().toISOString();
    const { before, buy } = await approvedBuy({ start_time: 'asap' });
    expect(Date.parse(buy.start_time)).toBeGreaterThanOrEqual(Date.parse(before));
    expect(buy.start_time).toBe(buy.confirmed_at);
    // A scheduled start is the buyer's: approval leaves it.
    const scheduled = future(3);
    const kept = await approvedBuy({ start_time: scheduled });
    expect(Date.parse(kept.buy.start_time)).toBe(Date.parse(scheduled));
    expect(Date.parse(submittedAt)).toBeLessThan(Date.parse(before));
  });
});
