import http from 'node:http';
import { mcpCall } from '../support/mcp-call';
import { issueApiKey } from '../../src/application/api-keys';
import { graphql, startTestGateway } from '../support/gateway';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;
type Json = Record<string, any>;

const future = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();
const AGENT = 'https://creative.adcontextprotocol.org';
const SANDBOX = { brand: { domain: 'acme.example' }, operator: 'agency.example', sandbox: true };
const banner = (id: string, url = 'https://cdn.acme.example/mpu.png') => ({ creative_id: id, name: 'Live MPU', format_id: { agent_url: AGENT, id: 'display_300x250' }, assets: { image: { url, width: 300, height: 250 } } });
const buyRequest = (overrides: Json = {}) => ({
  buyer_ref: `sec-${Math.random().toString(36).slice(2, 10)}`,
  brand_manifest: { url: 'https://acme.example' },
  packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 5000 }],
  start_time: { type: 'asap' },
  end_time: future(10),
  ...overrides,
});

const rest = async (gw: Gateway, key: string, task: string, body: unknown) => {
  const res = await fetch(`${gw.url}/api/tasks/${task}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Json };
};
const mcp = async (gw: Gateway, key: string, name: string, args: unknown) => (await mcpCall(gw.url, key, name, args, { validate: false })).body;
/** A request with the Host header as given (fetch would not let a test choose it). */
const withHost = (gw: Gateway, path: string, host: string, post?: { body: string; headers: Record<string, string> }) =>
  new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
    const { hostname, port } = new URL(gw.url);
    const req = http.request({ host: hostname, port, path, method: post ? 'POST' : 'GET', setHost: false, headers: { host, ...post?.headers } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(post?.body);
  });
const getWithHost = (gw: Gateway, path: string, host: string) => withHost(gw, path, host);

/** Issue 32, findings 2, 5, 6 and 7 (REST get_media_buys, GraphQL JSON keys), each over real HTTP. */
describe('security: sandbox seeds, link schemes, Host-derived documents, protocol answers', () => {
  let gw: Gateway;
  let buyer: string;
  let other: string;

  beforeAll(async () => {
    gw = await startTestGateway();
    const ctx = { now: new Date().toISOString() };
    buyer = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, ctx)).key;
    other = (await issueApiKey(gw.app.store, { org: 'globex', role: 'buyer' }, ctx)).key;
  });
  afterAll(async () => {
    await gw?.stop();
  });

  describe('finding 2: the test controller never rewrites a live entity', () => {
    it('seed_creative refuses a creative synced under a live account (or none) and leaves it as it was', async () => {
      const synced = await rest(gw, buyer, 'sync_creatives', { creatives: [banner('live-ban')] });
      expect(synced.body.creatives[0]).toMatchObject({ creative_id: 'live-ban', action: 'created' });
      const before = (await rest(gw, buyer, 'list_creatives', { filters: { creative_ids: ['live-ban'] } })).body.creatives[0];

      const seeded = await mcp(gw, buyer, 'comply_test_controller', {
        scenario: 'seed_creative',
        account: SANDBOX,
        params: { creative_id: 'live-ban', fixture: { name: 'Fixture', format_id: { id: 'video_30s' }, assets: { video: { url: 'https://fixture.example/v.mp4' } } } },
      });
      expect(seeded).toMatchObject({ success: false, error: 'FORBIDDEN' });
      expect(seeded.error_detail).toBe('creative live-ban was not synced under a sandbox account');

      const after = (await rest(gw, buyer, 'list_creatives', { filters: { creative_ids: ['live-ban'] } })).body.creatives[0];
      expect(after).toEqual(before);
      // Still live: the controller cannot force its review status either.
      const forced = await mcp(gw, buyer, 'comply_test_controller', { scenario: 'force_creative_status', account: SANDBOX, params: { creative_id: 'live-ban', status: 'rejected' } });
      expect(forced).toMatchObject({ success: false, error: 'FORBIDDEN' });
    });

    it('a live creative synced again under a sandbox account stays live (the controller still cannot force it)', async () => {
      await rest(gw, buyer, 'sync_creatives', { creatives: [banner('live-twice')] });
      const again = await rest(gw, buyer, 'sync_creatives', { account: SANDBOX, creatives: [{ ...banner('live-twice'), name: 'Renamed' }] });
      expect(again.body.creatives[0]).toMatchObject({ action: 'updated' });
      const forced = await mcp(gw, buyer, 'comply_test_controller', { scenario: 'force_creative_status', account: SANDBOX, params: { creative_id: 'live-twice', status: 'rejected' } });
      expect(forced).toMatchObject({ success: false, error: 'FORBIDDEN' });
    });

    it('seed_creative still seeds a new creative, and re-seeds its own sandbox creative', async () => {
      const seed = (name: string) => mcp(gw, buyer, 'comply_test_controller', { scenario: 'seed_creative', account: SANDBOX, params: { creative_id: 'sbx-ban', fixture: { name } } });
      expect(await seed('First')).toMatchObject({ success: true });
      expect(await seed('Second')).toMatchObject({ success: true });
      const listed = (await rest(gw, buyer, 'list_creatives', { filters: { creative_ids: ['sbx-ban'] } })).body.creatives[0];
      expect(listed).toMatchObject({ creative_id: 'sbx-ban', name: 'Second' });
    });

    it('seed_media_buy refuses the id of one of the caller\'s live buys instead of answering it as seeded', async () => {
      const live = await rest(gw, buyer, 'create_media_buy', buyRequest());
      expect(live.status).toBe(200);
      const seeded = await mcp(gw, buyer, 'comply_test_controller', { scenario: 'seed_media_buy', account: SANDBOX, params: { media_buy_id: live.body.media_buy_id } });
      // An issued id is no fixture id (fixture ids are kept per buyer: sandbox-fixture-ids.test.ts).
      expect(seeded).toMatchObject({ success: false, error: 'INVALID_PARAMS' });
      expect((await rest(gw, buyer, 'get_media_buys', { media_buy_id: live.body.media_buy_id })).body.media_buys[0]).toMatchObject({ status: live.body.status, buyer_ref: live.body.buyer_ref });
    });

    it('force_task_completion refuses a live sync_creatives task awaiting the seller (no self-approval of live creatives)', async () => {
      const manual = await startTestGateway({ APPROVAL_POLICY: 'manual' });
      try {
        const key = (await issueApiKey(manual.app.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
        const pending = await rest(manual, key, 'sync_creatives', { creatives: [banner('awaiting-review')] });
        expect(pending.body).toMatchObject({ status: 'pending', task_id: expect.any(String) });
        const forced = await mcp(manual, key, 'comply_test_controller', { scenario: 'force_task_completion', account: SANDBOX, params: { task_id: pending.body.task_id, result: {} } });
        expect(forced).toMatchObject({ success: false, error: 'FORBIDDEN' });
        expect((await rest(manual, key, 'list_creatives', {})).body.query_summary.total_matching).toBe(0);

        // Under a sandbox account the same completion goes through.
        const sandboxed = await rest(manual, key, 'sync_creatives', { account: SANDBOX, creatives: [banner('sandbox-review')] });
        expect(sandboxed.body).toMatchObject({ status: 'pending', task_id: expect.any(String) });
        const completed = await mcp(manual, key, 'comply_test_controller', { scenario: 'force_task_completion', account: SANDBOX, params: { task_id: sandboxed.body.task_id, result: {} } });
        expect(completed).toMatchObject({ success: true, current_state: 'completed' });

        // A sandbox sync that would change a live creative, archive the library or assign to a live buy is not completed either.
        const seller = (await issueApiKey(manual.app.store, { org: 'publisher', role: 'seller' }, { now: new Date().toISOString() })).key;
        const approved = await graphql(manual.url, 'mutation($t: ID!) { approveTask(taskId: $t) }', { t: pending.body.task_id }, seller);
        expect(approved.body.errors).toBeUndefined();
        const liveBuy = await rest(manual, key, 'create_media_buy', buyRequest());
        expect(liveBuy.status).toBe(200);
        for (const request of [
          { creatives: [{ ...banner('awaiting-review'), name: 'Changed in a sandbox' }] },
          { creatives: [banner('sandbox-review')], delete_missing: true },
          { creatives: [banner('sandbox-review')], assignments: { 'sandbox-review': [liveBuy.body.packages[0].package_id] } },
        ]) {
          const submitted = await rest(manual, key, 'sync_creatives', { account: SANDBOX, ...request });
          expect({ request, status: submitted.body.status }).toEqual({ request, status: 'pending' });
          const refused = await mcp(manual, key, 'comply_test_controller', { scenario: 'force_task_completion', account: SANDBOX, params: { task_id: submitted.body.task_id, result: {} } });
          expect({ request, refused }).toMatchObject({ request, refused: { success: false, error: 'FORBIDDEN' } });
        }
        const listed = (await rest(manual, key, 'list_creatives', { filters: { creative_ids: ['awaiting-review'] } })).body.creatives[0];
        expect(listed).toMatchObject({ name: 'Live MPU', status: 'approved' });
      } finally {
        await manual.stop();
      }
    });
  });

  describe('finding 5: only http(s) URLs are accepted where a URL is stored', () => {
    const schemes = ['javascript:alert(document.domain)', 'JavaScript:alert(1)', 'data:text/html,<script>alert(1)</script>', 'vbscript:msgbox(1)', 'ftp://files.example/x.png'];

    it('sync_creatives refuses them in every asset url (REST, MCP, GraphQL), naming the field', async () => {
      for (const url of schemes) {
        const r = await rest(gw, buyer, 'sync_creatives', { creatives: [banner('js-ban', url), { ...banner('js-click'), assets: { ...banner('js-click').assets, click_through: { url } } }] });
        expect({ url, outcomes: r.body.creatives }).toEqual({
          url,
          outcomes: [
            { creative_id: 'js-ban', action: 'failed', errors: [{ code: 'VALIDATION_ERROR', message: 'must be an http or https URL', field: 'creatives[0].assets.image.url' }] },
            { creative_id: 'js-click', action: 'failed', errors: [{ code: 'VALIDATION_ERROR', message: 'must be an http or https URL', field: 'creatives[1].assets.click_through.url' }] },
          ],
        });
      }
      const viaMcp = await mcp(gw, buyer, 'sync_creatives', { creatives: [banner('js-mcp', schemes[0])], idempotency_key: 'sec-app-js-mcp-000001' });
      expect(viaMcp.creatives[0]).toMatchObject({ action: 'failed', errors: [{ code: 'VALIDATION_ERROR', field: 'creatives[0].assets.image.url' }] });
      const viaGraphql = await graphql(gw.url, 'mutation($i: CreativeInput!) { syncCreative(input: $i) { action } }', { i: { name: 'x', formatId: { agentUrl: AGENT, id: 'display_300x250' }, assetUrl: schemes[0] } }, buyer);
      expect(viaGraphql.body.errors?.[0]?.extensions).toEqual({ code: 'VALIDATION_ERROR', field: 'assetUrl' });
      expect((await rest(gw, buyer, 'list_creatives', { filters: { creative_ids: ['js-ban', 'js-click', 'js-mcp'] } })).body.creatives).toEqual([]);
    });

    it('create_media_buy and get_products refuse them as brand_manifest.url (422 VALIDATION_ERROR at the field)', async () => {
      for (const url of schemes) {
        const created = await rest(gw, buyer, 'create_media_buy', buyRequest({ brand_manifest: { url } }));
        expect({ url, status: created.status, error: created.body.error }).toEqual({ url, status: 422, error: { code: 'VALIDATION_ERROR', message: expect.stringContaining('must be an http or https URL'), field: 'brand_manifest.url' } });
        const named = await rest(gw, buyer, 'create_media_buy', buyRequest({ brand_manifest: { name: 'Acme', url } }));
        expect({ url, status: named.status, field: named.body.error?.field }).toEqual({ url, status: 422, field: 'brand_manifest.url' });
        const products = await rest(gw, buyer, 'get_products', { brief: 'x', brand_manifest: { url } });
        expect({ url, status: products.status, field: products.body.error?.field }).toEqual({ url, status: 422, field: 'brand_manifest.url' });
      }
      // The 3.0 shape's bare string is the same field.
      const bare = await rest(gw, buyer, 'create_media_buy', buyRequest({ brand_manifest: schemes[0] }));
      expect({ status: bare.status, field: bare.body.error?.field }).toEqual({ status: 422, field: 'brand_manifest.url' });
    });

    it('seed_creative refuses them in fixture assets', async () => {
      const seeded = await mcp(gw, buyer, 'comply_test_controller', { scenario: 'seed_creative', account: SANDBOX, params: { creative_id: 'js-seed', fixture: { assets: { image: { url: schemes[0] } } } } });
      expect(seeded).toMatchObject({ success: false, error: 'INVALID_PARAMS', error_detail: 'params.fixture.assets.image.url must be an http or https URL' });
    });
  });

  describe('finding 6: documents built from the Host header', () => {
    const documents = ['/.well-known/brand.json', '/.well-known/agent-card.json', '/.well-known/oauth-protected-resource/mcp'];

    it('without PUBLIC_URL: Vary: Host and not publicly cacheable', async () => {
      for (const path of documents) {
        const r = await getWithHost(gw, path, 'evil.example');
        expect({ path, status: r.status }).toEqual({ path, status: 200 });
        expect({ path, vary: String(r.headers.vary).toLowerCase().split(/,\s*/) }).toEqual({ path, vary: expect.arrayContaining(['host']) });
        expect({ path, cacheControl: r.headers['cache-control'] }).toEqual({ path, cacheControl: expect.stringMatching(/^private\b/) });
      }
      const brand = JSON.parse((await getWithHost(gw, '/.well-known/brand.json', 'evil.example')).body) as Json;
      expect(brand.agents[0].jwks_uri).toBe('http://evil.example/.well-known/jwks.json');
    });

    it('a Host that is not a syntactically valid host[:port] never becomes a URL: the listen origin is used', async () => {
      for (const host of ['a"b', 'evil.example/x?y', 'x y', 'evil.example:99999', 'evil.example:', '', 'user@evil.example', '[::1', 'evil..example']) {
        const brand = await getWithHost(gw, '/.well-known/brand.json', host);
        expect({ host, status: brand.status }).toEqual({ host, status: 200 });
        expect({ host, jwks: (JSON.parse(brand.body) as Json).agents[0].jwks_uri }).toEqual({ host, jwks: `${gw.url}/.well-known/jwks.json` });
        const prm = await getWithHost(gw, '/.well-known/oauth-protected-resource/mcp', host);
        expect({ host, resource: (JSON.parse(prm.body) as Json).resource }).toEqual({ host, resource: `${gw.url}/mcp` });
      }
      // The MCP endpoint neither fails on such a Host nor names it in its challenge.
      const rpc = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
      for (const host of ['x y', 'a"b']) {
        const anonymous = await withHost(gw, '/mcp', host, { body: rpc, headers: { 'content-type': 'application/json', accept: 'application/json' } });
        expect({ host, status: anonymous.status, challenge: anonymous.headers['www-authenticate'] }).toEqual({ host, status: 401, challenge: expect.stringContaining(`resource_metadata="${gw.url}/.well-known/oauth-protected-resource/mcp"`) });
        const listed = await withHost(gw, '/mcp', host, { body: rpc, headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${buyer}` } });
        expect({ host, status: listed.status }).toEqual({ host, status: 200 });
      }
      // Valid forms still name the host they were addressed to.
      for (const [host, origin] of [['Ads.Example.com:8443', 'http://ads.example.com:8443'], ['[::1]:4000', 'http://[::1]:4000'], ['127.0.0.1', 'http://127.0.0.1']]) {
        const brand = JSON.parse((await getWithHost(gw, '/.well-known/brand.json', host)).body) as Json;
        expect({ host, jwks: brand.agents[0].jwks_uri }).toEqual({ host, jwks: `${origin}/.well-known/jwks.json` });
      }
    });

    it('with PUBLIC_URL: publicly cacheable, the same whatever the Host', async () => {
      const pinned = await startTestGateway({ PUBLIC_URL: 'https://ads.example.com' });
      try {
        for (const path of documents) {
          const r = await getWithHost(pinned, path, 'evil.example');
          expect({ path, cacheControl: r.headers['cache-control'], body: r.body.includes('evil.example') }).toEqual({ path, cacheControl: expect.stringMatching(/^public, max-age=\d+$/), body: false });
        }
      } finally {
        await pinned.stop();
      }
    });
  });

  describe('finding 7: protocol answers', () => {
    it('REST get_media_buys: media_buy_ids is a filter, another buyer\'s ids list nothing, with or without webhook activity', async () => {
      const mine = (await rest(gw, buyer, 'create_media_buy', buyRequest())).body.media_buy_id as string;
      for (const ids of [[mine], [mine, 'mb_unknown'], ['mb_unknown']]) {
        for (const extra of [{}, { include_webhook_activity: true }, { include_webhook_activity: true, webhook_activity_limit: 5 }]) {
          const r = await rest(gw, other, 'get_media_buys', { media_buy_ids: ids, ...extra });
          expect({ ids, extra, status: r.status, body: r.body }).toEqual({ ids, extra, status: 200, body: { media_buys: [], pagination: { has_more: false } } });
        }
      }
      // The owner's own answer is unchanged: its buy, and nothing for the unknown id beside it.
      const own = await rest(gw, buyer, 'get_media_buys', { media_buy_ids: [mine, 'mb_unknown'], include_webhook_activity: true });
      expect(own.body.media_buys.map((b: Json) => b.media_buy_id)).toEqual([mine]);
      // The spec's singular media_buy_id names one buy: unknown and not-yours answer the same 404.
      for (const extra of [{}, { include_webhook_activity: true }]) {
        for (const id of [mine, 'mb_unknown']) {
          const r = await rest(gw, other, 'get_media_buys', { media_buy_id: id, ...extra });
          expect({ id, extra, status: r.status, body: r.body }).toEqual({ id, extra, status: 404, body: { error: { code: 'MEDIA_BUY_NOT_FOUND', message: 'no media buy of yours has this media_buy_id', field: 'media_buy_id' } } });
        }
      }
    });

    const REFUSAL = 'the request contains a "__proto__" or "constructor.prototype" key, which no field accepts';

    it('GraphQL refuses a __proto__ or constructor.prototype key inside a JSON object literal', async () => {
      for (const literal of ['{media_buy_ids: ["x"], __proto__: {role: "admin"}}', '{filters: {__proto__: {x: 1}}}', '{constructor: {prototype: {x: 1}}}', '{a: [{b: {__proto__: null}}]}']) {
        const r = await graphql(gw.url, `{ mediaBuys(request: ${literal}) }`, undefined, buyer);
        // A literal is checked while the document is validated: the refusal is a validation error.
        expect({ literal, data: r.body.data ?? null, errors: r.body.errors?.map((e) => ({ message: e.message, code: e.extensions?.code })) }).toEqual({
          literal,
          data: null,
          errors: [{ message: expect.stringContaining(REFUSAL), code: 'GRAPHQL_VALIDATION_FAILED' }],
        });
      }
      // A key that merely looks like them is fine.
      const fine = await graphql(gw.url, '{ mediaBuys(request: {constructor: "x", prototype: 1, proto: {}}) }', undefined, buyer);
      expect(fine.body.errors).toBeUndefined();
    });

    it('GraphQL refuses such keys in variables with the same words, not as a body that is not JSON', async () => {
      const query = 'query($r: JSONObject) { mediaBuys(request: $r) }';
      for (const variables of ['{"r": {"constructor": {"prototype": {"x": 1}}}}', '{"r": {"__proto__": {"x": 1}}}']) {
        const res = await fetch(`${gw.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${buyer}` }, body: `{"query": ${JSON.stringify(query)}, "variables": ${variables}}` });
        const body = (await res.json()) as Json;
        expect({ variables, status: res.status, body }).toEqual({ variables, status: 422, body: { errors: [{ message: REFUSAL, extensions: { code: 'VALIDATION_ERROR' } }] } });
      }
      // Variables a body parser never sees (a GET's query string) meet the scalar's own check.
      for (const variables of ['{"r": {"__proto__": {"x": 1}}}', '{"r": {"a": [{"constructor": {"prototype": {}}}]}}']) {
        const res = await fetch(`${gw.url}/graphql?query=${encodeURIComponent(query)}&variables=${encodeURIComponent(variables)}`, { headers: { authorization: `Bearer ${buyer}`, 'apollo-require-preflight': '1' } });
        const body = (await res.json()) as Json;
        expect({ variables, status: res.status, errors: body.errors.map((e: Json) => ({ message: e.message, code: e.extensions.code })) }).toEqual({ variables, status: 400, errors: [{ message: REFUSAL, code: 'VALIDATION_ERROR' }] });
      }
      // REST refuses the same body in the same words.
      const restAnswer = await rest(gw, buyer, 'get_media_buys', '{"constructor": {"prototype": {"x": 1}}}');
      expect({ status: restAnswer.status, body: restAnswer.body }).toEqual({ status: 422, body: { error: { code: 'VALIDATION_ERROR', message: REFUSAL } } });
      // Invalid JSON is still just that.
      const broken = await fetch(`${gw.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query": ' });
      expect(((await broken.json()) as Json).errors[0]).toEqual({ message: 'request body is not valid JSON', extensions: { code: 'BAD_REQUEST' } });
    });
  });
});
