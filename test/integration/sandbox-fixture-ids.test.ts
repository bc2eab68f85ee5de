import { issueApiKey } from '../../src/application/api-keys';
import { mcpCall } from '../support/mcp-call';
import { graphql, startTestGateway } from '../support/gateway';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;
type Json = Record<string, any>;

const SANDBOX = { brand: { domain: 'acme.example' }, operator: 'agency.example', sandbox: true };
/** The fixed ids of the stock storyboards (get_media_buys_pagination_integrity, media_buy_seller). */
const FIXTURE_IDS = ['pagination_integrity_mb_1', 'mb_acme_q2_2026'];

/** A tools/call over MCP; successes are checked against their AdCP 3.0 response schemas. */
const mcp = async (gw: Gateway, key: string, name: string, args: unknown): Promise<Json> => (await mcpCall(gw.url, key, name, args)).body;

/**
 * Issue 35, item 1: the ids a sandbox fixture chooses are kept under the buyer who seeds them, as
 * task and account ids are. On one long-lived gateway every buyer may seed a storyboard's fixed ids
 * and use them everywhere a media_buy_id goes (reads, updates, delivery, the controller), and no
 * answer tells one buyer that another holds the same id.
 */
describe('sandbox fixture ids are per buyer', () => {
  let gw: Gateway;
  const keys: Record<string, string> = {};

  beforeAll(async () => {
    gw = await startTestGateway();
    for (const org of ['acme', 'globex']) keys[org] = (await issueApiKey(gw.app.store, { org, role: 'buyer' }, { now: new Date().toISOString() })).key;
  });
  afterAll(async () => {
    await gw?.stop();
  });

  it('two buyers seed the same fixture ids; each reads, updates, forces and delivers its own, and neither learns of the other', async () => {
    const budgets: Record<string, number> = { acme: 1111, globex: 2222 };
    const answers: Json[] = [];
    for (const org of ['acme', 'globex']) {
      for (const id of FIXTURE_IDS) {
        const seeded = await mcp(gw, keys[org]!, 'comply_test_controller', { scenario: 'seed_media_buy', account: SANDBOX, params: { media_buy_id: id, fixture: { total_budget: budgets[org] } } });
        expect({ org, id, seeded }).toMatchObject({ org, id, seeded: { success: true, message: `media buy ${id} seeded (active)` } });
        answers.push(seeded);
      }
    }

    for (const org of ['acme', 'globex']) {
      const key = keys[org]!;
      const [id] = FIXTURE_IDS as [string];
      // Reads by id (MCP, REST, GraphQL) find the caller's own buy, under the id it chose.
      const listed = await mcp(gw, key, 'get_media_buys', { media_buy_ids: FIXTURE_IDS });
      expect(listed.media_buys.map((b: Json) => [b.media_buy_id, b.total_budget])).toEqual(FIXTURE_IDS.map((f) => [f, budgets[org]]).sort());
      const rest = await fetch(`${gw.url}/api/tasks/get_media_buys`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify({ media_buy_id: id }) });
      expect(((await rest.json()) as Json).media_buys).toEqual([expect.objectContaining({ media_buy_id: id, total_budget: budgets[org] })]);
      const typed = await graphql(gw.url, 'query($id: ID!) { mediaBuy(id: $id) { id totalBudget } }', { id }, key);
      expect(typed.body.data?.mediaBuy).toEqual({ id, totalBudget: budgets[org] });

      // The controller and the tasks address it by that id.
      const delivered = await mcp(gw, key, 'comply_test_controller', { scenario: 'simulate_delivery', account: SANDBOX, params: { media_buy_id: id, impressions: org === 'acme' ? 1000 : 2000, reported_spend: { amount: 5, currency: 'USD' } } });
      expect(delivered).toMatchObject({ success: true, simulated: { media_buy_id: id } });
      const delivery = await mcp(gw, key, 'get_media_buy_delivery', { media_buy_ids: [id] });
      expect(delivery.media_buy_deliveries).toEqual([expect.objectContaining({ media_buy_id: id, totals: expect.objectContaining({ impressions: org === 'acme' ? 1000 : 2000 }) })]);
      const paused = await mcp(gw, key, 'update_media_buy', { media_buy_id: id, paused: true, idempotency_key: `pause-${org}-0000000000001` });
      expect(paused).toMatchObject({ media_buy_id: id });
      const forced = await mcp(gw, key, 'comply_test_controller', { scenario: 'force_media_buy_status', account: SANDBOX, params: { media_buy_id: FIXTURE_IDS[1], status: 'completed' } });
      expect(forced).toMatchObject({ success: true, current_state: 'completed' });
      answers.push(listed, delivered, delivery, paused, forced);
    }

    // Each buyer's changes stayed on its own buy.
    const acme = await mcp(gw, keys.acme!, 'get_media_buys', { media_buy_ids: FIXTURE_IDS });
    const globex = await mcp(gw, keys.globex!, 'get_media_buys', { media_buy_ids: FIXTURE_IDS });
    expect(acme.media_buys.map((b: Json) => b.media_buy_id)).toEqual(globex.media_buys.map((b: Json) => b.media_buy_id));
    // No answer carries the stored form of an id, nor says an id is held by someone else.
    const text = JSON.stringify(answers);
    expect(text).not.toMatch(/~|taken/);
  });

  it('seeding again is idempotent for its buyer; an id of the shape this seller issues is refused', async () => {
    const again = await mcp(gw, keys.acme!, 'comply_test_controller', { scenario: 'seed_media_buy', account: SANDBOX, params: { media_buy_id: 'repeat_me' } });
    expect(again).toMatchObject({ success: true });
    expect(await mcp(gw, keys.acme!, 'comply_test_controller', { scenario: 'seed_media_buy', account: SANDBOX, params: { media_buy_id: 'repeat_me' } })).toMatchObject({ success: true, message: 'media buy repeat_me already seeded' });
    const issuedShape = `mb_${'A'.repeat(22)}`;
    expect(await mcp(gw, keys.acme!, 'comply_test_controller', { scenario: 'seed_media_buy', account: SANDBOX, params: { media_buy_id: issuedShape } })).toMatchObject({ success: false, error: 'INVALID_PARAMS' });
  });

  it('another buyer\'s fixture id reads as absent, never as forbidden', async () => {
    await mcp(gw, keys.acme!, 'comply_test_controller', { scenario: 'seed_media_buy', account: SANDBOX, params: { media_buy_id: 'acme_only' } });
    const missing = await mcp(gw, keys.globex!, 'get_media_buy_delivery', { media_buy_id: 'acme_only' });
    expect(JSON.stringify(missing)).toContain('MEDIA_BUY_NOT_FOUND');
    expect(await mcp(gw, keys.globex!, 'get_media_buys', { media_buy_ids: ['acme_only'] })).toMatchObject({ media_buys: [] });
  });
});
