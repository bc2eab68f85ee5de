import { issueApiKey } from '../../src/application/api-keys';
import { openReadModels } from '../../src/app';
import { loadConfig } from '../../src/config';
import type { ReadModelStore } from '../../src/readmodel/port';
import { signWebhook } from '../../src/signing/webhook-signer';
import { DailyCap } from '../../src/webhooks/receiver/daily-cap';
import { graphql, startTestGateway, tempDir } from '../support/gateway';
import { PG_ADMIN_URL, createTestDatabase, describeWith } from '../support/infra';
import { startOrigins } from '../support/origins';
import { testSender, type TestSender } from '../support/senders';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;

/** An MCP-style envelope with the idempotency key given (keys are the sender's, and guessable). */
const envelope = (key: string, taskId: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ idempotency_key: key, task_id: taskId, operation_id: 'op', task_type: 'create_media_buy', status: 'completed', timestamp: new Date().toISOString(), result: { media_buy_id: 'mb_1' }, ...extra });

/** The answer as `<status> <body status or error code>`. */
async function post(url: string, headers: Record<string, string>, body: string | Buffer): Promise<string> {
  // Signed headers carry their own (covered) Content-Type.
  const typed = Object.keys(headers).some((h) => h.toLowerCase() === 'content-type') ? headers : { 'content-type': 'application/json', ...headers };
  const res = await fetch(url, { method: 'POST', headers: typed, body });
  const answer = (await res.json()) as { status?: string; error?: { code: string; message: string } };
  return `${res.status} ${answer.error ? `${answer.error.code}: ${answer.error.message}` : answer.status}`;
}

const CAP = 3;
const SECRET_A = 'a'.repeat(16) + 'attacker-bearer-secret-0001';
const SECRET_B = 'b'.repeat(16) + 'buyer-b-bearer-secret-00001';

/**
 * Issue 45, finding 2: the receiver deduplicated and capped by the sender name an endpoint claims,
 * and any buyer may register an endpoint claiming any name. Buyer A (acme) claims the real seller's
 * name on a Bearer endpoint; buyers B (globex) and C (initech) take the seller's RFC 9421-signed
 * webhooks. A can neither suppress nor exhaust B's; only the seller's verified key spans endpoints.
 */
