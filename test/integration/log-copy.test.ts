import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import pg from 'pg';
import { allProjections } from '../../projections';
import { canonicalJson } from '../../src/shared/canonical-json';
import { KAFKA_BROKERS, PG_ADMIN_URL, createTestDatabase, describeWith, eventually } from '../support/infra';
import { BIN, ROOT, graphql, spawnGateway, tempDir, type GatewayProcess } from '../support/gateway';

const run = promisify(execFile);

/**
 * The size knob: the SQLite log holds at least this many events before it is copied (the default
 * keeps the suite near a minute here; LOG_COPY_EVENTS=1000000 for the million-event run).
 */
const EVENTS = Number(process.env.LOG_COPY_EVENTS ?? 10_000);
/**
 * The official storyboards the fill runs (through `adcp-gateway conformance`, as a buyer would),
 * for the breadth of event types; LOG_COPY_STORYBOARDS=all runs every one (minutes).
 */
const STORYBOARDS =
  process.env.LOG_COPY_STORYBOARDS ??
  'deterministic_testing,webhook_emission,media_buy_seller/creative_fate_after_cancellation,media_buy_seller/delivery_reporting,media_buy_seller/refine_products,sales_guaranteed,audience_sync,sales_social,media_buy_seller/governance_approved,media_buy_seller/governance_denied';

/** Event types the fill must have written (the flows it drives write these). */
const DRIVEN_TYPES = [
  'ApiKeyIssued', 'AccountSynced', 'CatalogPublished', 'StoryboardBundleImported', 'StoryboardImported', 'TestKitImported',
  'MediaBuyCreated', 'MediaBuyApproved', 'MediaBuyUpdated', 'MediaBuyStatusChanged', 'TaskSubmitted', 'TaskStatusChanged',
  'CreativeSynced', 'CreativeStatusChanged', 'AudienceSynced', 'WebhookScheduled', 'WebhookAttempted',
  'DeliveryReportScheduled', 'ProposalRefined', 'PlanSynced', 'GovernanceChecked', 'GovernanceAgentsSynced',
];

const cli = (args: string[], env: Record<string, string>) =>
  run(process.execPath, [BIN, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', LOG_LEVEL: 'silent', ...env }, timeout: 300_000, maxBuffer: 64 * 1024 * 1024 });

const headOf = async (url: string) => (await graphql<{ eventLog: { headPosition: number } }>(url, '{ eventLog { headPosition } }')).body.data!.eventLog.headPosition;
const ready = (gw: GatewayProcess) => eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 60_000, 'readyz');

/** Every projection's rows, each as canonical JSON, sorted: what a read model holds, engine aside. */
async function readModelRows(query: (sql: string) => Promise<Record<string, unknown>[]>): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const p of allProjections) {
    for (const table of p.tables) {
      const rows = await query(`SELECT * FROM ${table}`);
      out[table] = rows.map((r) => canonicalJson(Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === 'bigint' ? Number(v) : v])))).sort();
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

  beforeAll(async () => {
    target = await createTestDatabase('adcp_logcopy');
    const gw = await spawnGateway(env, 60_000);
    try {
      await ready(gw);
      buyer = (await cli(['keys', 'create', '--org', 'log-copy-buyer', '--role', 'buyer'], env)).stdout.trim();
      await eventually(async () => (await fetch(`${gw.url}/api/tasks/get_products`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${buyer}` }, body: '{"brief":"news"}' })).status === 200, 20_000, 'buyer key');
      // Breadth: the official storyboards, as a buyer runs them. Volume: buyers creating media
      // buys over REST (some over the approval threshold: submitted, then approved by the
      // simulated seller) and pausing some, until the log holds EVENTS events.
      const storyboards = cli(['conformance', '--url', gw.url, ...(STORYBOARDS === 'all' ? [] : ['--storyboards', STORYBOARDS])], env);
      let n = 0;
      const end = new Date(Date.now() + 30 * 86_400_000).toISOString();
      const post = async (task: string, body: unknown) => {
        const res = await fetch(`${gw.url}/api/tasks/${task}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${buyer}` }, body: JSON.stringify(body) });
        const answer = (await res.json()) as Record<string, any>;
        if (res.status >= 300) throw new Error(`${task}: ${res.status} ${JSON.stringify(answer)}`);
        return answer;
      };
      const worker = async () => {
        while ((await headOf(gw.url)) < EVENTS) {
          for (let i = 0; i < 20; i++) {
            const k = ++n;
            const created = await post('create_media_buy', {
              buyer_ref: `fill-${k}`,
              brand_manifest: { url: 'https://acme.example' },
              packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: k % 5 === 0 ? 90_000 : 1000 + k }],
              start_time: { type: 'asap' },
              end_time: end,
            });
            const id = created.media_buy_id as string | undefined;
            if (id && k % 3 === 0) await post('update_media_buy', { media_buy_id: id, end_time: new Date(Date.parse(end) + k * 60_000).toISOString() });
          }
        }
      };
      await Promise.all([worker(), worker(), worker(), worker()]);
      const conformance = await storyboards;
      expect(conformance.stderr).toMatch(/storyboards/);
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
    expect(stderr).toContain(`copied ${exported.events} events in ${exported.streams} streams; digest ${exported.digest}`);

    const topic = `adcp.events.logcopy-${randomBytes(4).toString('hex')}`;
    const onPg = await spawnGateway({ ...env, EVENT_STORE_URL: target.url, KAFKA_BROKERS: KAFKA_BROKERS!, KAFKA_TOPIC: topic, KAFKA_FEED_TOPIC: `${topic}.feed` }, 60_000);
    const onSqlite = await spawnGateway(env, 60_000);
    try {
      await Promise.all([ready(onPg), ready(onSqlite)]);
      const status = await graphql(onPg.url, '{ eventLog { store bus } }');
      expect(status.body.data!.eventLog).toEqual({ store: 'postgres', bus: 'kafka' });
      // Both logs stand where the copy left them (a start appends nothing new to either).
      const [pgHead, sqliteHead] = await Promise.all([headOf(onPg.url), headOf(onSqlite.url)]);
      expect(pgHead).toBe(sqliteHead);

      const sqlite = new Database(path.join(dataDir, 'adcp.sqlite'), { readonly: true });
      const client = new pg.Client({ connectionString: target.url });
      await client.connect();
      try {
        const fromSqlite = await readModelRows(async (sql) => sqlite.prepare(sql).all() as Record<string, unknown>[]);
        const fromPg = await readModelRows(async (sql) => (await client.query(sql)).rows);
        expect(Object.values(fromSqlite).reduce((a, rows) => a + rows.length, 0)).toBeGreaterThan(1000);
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
