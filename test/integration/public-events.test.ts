import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Parser } from '@asyncapi/parser';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { Kafka as CeKafka } from 'cloudevents';
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { issueApiKey } from '../../src/application/api-keys';
import { ROOT, graphql, startTestGateway } from '../support/gateway';
import { ownerScopedId } from '../../src/shared/ids';
import { KAFKA_BROKERS, describeWith, eventually, freePort } from '../support/infra';
import { mcpCall } from '../support/mcp-call';
import { startOrigins } from '../support/origins';
import { startReceiver } from '../support/receiver';

type Json = Record<string, any>;

const future = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();
const SANDBOX = { brand: { domain: 'acme-events.example' }, operator: 'agency.example', sandbox: true };
const AGENT = 'https://creative.adcontextprotocol.org';
const PUSH_TOKEN = `push-credential-${randomBytes(12).toString('hex')}`;
const WK = '/.well-known/adagents.json';
let n = 0;
const idem = (what: string) => `public-events-${what}-${Date.now()}-${++n}`;

/** A message as read from a public topic. */
interface Read {
  topic: string;
  partition: number;
  key: string;
  headers: Record<string, string>;
  value: string;
}

/**
 * Issue 37's must-show: a whole buyer and seller flow on real Kafka, then the public topics read
 * back by a plain kafkajs consumer, every message checked the way an outside subscriber would:
 * the CloudEvents SDK's Kafka binding parses it, the AsyncAPI document (loaded with the AsyncAPI
 * parser) has a schema that validates it, one entity's events arrive in log order, and nothing
 * credential-bearing is there.
 */

/** A gateway relaying to public topics under `prefix` (manual approval, a quick sandbox approval, loopback webhooks). */
function startPublicTopicsGateway(prefix: string, extra: Record<string, string> = {}) {
  return startTestGateway({
    KAFKA_BROKERS: KAFKA_BROKERS!,
    KAFKA_TOPIC: `${prefix}raw`,
    KAFKA_FEED_TOPIC: `${prefix}feed`,
    KAFKA_PUBLIC_TOPIC_PREFIX: prefix,
    APPROVAL_POLICY: 'manual',
    SANDBOX_APPROVAL_DELAY_MS: '300',
    ALLOW_PRIVATE_WEBHOOK_URLS: '1',
    ...extra,
  });
}

/** A Kafka consumer of its own group for the topics under `prefix`. */
function subscriber(prefix: string) {
  return new Kafka({ clientId: `${prefix}it`, brokers: KAFKA_BROKERS!.split(','), logLevel: logLevel.NOTHING }).consumer({ groupId: `${prefix}subscriber` });
}

/** Reads every public topic under `prefix` from the beginning into `read`. */
async function readPublicTopics(consumer: Consumer, prefix: string, read: Read[]): Promise<void> {
  await consumer.subscribe({ topics: ['media_buy', 'task', 'creative', 'webhook', 'registry'].map((d) => `${prefix}${d}`), fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ topic, partition, message }) => {
      const headers = Object.fromEntries(Object.entries(message.headers ?? {}).map(([k, v]) => [k, String(v)]));
      read.push({ topic, partition, key: message.key!.toString(), headers, value: message.value!.toString('utf8') });
    },
  });
}