describe('receiver dedup and daily cap are scoped by what verification proved, not by the claimed sender name', () => {
  let gw: Gateway;
  let origins: Awaited<ReturnType<typeof startOrigins>>;
  const seller = testSender('seller.example', 'agent1', 'seller-kid');
  const keys: Record<string, string> = {};

  beforeAll(async () => {
    origins = await startOrigins({ [seller.domain]: seller.docs });
    gw = await startTestGateway({ REGISTRY_ORIGIN_OVERRIDES: origins.overrides, WEBHOOK_ACCEPTED_PER_DAY: String(CAP) });
    for (const org of ['acme', 'globex', 'initech']) keys[org] = (await issueApiKey(gw.app.store, { org, role: 'buyer' }, { now: new Date().toISOString() })).key;
    await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
    await origins?.close();
  });

  /** Registers an endpoint for `org` claiming the seller's name; answers its URL. */
  const register = async (org: string, mode: 'rfc9421' | 'bearer', secret?: string) => {
    const r = await graphql(gw.url, `mutation { registerWebhookEndpoint(agentId: "${seller.agentId}", senderDomain: "${seller.domain}", mode: "${mode}"${secret ? `, secret: "${secret}"` : ''}) }`, undefined, keys[org]);
    return (r.body.data!.registerWebhookEndpoint as { url_template: string }).url_template.replace('{task_type}', 'create_media_buy');
  };
  const bearer = (url: string, secret: string, body: string | Buffer) => post(url, { authorization: `Bearer ${secret}` }, body);
  const signed = (sender: TestSender, url: string, body: string) => post(url, sender.sign(url, body), body);
  const receivedBy = async (org: string, taskId: string) => {
    await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
    return (await graphql(gw.url, 'query($t: String) { receivedWebhooks(taskId: $t) { id sender taskId endpointId } }', { t: taskId }, keys[org])).body.data!.receivedWebhooks as { id: string; sender: string; endpointId: string }[];
  };

  it("a key another buyer's endpoint claimed first does not make the seller's webhook to B a duplicate; the seller's own key spans B's and C's endpoints", async () => {
    const [a, b, c, b2] = [await register('acme', 'bearer', SECRET_A), await register('globex', 'rfc9421'), await register('initech', 'rfc9421'), await register('globex', 'bearer', SECRET_B)];
    const key = 'whk_guessed_seller_key_000001';
    // A posts the key first, to its own endpoint claiming the seller's name.
    expect(await bearer(a, SECRET_A, envelope(key, 'task_planted'))).toBe('200 accepted');
    // The seller's correctly signed webhook with the same key to B: B gets it.
    expect(await signed(seller, b, envelope(key, 'task_real'))).toBe('200 accepted');
    // A Bearer endpoint of B's own claiming the same name is not A's namespace either.
    expect(await bearer(b2, SECRET_B, envelope(key, 'task_real_bearer'))).toBe('200 accepted');
    // Retries are still duplicates where the same credential sent them...
    expect(await signed(seller, b, envelope(key, 'task_real'))).toBe('200 duplicate');
    expect(await bearer(a, SECRET_A, envelope(key, 'task_planted'))).toBe('200 duplicate');
    // ...and the verified seller key is one namespace across endpoints (C's here).
    expect(await signed(seller, c, envelope(key, 'task_real'))).toBe('200 duplicate');
    // B sees both of its webhooks (the read model is keyed by scope too); A sees only its own.
    expect((await receivedBy('globex', 'task_real')).map((w) => w.sender)).toEqual(['seller.example/agent1']);
    expect((await receivedBy('globex', 'task_real_bearer')).map((w) => w.sender)).toEqual(['seller.example/agent1']);
    expect(await receivedBy('acme', 'task_real')).toEqual([]);
    expect(await receivedBy('acme', 'task_planted')).toHaveLength(1);
  }, 60_000);

  it("an endpoint claiming the seller's name that fills its daily cap leaves the seller's webhooks to B and B's own endpoints alone", async () => {
    const [a, b, b2] = [await register('acme', 'bearer', SECRET_A), await register('globex', 'rfc9421'), await register('globex', 'bearer', SECRET_B)];
    for (let i = 0; i < CAP; i++) expect(await bearer(a, SECRET_A, envelope(`whk_flood_${i}_0000000000001`, 'task_flood'))).toBe('200 accepted');
    const refused = await fetch(a, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${SECRET_A}` }, body: envelope('whk_flood_over_000000000001', 'task_flood') });
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('RATE_LIMITED');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    // A retry of one it stored is still a duplicate at the cap, not a 429 to retry all day.
    expect(await bearer(a, SECRET_A, envelope('whk_flood_0_0000000000001', 'task_flood'))).toBe('200 duplicate');
    // The seller's webhooks to B (its key has 1 of its 3 from the test above) and B's Bearer endpoint.
    expect(await signed(seller, b, envelope('whk_after_flood_0000000001', 'task_after_flood'))).toBe('200 accepted');
    expect(await bearer(b2, SECRET_B, envelope('whk_after_flood_0000000001', 'task_after_flood'))).toBe('200 accepted');
    // The seller's cap is its key's, at every endpoint: a third accepted, then 429 at B as at C.
    expect(await signed(seller, b, envelope('whk_after_flood_0000000002', 'task_after_flood'))).toBe('200 accepted');
    expect(await signed(seller, b, envelope('whk_after_flood_0000000003', 'task_after_flood'))).toMatch(/^429 RATE_LIMITED/);
  }, 60_000);
});

/** Issue 45, finding 8 (receiver): bodies that are not UTF-8; the daily cap counted, not a COUNT(*). */
describe('receiver bodies and the daily cap counter', () => {
  let gw: Gateway;
  let origins: Awaited<ReturnType<typeof startOrigins>>;
  const sender = testSender('utf8-sender.example', 'agent_u', 'utf8-kid');
  let key: string;

  beforeAll(async () => {
    origins = await startOrigins({ [sender.domain]: sender.docs });
    gw = await startTestGateway({ REGISTRY_ORIGIN_OVERRIDES: origins.overrides, WEBHOOK_ACCEPTED_PER_DAY: String(CAP) });
    key = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
    await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
    await origins?.close();
  });

  const register = async (mode: 'rfc9421' | 'bearer') => {
    const r = await graphql(gw.url, `mutation { registerWebhookEndpoint(agentId: "${sender.agentId}", senderDomain: "${sender.domain}", mode: "${mode}"${mode === 'bearer' ? `, secret: "${SECRET_B}"` : ''}) }`, undefined, key);
    return (r.body.data!.registerWebhookEndpoint as { url_template: string }).url_template.replace('{task_type}', 'create_media_buy');
  };

  it('a body that is not UTF-8 is refused 400 webhook_body_malformed, Bearer or signed, and nothing is stored', async () => {
    // A message holding the bytes FF FE: JSON around them, but not UTF-8 (read leniently, U+FFFD).
    const [head, tail] = envelope('whk_not_utf8_0000000000001', 'task_not_utf8', { message: '@@' }).split('@@');
    const body = Buffer.concat([Buffer.from(head!), Buffer.from([0xff, 0xfe]), Buffer.from(tail!)]);
    const bearerUrl = await register('bearer');
    expect(await post(bearerUrl, { authorization: `Bearer ${SECRET_B}` }, body)).toBe('400 webhook_body_malformed: body is not valid UTF-8');
    const signedUrl = await register('rfc9421');
    const headers = signWebhook({ url: signedUrl, body }, { kid: sender.kid, alg: 'ed25519', privateKey: sender.privateKey }).headers;
    expect(await post(signedUrl, headers, body)).toBe('400 webhook_body_malformed: body is not valid UTF-8');
    await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
    expect((await graphql(gw.url, 'query { receivedWebhooks(taskId: "task_not_utf8") { id } }', undefined, key)).body.data!.receivedWebhooks).toEqual([]);
  }, 30_000);

  it('concurrent webhooks take exactly the cap between them; duplicates take no place', async () => {
    const url = await register('bearer');
    // A duplicate gives its place back: the cap counts accepted webhooks only.
    expect(await post(url, { authorization: `Bearer ${SECRET_B}` }, envelope('whk_cap_first_00000000001', 'task_cap'))).toBe('200 accepted');
    expect(await post(url, { authorization: `Bearer ${SECRET_B}` }, envelope('whk_cap_first_00000000001', 'task_cap'))).toBe('200 duplicate');
    // Ten at once for the two places left (the count was read from the projection, which lags).
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => post(url, { authorization: `Bearer ${SECRET_B}` }, envelope(`whk_cap_burst_${i}_0000000001`, 'task_cap'))));
    expect(answers.filter((a) => a === '200 accepted')).toHaveLength(CAP - 1);
    expect(answers.filter((a) => a.startsWith('429 RATE_LIMITED'))).toHaveLength(10 - (CAP - 1));
  }, 30_000);
});

/** The counter itself: one row per scope and day, exact under concurrent instances, kept across a restart. */
function dailyCapSuite(engine: string, open: () => Promise<{ readModels: () => Promise<ReadModelStore>; cleanup: () => Promise<void> }>): void {
  describe(`the daily cap counter (${engine})`, () => {
    const dbs: ReadModelStore[] = [];
    let make: () => Promise<ReadModelStore>;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ readModels: make, cleanup } = await open());
    }, 60_000);
    afterAll(async () => {
      for (const db of dbs) await db.close();
      await cleanup?.();
    });
    const fresh = async () => {
      const db = await make();
      dbs.push(db);
      return DailyCap.open(db);
    };

    it('two instances racing take exactly the cap; a restart keeps the count; a release frees a place; another scope or day is its own', async () => {
      const at = new Date('2026-11-29T10:00:00Z');
      const [one, two] = [await fresh(), await fresh()];
      const taken = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 ? one : two).take('endpoint:race', at, 25)));
      expect(taken.filter(Boolean)).toHaveLength(25);
      // A restart: a new instance on the same database reads the same count.
      for (const db of dbs.splice(0)) await db.close();
      const again = await fresh();
      expect(await again.count('endpoint:race', at)).toBe(25);
      expect(await again.take('endpoint:race', at, 25)).toBe(false);
      await again.release('endpoint:race', at);
      expect(await again.take('endpoint:race', at, 25)).toBe(true);
      expect(await again.take('endpoint:other', at, 25)).toBe(true);
      expect(await again.take('endpoint:race', new Date('2026-11-30T00:00:00Z'), 25)).toBe(true);
      expect(DailyCap.secondsLeft(new Date('2026-11-29T23:59:00Z'))).toBe(60);
    }, 30_000);
  });
}

dailyCapSuite('SQLite', async () => {
  const dir = tempDir();
  return { readModels: () => openReadModels(loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent' })), cleanup: async () => {} };
});

describeWith('PostgreSQL', Boolean(PG_ADMIN_URL), 'daily cap counter on PostgreSQL', () => {
  dailyCapSuite('PostgreSQL', async () => {
    const db = await createTestDatabase('adcp_rxcap');
    return { readModels: () => openReadModels(loadConfig({ DATA_DIR: tempDir(), LOG_LEVEL: 'silent', EVENT_STORE_URL: db.url })), cleanup: db.drop };
  });
});
