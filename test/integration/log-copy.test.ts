import { execFile } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { Kafka, logLevel } from 'kafkajs';
import pg from 'pg';
import { allProjections } from '../../projections';
import { canonicalJson } from '../../src/shared/canonical-json';
import { KAFKA_BROKERS, PG_ADMIN_URL, createTestDatabase, describeWith, eventually } from '../support/infra';
import { mcpCall } from '../support/mcp-call';
import { startReceiver } from '../support/receiver';
import { BIN, ROOT, graphql, spawnGateway, tempDir, type GatewayProcess } from '../support/gateway';

const run = promisify(execFile);

/**
 * The size knob: the SQLite log holds at least this many events before it is copied (the default
 * keeps the suite near a minute here; LOG_COPY_EVENTS=1000000 for the million-event run).
 */
const EVENTS = Number(process.env.LOG_COPY_EVENTS ?? 10_000);
/**
 * Official storyboards the fill also runs (through `adcp-gateway conformance`, as a buyer would),
 * side by side, each a comma-separated list; `all` runs every one. Off by default: they take
 * minutes here. For example LOG_COPY_STORYBOARDS='media_buy_seller/governance_approved,audience_sync;webhook_emission'.
 */
const STORYBOARDS = (process.env.LOG_COPY_STORYBOARDS ?? '').split(';').filter(Boolean);

/** Event types the default fill writes (each flow below drives some; the gateway's start the rest). */
const DRIVEN_TYPES = [
  'ApiKeyIssued', 'AccountSynced', 'CatalogPublished', 'StoryboardBundleImported', 'StoryboardImported', 'TestKitImported', 'IdempotentResponseRecorded',
  'MediaBuyCreated', 'MediaBuyApproved', 'MediaBuyRejected', 'MediaBuyUpdated', 'MediaBuyStatusChanged', 'TaskSubmitted', 'TaskStatusChanged',
  'CreativeSynced', 'AudienceSynced', 'AudienceDeleted', 'BuyerCatalogSynced', 'EventSourceSynced', 'ConversionsLogged', 'WebhookScheduled', 'WebhookAttempted',
];

type Json = Record<string, any>;
const ACCOUNT = { brand: { domain: 'acme-outdoor.com' }, operator: 'pinnacle-media.com' };
const sha = (s: string) => createHash('sha256').update(s).digest('hex');

/**
 * A buyer's session over MCP, as an AdCP client runs it: an account, buys that wait for the seller
 * and buys that do not, webhooks to a receiver, creatives assigned to packages, cancellations,
 * audiences, catalogs, event sources and conversions. Returns once `rounds` rounds are done.
 */
async function buyerSession(url: string, key: string, seller: string, receiver: string, tag: string, rounds: number): Promise<void> {
  const call = async (name: string, args: Json) => {
    const answer = await mcpCall(url, key, name, { idempotency_key: `${tag}-${randomUUID()}`, ...args }, { validate: false });
    if (answer.isError) throw new Error(`${name}: ${JSON.stringify(answer.body)}`);
    return answer.body;
  };
  await call('sync_accounts', { accounts: [{ ...ACCOUNT, billing: 'operator', payment_terms: 'net_30' }] });
  await call('sync_event_sources', { account: ACCOUNT, event_sources: [{ event_source_id: `web-${tag}`, name: 'Website', event_types: ['purchase', 'add_to_cart'], allowed_domains: ['acme-outdoor.com'] }] });
  const end = new Date(Date.now() + 20 * 86_400_000).toISOString();
  for (let r = 0; r < rounds; r++) {
    const id = `${tag}-${r}`;
    const created = await call('create_media_buy', {
      account: ACCOUNT,
      brand: { domain: 'acme-outdoor.com' },
      start_time: 'asap',
      end_time: end,
      // Every fourth over the approval threshold: submitted, then approved or rejected by the seller.
      packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: r % 4 === 0 ? 90_000 : 2000 + r }],
      push_notification_config: { url: `${receiver}/tasks/${id}` },
    });
    if (created.status === 'submitted') {
      const decided = await graphql(url, `mutation($t: ID!) { ${r % 8 === 0 ? 'approveTask' : 'rejectTask'}(taskId: $t${r % 8 === 0 ? '' : ', reason: "over budget"'}) }`, { t: created.task_id }, seller);
      if (decided.body.errors) throw new Error(JSON.stringify(decided.body.errors));
    }
    if (created.media_buy_id) {
      await call('sync_creatives', {
        account: ACCOUNT,
        creatives: Array.from({ length: 40 }, (_, i) => ({ creative_id: `${id}-c${i}`, name: `MPU ${i}`, format_id: { agent_url: 'https://creative.adcontextprotocol.org', id: 'display_300x250' }, assets: { image: { url: `https://cdn.acme.example/${id}-${i}.png`, width: 300, height: 250 } } })),
        assignments: [{ creative_id: `${id}-c0`, package_id: created.packages[0].package_id }],
      });
      if (r % 3 === 1) await call('update_media_buy', { account: ACCOUNT, media_buy_id: created.media_buy_id, canceled: true });
      else await call('update_media_buy', { account: ACCOUNT, media_buy_id: created.media_buy_id, end_time: new Date(Date.parse(end) + r * 60_000).toISOString() });
    }
    await call('sync_audiences', { account: ACCOUNT, audiences: [{ audience_id: `aud-${id}`, add: Array.from({ length: 3 }, (_, i) => ({ external_id: `crm-${id}-${i}`, hashed_email: sha(`u${i}-${id}@acme.example`) })) }] });
    if (r % 5 === 4) await call('sync_audiences', { account: ACCOUNT, audiences: [{ audience_id: `aud-${id}`, delete: true }] });
    if (r % 4 === 2) await call('sync_catalogs', { account: ACCOUNT, catalogs: [{ catalog_id: `cat-${id}`, type: 'product', name: 'Spring', content_id_type: 'sku', items: [{ item_id: 'a', title: 'Item a', url: 'https://acme-outdoor.com/p/a', image_url: 'https://cdn.acme-outdoor.com/a.jpg', price: { amount: 10, currency: 'USD' } }] }] });
    await call('log_event', { event_source_id: `web-${tag}`, events: [{ event_id: `e-${id}`, event_type: 'purchase', event_time: new Date(Date.now() - 60_000).toISOString(), user_match: { click_id: `gclid-${id}` }, custom_data: { value: 10 + r, currency: 'USD' } }] });
  }
}