describeWith('Kafka', Boolean(KAFKA_BROKERS), 'public events on Kafka (CloudEvents, AsyncAPI)', () => {
  it('a whole flow reaches subscribers as valid, ordered, credential-free CloudEvents', async () => {
    const prefix = `pe-${randomBytes(4).toString('hex')}.`;
    // The buyer's endpoint refuses the first delivery: the webhook is retried.
    const receiver = await startReceiver((_w, seen) => (seen.length === 0 ? 503 : 200));
    const agent = { url: 'https://sales.example/mcp', authorized_for: 'Display', authorization_type: 'property_tags', property_tags: ['all'] };
    const origins = await startOrigins({
      'pub-events.example': { [WK]: { body: { authorized_agents: [agent], properties: [{ property_id: 'home', publisher_domain: 'pub-events.example', tags: ['all'] }] } } },
    });
    const gw = await startPublicTopicsGateway(prefix, { REGISTRY_ORIGIN_OVERRIDES: origins.overrides });
    const consumer = subscriber(prefix);
    const read: Read[] = [];
    try {
      const now = { now: new Date().toISOString() };
      const buyer = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, now)).key;
      const admin = (await issueApiKey(gw.app.store, { org: 'ops', role: 'admin' }, now)).key;
      const seller = (await issueApiKey(gw.app.store, { org: 'publisher', role: 'seller' }, now)).key;
      await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 30_000, 'readyz');
      const mcp = async (name: string, args: Json): Promise<Json> => {
        const answer = await mcpCall(gw.url, buyer, name, args, { validate: false });
        expect({ name, error: answer.isError || answer.body.success === false ? answer.body : undefined }).toEqual({ name, error: undefined });
        return answer.body;
      };

      // Create with approval (the sandbox's simulated seller approves), its task webhook retried once.
      await mcp('sync_accounts', { accounts: [{ ...SANDBOX, billing: 'operator' }], idempotency_key: idem('accounts') });
      const created = await mcp('create_media_buy', {
        account: SANDBOX,
        brand: SANDBOX.brand,
        idempotency_key: idem('create'),
        start_time: 'asap',
        end_time: future(10),
        packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 2000 }],
        push_notification_config: { url: `${receiver.origin}/tasks`, authentication: { schemes: ['HMAC-SHA256'], credentials: PUSH_TOKEN } },
      });
      expect(created).toMatchObject({ status: 'submitted', task_id: expect.any(String) });
      const task = (await eventually(async () => {
        const t = await mcp('tasks_get', { account: SANDBOX, task_id: created.task_id });
        return t.status === 'completed' ? t : undefined;
      }, 30_000, 'approval'))!;
      const buyId = task.result.media_buy_id as string;
      const packageId = (await mcp('get_media_buys', { account: SANDBOX, media_buy_ids: [buyId] })).media_buys[0].packages[0].package_id as string;

      // A creative, assigned: under manual approval the seller reviews the sync, then (the sandbox
      // controller playing the seller's reviewers) suspends it.
      const synced = await mcp('sync_creatives', {
        account: SANDBOX,
        idempotency_key: idem('sync'),
        creatives: [{ creative_id: 'pe-mpu', name: 'MPU', format_id: { agent_url: AGENT, id: 'display_300x250' }, assets: { image: { url: 'https://cdn.acme.example/mpu.png', width: 300, height: 250 } } }],
        assignments: [{ creative_id: 'pe-mpu', package_id: packageId }],
      });
      expect(synced).toMatchObject({ task_id: expect.any(String) });
      const approved = await graphql(gw.url, 'mutation($t: ID!) { approveTask(taskId: $t) }', { t: synced.task_id }, seller);
      expect(approved.body.data).toEqual({ approveTask: 'completed' });
      await mcp('comply_test_controller', { scenario: 'force_creative_status', account: SANDBOX, params: { creative_id: 'pe-mpu', status: 'suspended', rejection_reason: 'brand safety review' } });
      // Delivery, then a pause.
      await mcp('comply_test_controller', { scenario: 'simulate_delivery', account: SANDBOX, params: { media_buy_id: buyId, impressions: 1000, reported_spend: { amount: 5, currency: 'USD' } } });
      await mcp('update_media_buy', { account: SANDBOX, media_buy_id: buyId, paused: true, idempotency_key: idem('pause') });
      // A registry revalidation.
      const rv = await fetch(`${gw.url}/api/registry/publisher/pub-events.example/adagents/revalidate`, { method: 'POST', headers: { authorization: `Bearer ${admin}` } });
      expect(rv.status).toBe(200);
      await eventually(() => receiver.received.some((w) => w.answered === 200), 30_000, 'the retried webhook delivered');

      // An outside subscriber reads the public topics from the beginning.
      await consumer.connect();
      await readPublicTopics(consumer, prefix, read);
      // A buyer's subjects are `<tenant>/<id>`; the registry's the entity alone.
      const idOf = (m: Read) => (m.headers.ce_tenant === 'shared' ? m.key : m.key.slice(m.key.indexOf('/') + 1));
      const typesOf = (subject?: string) => read.filter((m) => !subject || idOf(m) === subject).map((m) => m.headers.ce_type);
      const payloads = (type: string) => read.filter((m) => m.headers.ce_type === type).map((m) => JSON.parse(m.value) as Json);
      await eventually(
        () =>
          payloads('media_buy.status_changed.v1').some((d) => d.media_buy_id === buyId && d.status === 'paused') &&
          payloads('webhook.delivery_attempted.v1').some((d) => d.status === 'success' && d.attempt >= 2) &&
          typesOf('pub-events.example').includes('registry.adagents_revalidated.v1') &&
          typesOf('pe-mpu').includes('creative.status_changed.v1') &&
          typesOf(buyId).includes('media_buy.delivery_recorded.v1') &&
          typesOf(created.task_id).includes('task.status_changed.v1'),
        90_000,
        'the flow on the public topics',
      );

      // Every message: parsed by the CloudEvents SDK's Kafka binding, valid against the AsyncAPI document.
      const { document, diagnostics } = await new Parser().parse(fs.readFileSync(path.join(ROOT, 'schema', 'asyncapi.yaml'), 'utf8'));
      expect(diagnostics.filter((d) => d.severity === 0)).toEqual([]);
      const ajv = new Ajv({ strict: false, allErrors: true });
      addFormats(ajv);
      const messages = new Map(document!.messages().all().map((m) => [m.id(), { payload: ajv.compile(m.payload()!.json()), headers: ajv.compile(m.headers()!.json()) }]));
      const channels = new Map(document!.channels().all().map((c) => [`${prefix}${c.id()}`, new Set(c.messages().all().map((m) => m.id()))]));
      for (const m of read) {
        const event = CeKafka.toEvent({ key: m.key, value: m.value, headers: m.headers } as never) as { specversion: string; type: string; subject?: string; id: string; data: unknown };
        expect(event).toMatchObject({ specversion: '1.0', subject: m.key, id: m.headers.ce_id });
        const schema = messages.get(event.type);
        expect({ type: event.type, known: !!schema, onItsChannel: channels.get(m.topic)?.has(event.type) }).toEqual({ type: event.type, known: true, onItsChannel: true });
        expect({ type: event.type, data: event.data, errors: schema!.payload(event.data) ? null : schema!.payload.errors }).toEqual({ type: event.type, data: event.data, errors: null });
        expect({ type: event.type, errors: schema!.headers(m.headers) ? null : schema!.headers.errors }).toEqual({ type: event.type, errors: null });
      }

      // Per-entity order: one subject's events come in the log's order, on one partition.
      const bySubject = new Map<string, Read[]>();
      for (const m of read) bySubject.set(`${m.topic}|${m.key}`, [...(bySubject.get(`${m.topic}|${m.key}`) ?? []), m]);
      for (const [subject, ms] of bySubject) {
        const positions = ms.map((m) => Number(m.headers.ce_position));
        expect({ subject, positions }).toEqual({ subject, positions: [...positions].sort((a, b) => a - b) });
        expect({ subject, partitions: new Set(ms.map((m) => m.partition)).size }).toEqual({ subject, partitions: 1 });
      }
      const buyStory = read.filter((m) => idOf(m) === buyId && m.headers.ce_type === 'media_buy.status_changed.v1').map((m) => JSON.parse(m.value).status);
      expect(buyStory).toEqual(['active', 'paused']);
      expect(typesOf(buyId)[0]).toBe('media_buy.created.v1');
      const attempts = payloads('webhook.delivery_attempted.v1').filter((d) => d.idempotency_key === payloads('webhook.delivery_attempted.v1').find((x) => x.status === 'failed')?.idempotency_key);
      expect(attempts.map((d) => [d.attempt, d.status, d.http_status_code])).toEqual(expect.arrayContaining([[1, 'failed', 503], [2, 'success', 200]]));

      // No credential-bearing type or field, and no secret the flow used.
      const everything = read.map((m) => JSON.stringify(m)).join('\n');
      for (const secret of [buyer, admin, seller, PUSH_TOKEN, receiver.origin]) expect(everything.includes(secret)).toBe(false);
      expect(read.map((m) => m.headers.ce_type).filter((t) => /api_key|oauth|ApiKey|OAuth/i.test(t))).toEqual([]);
      expect(everything).not.toMatch(/"(salt|hash|secret|token|credentials|authentication|push_notification_config)"/);
    } finally {
      await consumer.disconnect().catch(() => {});
      await gw.stop();
      await receiver.close();
      await origins.close();
    }
  }, 240_000);

  /**
   * Issue 45, finding 5: the public topics carry every buyer's events, so each says whose it is and
   * no two buyers share a subject (or Kafka key), even where they chose the same ids: the same
   * creative id `hero` (one of them live), the same sandbox fixture buy. And nothing docs/events.md
   * says is never published is there: no owner org or its id tag, no callback host or URL, no
   * internal error's text.
   */
  it('two tenants with the same buyer-chosen ids: every message attributed, no subject or key shared, nothing private', async () => {
    const prefix = `pt-${randomBytes(4).toString('hex')}.`;
    const orgs = { a: `tenant-a-${randomBytes(6).toString('hex')}`, b: `tenant-b-${randomBytes(6).toString('hex')}` };
    // A buyer's callback that refuses connections: its failures would name the host and port.
    const closedPort = await freePort();
    const callback = `http://127.0.0.1:${closedPort}/hooks/${orgs.a}`;
    const rawError = `disk I/O error at /var/lib/adcp/${randomBytes(6).toString('hex')}.sqlite`;
    const gw = await startPublicTopicsGateway(prefix);
    const consumer = subscriber(prefix);
    const read: Read[] = [];
    try {
      const now = { now: new Date().toISOString() };
      const keys = { a: (await issueApiKey(gw.app.store, { org: orgs.a, role: 'buyer' }, now)).key, b: (await issueApiKey(gw.app.store, { org: orgs.b, role: 'buyer' }, now)).key };
      const seller = (await issueApiKey(gw.app.store, { org: 'publisher', role: 'seller' }, now)).key;
      await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 30_000, 'readyz');
      const mcp = async (who: 'a' | 'b', name: string, args: Json): Promise<Json> => {
        const answer = await mcpCall(gw.url, keys[who], name, args, { validate: false });
        expect({ who, name, error: answer.isError || answer.body.success === false ? answer.body : undefined }).toEqual({ who, name, error: undefined });
        return answer.body;
      };
      const rest = (who: 'a' | 'b', task: string, body: Json) =>
        fetch(`${gw.url}/api/tasks/${task}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${keys[who]}` }, body: JSON.stringify(body) });
      const approve = async (taskId: string) => {
        const answer = await graphql(gw.url, 'mutation($t: ID!) { approveTask(taskId: $t) }', { t: taskId }, seller);
        // A sandbox account's task may have been approved by the simulated seller first.
        if (answer.body.data?.approveTask !== 'completed') expect(JSON.stringify(answer.body.errors)).toMatch(/is (completed|working)/);
      };
      const hero = (who: 'a' | 'b') => ({ creative_id: 'hero', name: `Hero ${who}`, format_id: { agent_url: AGENT, id: 'display_300x250' }, assets: { image: { url: 'https://cdn.example/hero.png', width: 300, height: 250 } } });

      for (const who of ['a', 'b'] as const) {
        // The same sandbox fixture buy for both, delivered and paused (a status change names no owner).
        await mcp(who, 'sync_accounts', { accounts: [{ ...SANDBOX, billing: 'operator' }], idempotency_key: idem(`accounts-${who}`) });
        await mcp(who, 'comply_test_controller', { scenario: 'seed_media_buy', account: SANDBOX, params: { media_buy_id: 'fixture_mb_1' } });
        await mcp(who, 'comply_test_controller', { scenario: 'simulate_delivery', account: SANDBOX, params: { media_buy_id: 'fixture_mb_1', impressions: 1000, reported_spend: { amount: 5, currency: 'USD' } } });
        await mcp(who, 'update_media_buy', { account: SANDBOX, media_buy_id: 'fixture_mb_1', paused: true, idempotency_key: idem(`pause-${who}`) });
      }
      // The same creative id: a's live (no sandbox account), b's in the sandbox; manual approval
      // makes each sync a task the seller approves (the task once recorded its owner as resource).
      const liveSync = await mcp('a', 'sync_creatives', { idempotency_key: idem('sync-a'), creatives: [hero('a')] });
      const sandboxSync = await mcp('b', 'sync_creatives', { account: SANDBOX, idempotency_key: idem('sync-b'), creatives: [hero('b')] });
      await approve(liveSync.task_id);
      await approve(sandboxSync.task_id);
      await mcp('b', 'comply_test_controller', { scenario: 'force_creative_status', account: SANDBOX, params: { creative_id: 'hero', status: 'suspended', rejection_reason: 'brand safety review' } });

      // a's live buy, approved by the seller: its task webhook goes to the closed callback.
      const body = (ref: string, extra: Json = {}) => ({
        buyer_ref: ref,
        brand_manifest: { name: 'Tenant', url: 'https://tenant.example' },
        packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 1000 }],
        start_time: { type: 'asap' },
        end_time: future(7),
        ...extra,
      });
      const liveBuy = await rest('a', 'create_media_buy', body('tenant-live', { push_notification_config: { url: callback, operation_id: 'op-tenant-live', authentication: { schemes: ['HMAC-SHA256'], credentials: PUSH_TOKEN } } }));
      expect({ status: liveBuy.status, body: liveBuy.status === 200 ? undefined : await liveBuy.text() }).toEqual({ status: 200, body: undefined });
      await approve(((await liveBuy.json()) as Json).task_id);
      // b's create fails on an internal error after its task was recorded: the task fails.
      const store = gw.app.ports.store;
      const append = store.append.bind(store);
      store.append = (async (streamId: string, ...rest: unknown[]) => {
        if (streamId.startsWith('media-buy-')) throw new Error(rawError);
        return (append as (...a: unknown[]) => unknown)(streamId, ...rest);
      }) as typeof store.append;
      const failedCreate = await rest('b', 'create_media_buy', body('tenant-broken'));
      store.append = append;
      expect(failedCreate.status).toBe(500);
      expect(await failedCreate.text()).not.toContain(rawError);

      await consumer.connect();
      await readPublicTopics(consumer, prefix, read);
      const data = (m: Read) => JSON.parse(m.value) as Json;
      const of = (type: string, check: (d: Json) => boolean) => read.filter((m) => m.headers.ce_type === type && check(data(m)));
      // Counted, not told apart by tenant: the wait must not depend on what is checked below.
      await eventually(
        () =>
          of('creative.synced.v1', (d) => d.creative_id === 'hero').length === 2 &&
          of('creative.status_changed.v1', (d) => d.creative_id === 'hero' && d.status === 'suspended').length === 1 &&
          of('media_buy.status_changed.v1', (d) => d.media_buy_id === 'fixture_mb_1' && d.status === 'paused').length === 2 &&
          of('media_buy.delivery_recorded.v1', (d) => d.media_buy_id === 'fixture_mb_1').length >= 2 &&
          of('webhook.delivery_attempted.v1', (d) => d.status === 'connection_error').length > 0 &&
          of('task.status_changed.v1', (d) => d.status === 'failed').length > 0 &&
          of('task.status_changed.v1', (d) => d.task_type === 'sync_creatives').length === 2,
        90_000,
        'both tenants’ events on the public topics',
      );

      // Everything the finding is about, gathered first so a failure shows all of it at once.
      const buyers = read.filter((m) => m.topic !== `${prefix}registry`);
      const tenantsOfKey = new Map<string, Set<string | undefined>>();
      for (const m of read) tenantsOfKey.set(m.key, new Set([...(tenantsOfKey.get(m.key) ?? []), m.headers.ce_tenant]));
      const heroes = of('creative.synced.v1', (d) => d.creative_id === 'hero');
      const everything = read.map((m) => JSON.stringify(m)).join('\n');
      // Never published (docs/events.md): the owner orgs and their id tags, the callback, an internal error's text, credentials.
      const never = {
        ...orgs,
        tagA: ownerScopedId(orgs.a, 'x').split('~')[1]!,
        tagB: ownerScopedId(orgs.b, 'x').split('~')[1]!,
        callback,
        callbackHost: `127.0.0.1:${closedPort}`,
        rawError,
        rawErrorStart: 'disk I/O error',
        push: PUSH_TOKEN,
        keyA: keys.a,
        keyB: keys.b,
      };
      const findings = {
        // Every buyer's message says whose it is, with an opaque key; the registry's say `shared`.
        unattributed: buyers.filter((m) => !/^t_[A-Za-z0-9_-]{22}$/.test(m.headers.ce_tenant ?? '')).length,
        registryNotShared: read.filter((m) => m.topic === `${prefix}registry` && m.headers.ce_tenant !== 'shared').length,
        tenants: new Set(buyers.map((m) => m.headers.ce_tenant)).size,
        // No subject (so no Kafka key) holds two tenants' events; a buyer's subject is its tenant's.
        subjectNotKey: read.filter((m) => m.headers.ce_subject !== m.key).length,
        keysOfTwoTenants: [...tenantsOfKey].filter(([, ts]) => ts.size > 1).map(([key]) => key),
        keysOutsideTheirTenant: buyers.filter((m) => !m.key.startsWith(`${m.headers.ce_tenant}/`)).length,
        heroKeys: new Set(heroes.map((m) => m.key)).size,
        heroKeyHoldsBothNames: [...new Set(heroes.map((m) => m.key))].filter((k) => new Set(heroes.filter((m) => m.key === k).map((m) => data(m).name)).size > 1).length,
        fixtureKeys: new Set(of('media_buy.status_changed.v1', (d) => d.media_buy_id === 'fixture_mb_1').map((m) => m.key)).size,
        // A failed create says what kind of failure in fixed words; a failed webhook what failed, not where.
        failedTaskMessages: of('task.status_changed.v1', (d) => d.status === 'failed').map((m) => data(m).message),
        webhookErrors: [...new Set(of('webhook.delivery_attempted.v1', (d) => d.status === 'connection_error').map((m) => data(m).error_message))],
        syncTaskResourceIds: of('task.status_changed.v1', (d) => d.task_type === 'sync_creatives').map((m) => data(m).resource_id ?? null),
        neverPublishedFound: Object.entries(never).filter(([, text]) => everything.includes(text)).map(([what]) => what),
      };
      expect(findings).toEqual({
        unattributed: 0,
        registryNotShared: 0,
        tenants: 2,
        subjectNotKey: 0,
        keysOfTwoTenants: [],
        keysOutsideTheirTenant: 0,
        heroKeys: 2,
        heroKeyHoldsBothNames: 0,
        fixtureKeys: 2,
        failedTaskMessages: ['Internal error (INTERNAL_ERROR)'],
        webhookErrors: ['connection error (ECONNREFUSED)'],
        syncTaskResourceIds: [null, null],
        neverPublishedFound: [],
      });

      // And each message still matches the AsyncAPI document, the tenant header included.
      const { document } = await new Parser().parse(fs.readFileSync(path.join(ROOT, 'schema', 'asyncapi.yaml'), 'utf8'));
      const ajv = new Ajv({ strict: false, allErrors: true });
      addFormats(ajv);
      const messages = new Map(document!.messages().all().map((m) => [m.id(), { payload: ajv.compile(m.payload()!.json()), headers: ajv.compile(m.headers()!.json()) }]));
      for (const m of read) {
        const schema = messages.get(m.headers.ce_type!)!;
        expect({ type: m.headers.ce_type, payload: schema.payload(data(m)) ? null : schema.payload.errors, headers: schema.headers(m.headers) ? null : schema.headers.errors }).toEqual({ type: m.headers.ce_type, payload: null, headers: null });
      }
    } finally {
      await consumer.disconnect().catch(() => {});
      await gw.stop();
    }
  }, 240_000);
});
