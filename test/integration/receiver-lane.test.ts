import { issueApiKey } from '../../src/application/api-keys';
import { WebhookReceiver } from '../../src/webhooks/receiver/receiver';
import { graphql, startTestGateway } from '../support/gateway';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;

const SECRET = 'lane-bearer-secret-5c1f0e9a7b3d4e21a8c6f2d0b9e7a3c4';

/**
 * A valid AdCP webhook of about 1 MB whose JSON checks hold the CPU for milliseconds (many small
 * objects, not one long string), so it takes the receiver's CPU lane.
 */
function largeWebhook(key: string): Buffer {
  const items = Array.from({ length: 30_000 }, (_, i) => ({ id: i, name: `item-${i}` }));
  return Buffer.from(JSON.stringify({ idempotency_key: key, task_id: `task_${key}`, operation_id: 'op', task_type: 'create_media_buy', status: 'completed', timestamp: new Date().toISOString(), result: { media_buy_id: 'mb_1', items } }));
}

/** The idempotency keys of every webhook the receiver stored. */
async function storedKeys(gw: Gateway): Promise<Set<string>> {
  const events = await gw.app.store.readAll({ fromPosition: 0, limit: 100_000 });
  return new Set(events.filter((e) => e.type === 'WebhookReceived').map((e) => (e.data as { dedup_key: string }).dedup_key));
}

/** Polls until what is stored has not changed for three polls in a row (the work left over has run out). */
async function settledKeys(gw: Gateway): Promise<Set<string>> {
  let last = await storedKeys(gw);
  for (let same = 0, polls = 0; same < 3 && polls < 60; polls++) {
    await new Promise((r) => setTimeout(r, 500));
    const now = await storedKeys(gw);
    same = now.size === last.size ? same + 1 : 0;
    last = now;
  }
  return last;
}

async function registerBearerEndpoint(gw: Gateway, agentId: string): Promise<{ url: string; id: string }> {
  const { key } = await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() });
  await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
  const r = await graphql(gw.url, `mutation { registerWebhookEndpoint(agentId: "${agentId}", senderDomain: "seller.example", mode: "bearer", secret: "${SECRET}") }`, undefined, key);
  const endpoint = r.body.data!.registerWebhookEndpoint as { endpoint_id: string; url_template: string };
  return { url: endpoint.url_template.replace('{task_type}', 'create_media_buy'), id: endpoint.endpoint_id };
}

/**
 * Issue 45, finding 6: large webhook bodies queue for the receiver's CPU lane. A request answered
 * meanwhile (503: its time ran out) or whose sender left must not be worked on further, and what
 * the sender was told is refused must never be stored; the waiting list is capped.
 */
describe('the webhook receiver’s CPU lane drops abandoned work and caps its waiters', () => {
  let gw: Gateway;
  let endpoint: { url: string; id: string };

  beforeAll(async () => {
    // The time budget scaled down so that a burst of large bodies outlasts it (30 s by default).
    gw = await startTestGateway({ REQUEST_TIME_BUDGET_MS: '300' });
    endpoint = await registerBearerEndpoint(gw, 'lane_agent');
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
  });

  it('a large webhook still queued when its request is answered 503 is never processed nor stored; those answered 200 are', async () => {
    const keys = Array.from({ length: 17 }, (_, i) => `whk_lane_burst_${i}_${Date.now()}`);
    const answers = await Promise.all(
      keys.map(async (key) => {
        const res = await fetch(endpoint.url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${SECRET}` }, body: largeWebhook(key) });
        return { key, status: res.status, body: (await res.json()) as Record<string, unknown> };
      }),
    );
    const refused = answers.filter((a) => a.status === 503);
    expect(answers.filter((a) => a.status !== 503 && a.status !== 200)).toEqual([]);
    // The burst outlasts the budget: some are answered 503 (else this test shows nothing).
    expect(refused.length).toBeGreaterThan(0);
    expect(answers.filter((a) => a.status !== 503 && a.status !== 200)).toEqual([]);
    const stored = await settledKeys(gw);
    expect({ refusedButStored: refused.filter((a) => stored.has(a.key)).map((a) => a.key) }).toEqual({ refusedButStored: [] });
    expect(answers.filter((a) => a.status === 200 && !stored.has(a.key)).map((a) => a.key)).toEqual([]);
    expect(gw.app.receiver.laneWaiting).toBe(0);
  }, 60_000);

  it('a large webhook beyond the waiting list’s cap is answered 503 with Retry-After at once, before the ones ahead of it; it is not stored', async () => {
    // A receiver on the same store with a waiting list of 2 (32 by default), called as the route calls it.
    const receiver = await WebhookReceiver.open(gw.app.store, gw.app.readModels, { overrides: gw.app.config.originOverrides, laneWaiting: 2 });
    const inbound = (key: string) => ({
      method: 'POST',
      url: endpoint.url,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${SECRET}` },
      body: largeWebhook(key),
      agentId: 'lane_agent',
      routeToken: endpoint.id,
    });
    // The endpoint looked up once before the burst, so all of it reaches the lane together.
    expect((await receiver.receive(inbound(`whk_lane_warm_${Date.now()}`))).status).toBe(200);
    const settled: { key: string; status: number; body: Record<string, unknown>; headers?: Record<string, string> }[] = [];
    const keys = Array.from({ length: 8 }, (_, i) => `whk_lane_cap_${i}_${Date.now()}`);
    await Promise.all(keys.map(async (key) => settled.push({ key, ...(await receiver.receive(inbound(key))) })));
    // One holds the lane, two wait, five are refused, each before any of the three was answered.
    expect(settled.map((s) => s.status)).toEqual([503, 503, 503, 503, 503, 200, 200, 200]);
    for (const s of settled.slice(0, 5)) {
      expect(s.body).toEqual({ error: { code: 'UNAVAILABLE', message: expect.stringMatching(/as many large webhooks waiting as it takes at once; try again in \d+ s/) } });
      expect(Number(s.headers?.['retry-after'])).toBeGreaterThan(0);
    }
    const stored = await storedKeys(gw);
    expect(settled.map((s) => stored.has(s.key))).toEqual([false, false, false, false, false, true, true, true]);
  }, 60_000);
});