const cli = (args: string[], env: Record<string, string>) =>
  run(process.execPath, [BIN, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', LOG_LEVEL: 'silent', ...env }, timeout: 300_000, maxBuffer: 64 * 1024 * 1024 });

const headOf = async (url: string) => (await graphql<{ eventLog: { headPosition: number } }>(url, '{ eventLog { headPosition } }')).body.data!.eventLog.headPosition;
const ready = (gw: GatewayProcess) => eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 60_000, 'readyz');

/**
 * A read-model cell, engine aside: a JSON document kept as text compares as JSON (events read back
 * from PostgreSQL's jsonb have their keys in jsonb's order, so the text a projection writes from
 * them differs in key order only), a BIGINT as a number.
 */
function cell(v: unknown): unknown {
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'string' && /^[[{]/.test(v)) {
    try {
      return { json: JSON.parse(v) as unknown };
    } catch {
      return v;
    }
  }
  return v;
}

/** Every projection's rows, each as canonical JSON, sorted: what a read model holds, engine aside. */
async function readModelRows(query: (sql: string) => Promise<Record<string, unknown>[]>): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const p of allProjections) {
    for (const table of p.tables) {
      const rows = await query(`SELECT * FROM ${table}`);
      out[table] = rows.map((r) => canonicalJson(Object.fromEntries(Object.entries(r).map(([k, v]) => [k, cell(v)])))).sort();
    }
  }
  return out;
}

