import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { issueApiKey } from '../../src/application/api-keys';
import { graphql, startTestGateway } from '../support/gateway';
import { PG_ADMIN_URL, createTestDatabase, describeWith, eventually } from '../support/infra';
import { sdkSignWebhooks } from '../support/sdk-oracle';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;

/** A sender that is only a brand.json and a JWKS (like a seller on @adcp/sdk), on loopback. */
async function staticSender(jwk: Record<string, unknown>) {
  const server = http.createServer((req, res) => {
    const docs: Record<string, unknown> = {
      '/.well-known/brand.json': { version: '1.0', agents: [{ type: 'sales', url: 'https://sdk-sender.example/mcp', id: 'sdk_agent', jwks_uri: 'https://sdk-sender.example/.well-known/jwks.json' }] },
      '/.well-known/jwks.json': { keys: [jwk] },
    };
    const doc = docs[req.url ?? ''];
    res.writeHead(doc ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(doc ?? {}));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise<void>((r) => server.close(() => r())) };
}

function receiverSuite(name: string, buyerEnv: () => Promise<{ env: Record<string, string>; cleanup: () => Promise<void> }>): void {
describe(`buyer-side webhook receiver (${name})`, () => {
  let seller: Gateway;
  let buyerGw: Gateway;
  let sdkSender: Awaited<ReturnType<typeof staticSender>>;
  const sdkKey = generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' });
  const sdkPub = { kty: 'OKP', crv: 'Ed25519', x: sdkKey.x, kid: 'sdk-key-1', alg: 'EdDSA', use: 'sig', key_ops: ['verify'], adcp_use: 'webhook-signing' };
  let keys: { sellerBuyer: string; seller: string; buyer: string };
  let cleanup: () => Promise<void> = async () => {};

  beforeAll(async () => {
    sdkSender = await staticSender(sdkPub);
    // The seller: publishes brand.json as https://seller.example and may call loopback receivers.
    seller = await startTestGateway({ APPROVAL_POLICY: 'manual', ALLOW_PRIVATE_WEBHOOK_URLS: '1', PUBLIC_URL: 'https://seller.example' });
    // The buyer: resolves seller.example and sdk-sender.example to those loopback origins.
    const b = await buyerEnv();
    cleanup = b.cleanup;
    buyerGw = await startTestGateway({ ...b.env, REGISTRY_ORIGIN_OVERRIDES: `seller.example=${seller.url},sdk-sender.example=${sdkSender.origin}` });
    const now = { now: new Date().toISOString() };
    keys = {
      sellerBuyer: (await issueApiKey(seller.app.store, { org: 'acme', role: 'buyer' }, now)).key,
      seller: (await issueApiKey(seller.app.store, { org: 'pub', role: 'seller' }, now)).key,
      buyer: (await issueApiKey(buyerGw.app.store, { org: 'acme', role: 'buyer' }, now)).key,
    };
    for (const gw of [seller, buyerGw]) await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 20_000, 'readyz');
  }, 60_000);
  afterAll(async () => {
    await buyerGw?.stop();
    await seller?.stop();
    await sdkSender?.close();
    await cleanup();
  });

  const register = async (agentId: string, senderDomain: string, extra = '') => {
    const r = await graphql(buyerGw.url, `mutation { registerWebhookEndpoint(agentId: "${agentId}", senderDomain: "${senderDomain}"${extra}) }`, undefined, keys.buyer);
    return r.body.data?.registerWebhookEndpoint as { url_template: string; endpoint_id: string } | undefined;
  };
  const received = async (taskId: string) => (await graphql(buyerGw.url, 'query($t: String) { receivedWebhooks(taskId: $t) { id sender status taskId data } }', { t: taskId }, keys.buyer)).body.data!.receivedWebhooks as Record<string, any>[];
  const status = async (taskId: string) => (await graphql(buyerGw.url, 'query($t: String!) { receivedTaskStatus(taskId: $t) }', { t: taskId }, keys.buyer)).body.data!.receivedTaskStatus as Record<string, any> | null;

  it('our dispatcher → our receiver over loopback: verified with keys from the seller’s brand.json, applied as task status', async () => {
    const endpoint = (await register('adcp_gateway', 'seller.example'))!;
    expect(endpoint.url_template).toBe(`${buyerGw.url}/webhooks/{task_type}/adcp_gateway/${endpoint.endpoint_id}`);
    const url = endpoint.url_template.replace('{task_type}', 'create_media_buy');
    const res = await fetch(`${seller.url}/api/tasks/create_media_buy`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${keys.sellerBuyer}` },
      body: JSON.stringify({
        buyer_ref: 'e2e-1',
        brand_manifest: { url: 'https://acme.example' },
        packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 700 }],
        start_time: { type: 'asap' },
        end_time: new Date(Date.now() + 5 * 86_400_000).toISOString(),
        push_notification_config: { url, operation_id: 'op-e2e' },
      }),
    });
    const { task_id: taskId } = (await res.json()) as { task_id: string };
    await graphql(seller.url, 'mutation($t: ID!) { approveTask(taskId: $t) }', { t: taskId }, keys.seller);
    // Both fires are delivered concurrently and may arrive in either order: wait for both.
    const got = (await eventually(async () => {
      const list = await received(taskId);
      return list.length === 2 && (await status(taskId))?.status === 'completed' ? list : undefined;
    }, 20_000, 'working and completed received'))!;
    expect(got.map((w) => w.status).sort()).toEqual(['completed', 'working']);
    expect(got.every((w) => w.sender === 'seller.example/adcp_gateway' && w.taskId === taskId)).toBe(true);
    expect(got.find((w) => w.status === 'completed')!.data).toMatchObject({ status: 'active' });
    expect(await status(taskId)).toMatchObject({ status: 'completed', data: { status: 'active' } });
    // The seller saw every delivery answered 200.
    const activity = await eventually(async () => {
      const r = await fetch(`${seller.url}/api/tasks/get_media_buys`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${keys.sellerBuyer}` }, body: JSON.stringify({ include_webhook_activity: true }) });
      const a = ((await r.json()) as { media_buys: { webhook_activity: { status: string }[] }[] }).media_buys[0]!.webhook_activity;
      return a.length === 2 && a.every((x) => x.status === 'success') ? a : undefined;
    }, 20_000, 'seller activity');
    expect(activity).toHaveLength(2);
  }, 60_000);

  it('our dispatcher → our receiver over A2A: a push registered the A2A way comes in A2A\'s envelope (status update, then the Task), RFC 9421-signed, and is applied as task status', async () => {
    const endpoint = (await register('adcp_gateway', 'seller.example'))!;
    const url = endpoint.url_template.replace('{task_type}', 'create_media_buy');
    const res = await fetch(`${seller.url}/a2a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${keys.sellerBuyer}` },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'message/send',
        params: {
          message: {
            kind: 'message',
            role: 'user',
            messageId: 'm-a2a-push',
            contextId: 'ctx-a2a-push',
            parts: [
              {
                kind: 'data',
                data: {
                  skill: 'create_media_buy',
                  input: {
                    brand: { domain: 'acme.example' },
                    packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 700 }],
                    start_time: 'asap',
                    end_time: new Date(Date.now() + 5 * 86_400_000).toISOString(),
                    idempotency_key: 'a2a-push-create-0001',
                  },
                },
              },
            ],
          },
          configuration: { pushNotificationConfig: { url } },
        },
      }),
    });
    const task = ((await res.json()) as { result: { artifacts: { metadata: { adcp_task_id: string } }[] } }).result;
    const taskId = task.artifacts[0]!.metadata.adcp_task_id;
    // The seller shows the registration (without credentials) on the AdCP task.
    const listed = await fetch(`${seller.url}/a2a`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${keys.sellerBuyer}` }, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tasks/pushNotificationConfig/list', params: { id: taskId } }) });
    expect(((await listed.json()) as { result: unknown }).result).toEqual([{ taskId, pushNotificationConfig: { id: taskId, url } }]);
    await graphql(seller.url, 'mutation($t: ID!) { approveTask(taskId: $t) }', { t: taskId }, keys.seller);
    const got = (await eventually(async () => {
      const list = await received(taskId);
      return list.length === 2 && (await status(taskId))?.status === 'completed' ? list : undefined;
    }, 20_000, 'working and completed received over A2A'))!;
    expect(got.map((w) => w.status).sort()).toEqual(['completed', 'working']);
    expect(got.every((w) => w.sender === 'seller.example/adcp_gateway')).toBe(true);
    // The Task's artifact: the buy as AdCP 3.0 answers it (no creatives yet: pending_creatives).
    expect(await status(taskId)).toMatchObject({ status: 'completed', data: { media_buy_id: expect.any(String), status: 'pending_creatives' } });
  }, 60_000);

  it('accepts webhooks signed by @adcp/sdk; a duplicate (fresh signature, same key) is 200 and applied once; an older status is not applied', async () => {
    const endpoint = (await register('sdk_agent', 'sdk-sender.example'))!;
    const url = endpoint.url_template.replace('{task_type}', 'create_media_buy');
    const envelope = (status: string, timestamp: string, key: string) =>
      JSON.stringify({ idempotency_key: key, task_id: 'task_sdk_1', operation_id: 'op-sdk', task_type: 'create_media_buy', status, timestamp, message: status, result: { media_buy_id: 'mb_sdk' } });
    const bodies = [
      envelope('completed', '2026-11-23T10:00:05.000Z', 'whk_sdk_completed_000001'),
      envelope('completed', '2026-11-23T10:00:05.000Z', 'whk_sdk_completed_000001'), // a retry: fresh signature
      envelope('working', '2026-11-23T10:00:01.000Z', 'whk_sdk_working_0000001'), // late and older
    ];
    const headers = await sdkSignWebhooks({ kid: 'sdk-key-1', privateJwk: { ...sdkKey, kid: 'sdk-key-1' } }, bodies.map((body) => ({ url, body })));
    const answers: { status: number; body: unknown }[] = [];
    for (let i = 0; i < bodies.length; i++) {
      const r = await fetch(url, { method: 'POST', headers: headers[i], body: bodies[i] });
      answers.push({ status: r.status, body: await r.json() });
    }
    expect(answers).toEqual([
      { status: 200, body: { status: 'accepted' } },
      { status: 200, body: { status: 'duplicate' } },
      { status: 200, body: { status: 'accepted' } },
    ]);
    const list = (await eventually(async () => {
      const l = await received('task_sdk_1');
      return l.length === 2 ? l : undefined;
    }, 10_000, 'two accepted'))!;
    expect(list.map((w) => w.status).sort()).toEqual(['completed', 'working']);
    expect(await status('task_sdk_1')).toMatchObject({ status: 'completed', sent_at: '2026-11-23T10:00:05.000Z' });
    // The same signed bytes again: a replayed nonce, refused before dedup.
    const replay = await fetch(url, { method: 'POST', headers: headers[0], body: bodies[0] });
    expect(replay.status).toBe(401);
    expect(replay.headers.get('www-authenticate')).toBe('Signature error="webhook_signature_replayed"');
  }, 60_000);

  it('refuses before verification: 415 for another content type, 413 over 1 MB; 401 with the code; 404 for an unknown route', async () => {
    const endpoint = (await register('sdk_agent', 'sdk-sender.example'))!;
    const url = endpoint.url_template.replace('{task_type}', 'sync_creatives');
    expect((await fetch(url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hi' })).status).toBe(415);
    const big = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ x: 'y'.repeat(1024 * 1024) }) });
    expect(big.status).toBe(413);
    const unsigned = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(unsigned.status).toBe(401);
    expect(unsigned.headers.get('www-authenticate')).toBe('Signature error="webhook_signature_header_malformed"');
    const hmacStyle = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-adcp-signature': 'sha256=00', 'x-adcp-timestamp': '1' }, body: '{}' });
    expect(hmacStyle.headers.get('www-authenticate')).toBe('Signature error="webhook_mode_mismatch"');
    expect((await fetch(`${buyerGw.url}/webhooks/x/sdk_agent/unknownroutetoken0001`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(404);
    const weak = await graphql(buyerGw.url, 'mutation { registerWebhookEndpoint(agentId: "a", senderDomain: "s.example", mode: "hmac-sha256", secret: "short") }', undefined, keys.buyer);
    expect(weak.body.errors![0]!.extensions).toMatchObject({ code: 'VALIDATION_ERROR', field: 'secret' });
  }, 30_000);
});
}

receiverSuite('SQLite', async () => ({ env: {}, cleanup: async () => {} }));

describeWith('PostgreSQL', Boolean(PG_ADMIN_URL), 'webhook receiver on PostgreSQL', () => {
  receiverSuite('PostgreSQL', async () => {
    const db = await createTestDatabase('adcp_rx');
    return { env: { EVENT_STORE_URL: db.url }, cleanup: db.drop };
  });
});

describe('a slow upload to the receiver', () => {
  it('is answered 503 when its time budget runs out, and the connection is closed with that answer', async () => {
    const gw = await startTestGateway({ REQUEST_TIME_BUDGET_MS: '1000' });
    const socket = net.connect(Number(new URL(gw.url).port), '127.0.0.1');
    let trickle: NodeJS.Timeout | undefined;
    try {
      let answer = '';
      socket.on('data', (chunk: Buffer) => void (answer += chunk.toString('latin1')));
      socket.on('error', () => {}); // writing into a socket the gateway closed
      const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now())));
      await new Promise<void>((resolve) => socket.once('connect', resolve));
      const started = Date.now();
      socket.write('POST /webhooks/sync_creatives/some_agent/slowroutetoken00001 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"a":"');
      // A byte every 100 ms: the body would take almost three hours.
      trickle = setInterval(() => socket.writable && socket.write('x'), 100);
      const at = await Promise.race([closed, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 6000))]);
      expect(answer).toMatch(/^HTTP\/1\.1 503 /);
      expect(answer.toLowerCase()).toContain('connection: close');
      expect({ closedWithin6s: at !== undefined }).toEqual({ closedWithin6s: true });
      expect(at! - started).toBeLessThan(4000);
    } finally {
      clearInterval(trickle);
      socket.destroy();
      await gw.stop();
    }
  }, 30_000);
});