describeWith('PostgreSQL and Kafka', !!PG_ADMIN_URL && !!KAFKA_BROKERS, 'log copy: a SQLite log moved to PostgreSQL + Kafka', () => {
  const dataDir = tempDir('adcp-log-copy-');
  const sqliteUrl = `sqlite:${path.join(dataDir, 'adcp.sqlite')}`;
  const env = { DATA_DIR: dataDir, ALLOW_PRIVATE_WEBHOOK_URLS: '1', SANDBOX_APPROVAL_DELAY_MS: '200' };
  let target: { url: string; drop: () => Promise<void> };
  let exported: { events: number; streams: number; digest: string };
  let buyer = '';
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    target = await createTestDatabase('adcp_logcopy');
    receiver = await startReceiver();
    const gw = await spawnGateway(env, 60_000);
    try {
      await ready(gw);
      // The seller's key first: once the buyer's works, the gateway has read both.
      const seller = (await cli(['keys', 'create', '--org', 'log-copy-seller', '--role', 'seller'], env)).stdout.trim();
      buyer = (await cli(['keys', 'create', '--org', 'log-copy-buyer', '--role', 'buyer'], env)).stdout.trim();
      await eventually(async () => (await fetch(`${gw.url}/api/tasks/get_products`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${buyer}` }, body: '{"brief":"news"}' })).status === 200, 20_000, 'buyer key');
      // Buyers at work over MCP (four side by side, with webhooks to a receiver), and the official
      // storyboards when asked for, until the log holds EVENTS events.
      const storyboards = Promise.all(STORYBOARDS.map((list) => cli(['conformance', '--url', gw.url, ...(list === 'all' ? [] : ['--storyboards', list])], env).catch(() => undefined)));
      let session = 0;
      const buyerAtWork = async () => {
        while ((await headOf(gw.url)) < EVENTS) await buyerSession(gw.url, buyer, seller, receiver.origin, `s${++session}`, 10);
      };
      await Promise.all([buyerAtWork(), buyerAtWork(), buyerAtWork(), buyerAtWork()]);
      await storyboards;
      // Every webhook scheduled has been attempted before the gateway stops: a delivery still due
      // would be made (and recorded) again by each gateway started on the log, at its own pace.
      await eventually(async () => {
        const types = (await graphql<{ eventLog: { eventTypes: { type: string; count: number }[] } }>(gw.url, '{ eventLog { eventTypes { type count } } }')).body.data!.eventLog.eventTypes;
        const count = (type: string) => types.find((t) => t.type === type)?.count ?? 0;
        return count('WebhookAttempted') >= count('WebhookScheduled');
      }, 60_000, 'every scheduled webhook attempted');
      await ready(gw);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n--- the gateway's log:\n${gw.stderr().slice(-4000)}`);
    } finally {
      expect(await gw.stop()).toBe(0);
    }
    exported = JSON.parse((await cli(['log', 'export', '--to', path.join(dataDir, 'sqlite.ndjson')], { ...env, EVENT_STORE_URL: sqliteUrl })).stdout).exported;
  }, 600_000);

  afterAll(async () => {
    await target?.drop();
    await receiver?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it(`the SQLite log holds at least ${EVENTS} events, of every type the flows write`, async () => {
    expect(exported.events).toBeGreaterThanOrEqual(EVENTS);
    const db = new Database(path.join(dataDir, 'adcp.sqlite'), { readonly: true });
    const types = new Set((db.prepare('SELECT DISTINCT type FROM events').all() as { type: string }[]).map((r) => r.type));
    db.close();
    expect(DRIVEN_TYPES.filter((t) => !types.has(t))).toEqual([]);
  });

  it('copies to PostgreSQL with the same digest; a gateway there (Kafka) builds every read model equal to SQLite’s and answers the same reads', async () => {
    const { stdout, stderr } = await cli(['log', 'copy', '--from', sqliteUrl, '--to', target.url], env);
    expect(JSON.parse(stdout).copied).toEqual(exported);
    expect(JSON.parse(stdout).side_effects_done_up_to).toBe(exported.events);
    expect(stderr).toContain(`copied ${exported.events} events in ${exported.streams} streams; digest ${exported.digest}`);

    const topic = `adcp.events.logcopy-${randomBytes(4).toString('hex')}`;
    // One public origin for both, so answers that name the agent's own URL agree.
    const publicUrl = { PUBLIC_URL: 'https://ads.example' };
    const onPg = await spawnGateway({ ...env, ...publicUrl, EVENT_STORE_URL: target.url, KAFKA_BROKERS: KAFKA_BROKERS!, KAFKA_TOPIC: topic, KAFKA_FEED_TOPIC: `${topic}.feed` }, 60_000);
    const onSqlite = await spawnGateway({ ...env, ...publicUrl }, 60_000);
    try {
      await Promise.all([ready(onPg), ready(onSqlite)]);
      const status = await graphql(onPg.url, '{ eventLog { store bus } }');
      expect(status.body.data!.eventLog).toEqual({ store: 'postgres', bus: 'kafka' });
      // Both logs stand where the copy left them: a start appends nothing to either (the target's
      // side-effect consumers start at the mark the copy recorded, so nothing old is redone).
      const [pgHead, sqliteHead] = await Promise.all([headOf(onPg.url), headOf(onSqlite.url)]);
      expect(pgHead).toBe(sqliteHead);
      expect(sqliteHead).toBe(exported.events);
      // The source published its log to its own cluster: the new topics start at the move (empty here).
      const admin = new Kafka({ clientId: 'log-copy-test', brokers: KAFKA_BROKERS!.split(','), logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      try {
        for (const t of [topic, `${topic}.feed`]) expect({ topic: t, messages: (await admin.fetchTopicOffsets(t)).reduce((n, p) => n + Number(p.high), 0) }).toEqual({ topic: t, messages: 0 });
      } finally {
        await admin.disconnect();
      }

      const sqlite = new Database(path.join(dataDir, 'adcp.sqlite'), { readonly: true });
      const client = new pg.Client({ connectionString: target.url });
      await client.connect();
      try {
        const fromSqlite = await readModelRows(async (sql) => sqlite.prepare(sql).all() as Record<string, unknown>[]);
        const fromPg = await readModelRows(async (sql) => (await client.query(sql)).rows);
        expect(Object.values(fromSqlite).reduce((a, rows) => a + rows.length, 0)).toBeGreaterThan(1000);
        expect(Object.keys(fromPg).sort()).toEqual(Object.keys(fromSqlite).sort());
        for (const table of Object.keys(fromSqlite)) expect({ table, rows: fromPg[table] }).toEqual({ table, rows: fromSqlite[table] });
      } finally {
        sqlite.close();
        await client.end();
      }

      // The same reads, over REST and GraphQL, answer the same on both.
      const rest = async (url: string, task: string, body: unknown) => {
        const res = await fetch(`${url}/api/tasks/${task}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${buyer}` }, body: JSON.stringify(body) });
        return { status: res.status, body: await res.json() };
      };
      for (const [task, body] of [
        ['get_media_buys', {}],
        ['get_media_buys', { status_filter: ['pending_activation', 'paused'] }],
        ['list_creatives', {}],
        ['list_accounts', {}],
        ['get_products', { brief: 'news' }],
      ] as const) {
        const [a, b] = await Promise.all([rest(onPg.url, task, body), rest(onSqlite.url, task, body)]);
        expect(a.status).toBe(200);
        expect({ task, answer: a.body }).toEqual({ task, answer: b.body });
      }
      const queries = [
        '{ mediaBuysConnection(first: 100) { edges { node { id status } } pageInfo { hasNextPage endCursor } } }',
        '{ eventLog { headPosition eventTypes { type count lastPosition } } }',
        '{ creativesConnection(first: 100) { edges { node { id } } } }',
        '{ receivedWebhooks(limit: 100) { taskId } }',
      ];
      for (const q of queries) {
        const [a, b] = await Promise.all([graphql(onPg.url, q, undefined, buyer), graphql(onSqlite.url, q, undefined, buyer)]);
        expect(a.body.errors).toBeUndefined();
        expect({ q, data: a.body.data }).toEqual({ q, data: b.body.data });
      }
    } finally {
      expect(await onPg.stop()).toBe(0);
      expect(await onSqlite.stop()).toBe(0);
    }
  }, 240_000);

  it('refuses to copy or import into a store that holds events, writing nothing', async () => {
    const before = await headOfPg(target.url);
    await expect(cli(['log', 'copy', '--from', sqliteUrl, '--to', target.url], env)).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('the target store is not empty (its log reaches position'),
    });
    await expect(cli(['log', 'import', path.join(dataDir, 'sqlite.ndjson'), '--to', target.url], env)).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining('is not empty') });
    expect(await headOfPg(target.url)).toBe(before);
  }, 60_000);

  it('export → import round trip (into SQLite and PostgreSQL) gives the same digest, and a cut-short file writes nothing', async () => {
    const file = path.join(dataDir, 'sqlite.ndjson');
    const intoSqlite = `sqlite:${path.join(dataDir, 'imported', 'adcp.sqlite')}`;
    const imported = JSON.parse((await cli(['log', 'import', file, '--to', intoSqlite], env)).stdout).imported;
    expect(imported).toEqual(exported);
    const reExported = JSON.parse((await cli(['log', 'export', '--from', intoSqlite, '--to', path.join(dataDir, 'again.ndjson')], env)).stdout).exported;
    expect(reExported).toEqual(exported);

    const pgDb = await createTestDatabase('adcp_logimport');
    try {
      expect(JSON.parse((await cli(['log', 'import', file, '--to', pgDb.url], env)).stdout).imported).toEqual(exported);
      // From PostgreSQL back out to stdout: the same trailer.
      const { stdout } = await cli(['log', 'export', '--from', pgDb.url, '--to', '-'], env);
      const lines = stdout.trimEnd().split('\n');
      expect(JSON.parse(lines.at(-1)!)).toEqual({ end: exported });
      expect(lines).toHaveLength(exported.events + 2);

      const cut = path.join(dataDir, 'cut.ndjson');
      fs.writeFileSync(cut, fs.readFileSync(file, 'utf8').split('\n').slice(0, 500).join('\n') + '\n');
      const empty = `sqlite:${path.join(dataDir, 'cut', 'adcp.sqlite')}`;
      await expect(cli(['log', 'import', cut, '--to', empty], env)).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining('without its trailer: it is cut short') });
      const db = new Database(path.join(dataDir, 'cut', 'adcp.sqlite'), { readonly: true, fileMustExist: true });
      expect((db.prepare('SELECT COUNT(*) AS n FROM events').get() as { n: number }).n).toBe(0);
      db.close();
    } finally {
      await pgDb.drop();
    }
  }, 120_000);
});

async function headOfPg(url: string): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return Number((await c.query('SELECT COALESCE(MAX(position), 0) AS p FROM events')).rows[0].p);
  } finally {
    await c.end();
  }
}
