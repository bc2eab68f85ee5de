import type { StoredEvent } from '../../../src/eventstore/port';
import { toCloudEventMessage } from '../../../src/public-events/cloudevents';
import { PUBLISHED_INTERNAL_TYPES, publicAttemptError, toPublicEvent, type Attribution, type PublicEvent } from '../../../src/public-events/mapping';
import { isTenantKey, tenantKeyer } from '../../../src/public-events/tenants';
import { PUBLIC_EVENT_TYPES, type PublicEventName } from '../../../src/public-events/types';

const AT = '2026-11-27T07:00:00.000Z';
let position = 0;
const produced = new Set<PublicEventName>();

function stored(type: string, data: unknown, streamId = 's-1'): StoredEvent {
  position += 1;
  return { id: `0190f000-0000-7000-8000-${String(position).padStart(12, '0')}`, streamId, type, data, metadata: { time: AT, principal: 'org-buyer' }, streamVersion: 1, position };
}

/** Maps, checks the result against its own zod definition (strict: no field beyond the contract), returns it. */
/** Every stream here was created by org-buyer (what the relay reads from the stream's first event). */
const BY: Attribution = { tenantKey: tenantKeyer(Buffer.alloc(32, 7)), streamOwner: async () => 'org-buyer' };
const T = BY.tenantKey('org-buyer');

async function publish(type: string, data: unknown): Promise<PublicEvent> {
  const e = stored(type, data);
  const pub = await toPublicEvent(e, BY);
  if (!pub) throw new Error(`${type} was not published`);
  const parsed = PUBLIC_EVENT_TYPES[pub.name].data.safeParse(pub.data);
  if (!parsed.success) throw new Error(`${pub.name}: ${parsed.error.message}`);
  expect(pub).toMatchObject({ id: e.id, position: e.position, time: AT });
  expect(JSON.stringify(pub)).not.toContain('org-buyer');
  produced.add(pub.name);
  return pub;
}

const PUSH = { url: 'https://buyer.example/hook', authentication: { schemes: ['Bearer'], credentials: 'secret-token-abcdefghijklmnopqrstuvwxyz' } };
const TERMS = {
  media_buy_id: 'mb_1',
  owner: 'org-buyer',
  buyer_ref: 'ref-1',
  account_id: 'acc_1',
  brand_manifest: { name: 'Acme' },
  start_time: '2026-12-01T00:00:00.000Z',
  end_time: '2026-12-31T00:00:00.000Z',
  currency: 'USD',
  total_budget: 5000,
  push_notification_config: PUSH,
  reporting_webhook: PUSH,
  governance: { plan_id: 'p', check_id: 'c', status: 'approved', governance_context: 'gov-token', agent_url: 'https://gov.example' },
  packages: [
    { package_id: 'pkg_1', product_id: 'prod_1', pricing_option_id: 'cpm', pricing_model: 'cpm', rate: 10, currency: 'USD', budget: 5000, creative_ids: ['cr_1'], targeting_overlay: { geo: ['US'] } },
  ],
};
const PACKAGES_PUBLIC = [{ package_id: 'pkg_1', product_id: 'prod_1', pricing_option_id: 'cpm', budget: 5000, creative_assignments: [{ creative_id: 'cr_1' }] }];

describe('public events: one mapping per internal event type', () => {
  it('MediaBuyCreated → media_buy.created v1: AdCP 3.0 status and packages, no webhook configs, owner or governance context', async () => {
    const pub = await publish('MediaBuyCreated', { ...TERMS, status: 'pending', task_id: 'task_1', at: AT });
    expect(pub.name).toBe('media_buy.created');
    expect(pub.subject).toBe(`${T}/mb_1`);
    expect(pub.tenant).toBe(T);
    expect(pub.data).toEqual({
      media_buy_id: 'mb_1',
      buyer_ref: 'ref-1',
      account_id: 'acc_1',
      start_time: TERMS.start_time,
      end_time: TERMS.end_time,
      currency: 'USD',
      total_budget: 5000,
      packages: PACKAGES_PUBLIC,
      status: 'pending_start',
      created_at: AT,
    });
  });

  it('MediaBuyApproved → media_buy.status_changed v1 (pending_start → active)', async () => {
    const pub = await publish('MediaBuyApproved', { media_buy_id: 'mb_1', task_id: 'task_1', note: 'IO signed', at: AT });
    expect(pub).toMatchObject({ name: 'media_buy.status_changed', subject: `${T}/mb_1`, data: { media_buy_id: 'mb_1', previous_status: 'pending_start', status: 'active', reason: 'IO signed', changed_at: AT } });
  });

  it('MediaBuyRejected → media_buy.status_changed v1 (→ rejected, with the reason)', async () => {
    const pub = await publish('MediaBuyRejected', { media_buy_id: 'mb_1', reason: 'inventory sold out', at: AT });
    expect(pub.data).toEqual({ media_buy_id: 'mb_1', previous_status: 'pending_start', status: 'rejected', reason: 'inventory sold out', changed_at: AT });
  });

  it('MediaBuyStatusChanged → media_buy.status_changed v1; a forced sandbox status wins when it is an AdCP status', async () => {
    expect((await publish('MediaBuyStatusChanged', { media_buy_id: 'mb_1', from: 'active', status: 'paused', reason: 'buyer asked', at: AT })).data).toEqual({
      media_buy_id: 'mb_1',
      previous_status: 'active',
      status: 'paused',
      reason: 'buyer asked',
      changed_at: AT,
    });
    expect((await publish('MediaBuyStatusChanged', { media_buy_id: 'mb_1', from: 'pending', status: 'active', forced_status: 'pending_creatives', at: AT })).data).toMatchObject({
      previous_status: 'pending_start',
      status: 'pending_creatives',
    });
  });

  it('MediaBuyUpdated → media_buy.updated v1 with what changed and the current terms', async () => {
    const pub = await publish('MediaBuyUpdated', { media_buy_id: 'mb_1', changed: ['packages[0].paused'], terms: { ...TERMS, packages: [{ ...TERMS.packages[0], paused: true }] }, at: AT });
    expect(pub.name).toBe('media_buy.updated');
    expect(pub.data).toMatchObject({ changed: ['packages[0].paused'], packages: [{ ...PACKAGES_PUBLIC[0], paused: true }], updated_at: AT });
    expect(JSON.stringify(pub.data)).not.toMatch(/credentials|push_notification_config|owner|governance/);
  });

  const HOUR = { package_id: 'pkg_1', hour_start: '2026-12-01T00:00:00.000Z', impressions: 1000, clicks: 7, spend_cents: 1234 };
  it('DeliveryRecorded → media_buy.delivery_recorded v1, spend in currency units', async () => {
    const pub = await publish('DeliveryRecorded', { media_buy_id: 'mb_1', owner: 'org-buyer', currency: 'USD', hours: [HOUR], through: '2026-12-01T01:00:00.000Z' });
    expect(pub).toMatchObject({ name: 'media_buy.delivery_recorded', subject: `${T}/mb_1` });
    expect(pub.data).toEqual({ media_buy_id: 'mb_1', currency: 'USD', through: '2026-12-01T01:00:00.000Z', hours: [{ package_id: 'pkg_1', hour_start: HOUR.hour_start, impressions: 1000, clicks: 7, spend: 12.34 }] });
  });

  it('DeliveryAdjusted → media_buy.delivery_adjusted v1', async () => {
    const pub = await publish('DeliveryAdjusted', { media_buy_id: 'mb_1', owner: 'org-buyer', hour: { ...HOUR, impressions: 900 }, previous: HOUR, reason: 'IVT', at: AT });
    expect(pub.data).toMatchObject({ media_buy_id: 'mb_1', hour: { impressions: 900 }, previous: { impressions: 1000 }, reason: 'IVT', adjusted_at: AT });
  });

  it('DeliveryDelayed → media_buy.delivery_delayed v1', async () => {
    const pub = await publish('DeliveryDelayed', { media_buy_id: 'mb_1', owner: 'org-buyer', expected_availability: '2026-12-02T00:00:00.000Z', reason: 'ad server late', at: AT });
    expect(pub.data).toEqual({ media_buy_id: 'mb_1', expected_availability: '2026-12-02T00:00:00.000Z', reason: 'ad server late', at: AT });
  });

  it('DeliveryReportSequenced → media_buy.delivery_report_issued v1 (AdCP notification_type, sequence_number, reporting_period)', async () => {
    const pub = await publish('DeliveryReportSequenced', { media_buy_id: 'mb_1', key: '3', notification_type: 'scheduled', sequence_number: 3, period: { start: '2026-12-01T00:00:00.000Z', end: '2026-12-02T00:00:00.000Z' }, at: AT });
    expect(pub.data).toEqual({ media_buy_id: 'mb_1', notification_type: 'scheduled', sequence_number: 3, reporting_period: { start: '2026-12-01T00:00:00.000Z', end: '2026-12-02T00:00:00.000Z' }, issued_at: AT });
  });

  it('TaskSubmitted → task.status_changed v1 (submitted), without the request, context or push config', async () => {
    const pub = await publish('TaskSubmitted', { task_id: 'task_1', task_type: 'create_media_buy', owner: 'org-buyer', resource_id: 'mb_1', push_notification_config: PUSH, context: { x: 1 }, request: { secret: 'y' }, message: 'awaiting approval', at: AT });
    expect(pub).toMatchObject({ name: 'task.status_changed', subject: `${T}/task_1` });
    expect(pub.data).toEqual({ task_id: 'task_1', task_type: 'create_media_buy', resource_id: 'mb_1', status: 'submitted', message: 'awaiting approval', timestamp: AT });
  });

  it('TaskStatusChanged → task.status_changed v1, without the acting principal', async () => {
    const pub = await publish('TaskStatusChanged', { task_id: 'task_1', from: 'submitted', status: 'completed', message: 'approved', result: { media_buy_id: 'mb_1' }, actor: 'org-seller', at: AT });
    expect(pub.data).toEqual({ task_id: 'task_1', previous_status: 'submitted', status: 'completed', message: 'approved', timestamp: AT });
  });

  it('CreativeSynced → creative.synced v1, without the assets', async () => {
    const pub = await publish('CreativeSynced', {
      creative_id: 'cr_1',
      owner: 'org-buyer',
      name: 'Banner',
      format_id: { agent_url: 'https://creative.adcontextprotocol.org', id: 'display_300x250' },
      format_type: 'display',
      assets: { image: { url: 'https://cdn.example/a.png' } },
      assigned_to: ['pkg_1'],
      hash: 'abc',
      status: 'approved',
      created: true,
      at: AT,
    });
    expect(pub).toMatchObject({ name: 'creative.synced', subject: `${T}/cr_1` });
    expect(pub.data).toEqual({ creative_id: 'cr_1', name: 'Banner', format_id: { agent_url: 'https://creative.adcontextprotocol.org', id: 'display_300x250' }, status: 'approved', created: true, assigned_to: ['pkg_1'], synced_at: AT });
  });

  it('CreativeStatusChanged → creative.status_changed v1 (the review outcome)', async () => {
    const pub = await publish('CreativeStatusChanged', { creative_id: 'cr_1', owner: 'org-buyer', from: 'pending_review', status: 'rejected', reason: 'brand safety', at: AT });
    expect(pub.data).toEqual({ creative_id: 'cr_1', previous_status: 'pending_review', status: 'rejected', reason: 'brand safety', changed_at: AT });
  });

  it('CreativeArchived → creative.status_changed v1 (archived)', async () => {
    expect((await publish('CreativeArchived', { creative_id: 'cr_1', owner: 'org-buyer', at: AT })).data).toEqual({ creative_id: 'cr_1', status: 'archived', changed_at: AT });
  });

  it('WebhookAttempted → webhook.delivery_attempted v1: the outcome, never the URL or auth', async () => {
    const pub = await publish('WebhookAttempted', {
      idempotency_key: 'whk_1',
      attempt: 2,
      status: 'failed',
      http_status_code: 503,
      error_message: 'HTTP 503',
      response_time_ms: 12,
      retry_after_seconds: 5,
      started_at: AT,
      at: AT,
      next_attempt_at: '2026-11-27T07:00:04.000Z',
    });
    expect(pub).toMatchObject({ name: 'webhook.delivery_attempted', subject: `${T}/whk_1` });
    expect(pub.data).toEqual({ idempotency_key: 'whk_1', attempt: 2, status: 'failed', http_status_code: 503, response_time_ms: 12, error_message: 'HTTP 503', attempted_at: AT, next_attempt_at: '2026-11-27T07:00:04.000Z' });
  });

  it('FeedEntryRecorded → registry.change_recorded v1 (the feed entry itself)', async () => {
    const entry = { event_id: 'fe_1', event_type: 'publisher.updated', entity_type: 'publisher', entity_id: 'pub.example', payload: { domain: 'pub.example' }, actor: 'revalidator', created_at: AT };
    const pub = await publish('FeedEntryRecorded', entry);
    expect(pub).toMatchObject({ name: 'registry.change_recorded', subject: 'pub.example', data: entry });
  });

  it('AdagentsRevalidated → registry.adagents_revalidated v1 (the verdict, not the manifest)', async () => {
    const result = {
      domain: 'pub.example',
      adagents_valid: false,
      checked_at: AT,
      issues: { errors: [{ field: 'authorized_agents', message: 'missing', severity: 'error' }], warnings: [] },
      properties_count: 0,
      authorized_agents_count: 0,
      status_code: 200,
      discovery_method: 'direct',
      authority: 'self',
    };
    const pub = await publish('AdagentsRevalidated', { domain: 'pub.example', result, manifest: { authorized_agents: [] }, transient: false, at: AT });
    expect(pub.data).toEqual({ domain: 'pub.example', adagents_valid: false, transient: false, status_code: 200, properties_count: 0, authorized_agents_count: 0, errors: [{ field: 'authorized_agents', message: 'missing' }], checked_at: AT });
  });

  it('publishes nothing for credential-bearing or bookkeeping types (the allow-list)', async () => {
    for (const type of ['ApiKeyIssued', 'ApiKeyRevoked', 'OAuthGrantIssued', 'OAuthGrantUsed', 'OAuthClientRegistered', 'OAuthTokenFamilyRevoked', 'WebhookScheduled', 'DeliveryReportScheduled', 'AccountSynced', 'Unknown']) {
      expect(await toPublicEvent(stored(type, { salt: 's', hash: 'h', secret: 'x' }), BY)).toBeUndefined();
    }
    expect([...PUBLISHED_INTERNAL_TYPES].filter((t) => /ApiKey|OAuth/.test(t))).toEqual([]);
    // toString, constructor…: only own keys of the table are mappers.
    expect(await toPublicEvent(stored('toString', {}), BY)).toBeUndefined();
  });

  it('shows ids as their buyer knows them, without the owner suffix a buyer-chosen id is stored with', async () => {
    const scoped = 'fixture_buy~AbCdEf123456';
    const pub = await publish('MediaBuyStatusChanged', { media_buy_id: scoped, from: 'active', status: 'paused', at: AT });
    expect(pub.subject).toBe(`${T}/fixture_buy`);
    expect(pub.data).toMatchObject({ media_buy_id: 'fixture_buy' });
    expect((await publish('TaskSubmitted', { task_id: 'my_task~AbCdEf123456', task_type: 'create_media_buy', owner: 'o', resource_id: scoped, message: 'm', at: AT })).data).toMatchObject({ task_id: 'my_task', resource_id: 'fixture_buy' });
  });

  it('a sync_creatives task publishes no resource_id: it holds the owner org, bookkeeping', async () => {
    const pub = await publish('TaskSubmitted', { task_id: 'task_s', task_type: 'sync_creatives', owner: 'org-buyer', resource_id: 'org-buyer', request: {}, message: 'Creatives awaiting seller approval', at: AT });
    expect(pub.data).toEqual({ task_id: 'task_s', task_type: 'sync_creatives', status: 'submitted', message: 'Creatives awaiting seller approval', timestamp: AT });
  });

  it('a failed webhook attempt says what failed, never the receiver’s host, address or reason phrase', async () => {
    const attempt = (status: string, http_status_code: number | null, error_message: string | null) =>
      publish('WebhookAttempted', { idempotency_key: 'whk_2', attempt: 1, status, http_status_code, error_message, response_time_ms: null, started_at: AT, at: AT, next_attempt_at: null });
    const said = async (...a: Parameters<typeof attempt>) => (await attempt(...a)).data as { error_message: string | null };
    expect((await said('connection_error', null, 'ENOTFOUND: getaddrinfo ENOTFOUND hooks.buyer-private.example')).error_message).toBe('connection error (ENOTFOUND)');
    expect((await said('connection_error', null, 'ECONNREFUSED: connect ECONNREFUSED 10.20.30.40:8443')).error_message).toBe('connection error (ECONNREFUSED)');
    expect((await said('connection_error', null, 'error: Invalid URL https://hooks.buyer-private.example:x')).error_message).toBe('connection error');
    expect((await said('connection_error', null, 'refused: the URL resolves to a non-public address')).error_message).toBe('refused: the URL resolves to a non-public address');
    expect((await said('failed', 503, 'HTTP 503 see hooks.buyer-private.example/status')).error_message).toBe('HTTP 503');
    expect((await said('timeout', null, 'no response within 10000 ms')).error_message).toBe('no response in time');
    expect((await said('success', 200, null)).error_message).toBeNull();
    expect(publicAttemptError({ status: 'failed', http_status_code: null, error_message: 'x' })).toBe('failed');
  });

  it('attributes every event to its owner’s tenant key, subjects unique across tenants; the registry’s are shared', async () => {
    const owners: Record<string, string> = { 'task-t_a': 'acme', 'task-t_b': 'globex' };
    const by: Attribution = { tenantKey: BY.tenantKey, streamOwner: async (streamId) => owners[streamId] };
    const creative = (owner: string) => stored('CreativeStatusChanged', { creative_id: 'hero', owner, from: 'approved', status: 'suspended', at: AT });
    const [a, b] = [(await toPublicEvent(creative('acme'), by))!, (await toPublicEvent(creative('globex'), by))!];
    expect([a.tenant, b.tenant]).toEqual([BY.tenantKey('acme'), BY.tenantKey('globex')]);
    expect(a.tenant).not.toBe(b.tenant);
    expect([isTenantKey(a.tenant), isTenantKey(b.tenant)]).toEqual([true, true]);
    expect([a.subject, b.subject]).toEqual([`${a.tenant}/hero`, `${b.tenant}/hero`]);
    expect(JSON.stringify([a, b])).not.toMatch(/acme|globex/);
    // Owner-less events take their stream's owner; one whose owner cannot be found is not published.
    const change = (streamId: string) => stored('TaskStatusChanged', { task_id: 'same', from: 'submitted', status: 'working', message: 'm', actor: 'x', at: AT }, streamId);
    expect((await toPublicEvent(change('task-t_b'), by))!.tenant).toBe(BY.tenantKey('globex'));
    expect(await toPublicEvent(change('task-unknown'), by)).toBeUndefined();
    const feed = (await toPublicEvent(stored('FeedEntryRecorded', { event_id: 'fe', event_type: 'publisher.updated', entity_type: 'publisher', entity_id: 'pub.example', payload: {}, actor: 'system', created_at: AT }), by))!;
    expect([feed.tenant, feed.subject]).toEqual(['shared', 'pub.example']);
  });

  it('tenant keys: stable for one secret, another under another secret, and not the org', () => {
    const one = tenantKeyer(Buffer.alloc(32, 1));
    expect(one('acme')).toBe(one('acme'));
    expect(one('acme')).toBe(tenantKeyer(Buffer.alloc(32, 1))('acme'));
    expect(one('acme')).not.toBe(tenantKeyer(Buffer.alloc(32, 2))('acme'));
    expect(one('acme')).not.toContain('acme');
    expect(() => tenantKeyer(Buffer.alloc(16))).toThrow(/at least 32 bytes/);
  });

  it('every public type was produced by one of the mappings above (tests run in order)', async () => {
    expect([...produced].sort()).toEqual(Object.keys(PUBLIC_EVENT_TYPES).sort());
  });
});

describe('public events as CloudEvents (Kafka binary content mode)', () => {
  it('puts the attributes in ce_* headers, the data alone in the value, keyed by subject, on the domain topic', async () => {
    const pub = await publish('MediaBuyStatusChanged', { media_buy_id: 'mb_9', from: 'active', status: 'paused', at: AT });
    const m = toCloudEventMessage(pub, 'adcp.public.');
    expect(m.topic).toBe('adcp.public.media_buy');
    expect(m.key).toBe(`${T}/mb_9`);
    expect(JSON.parse(m.value)).toEqual(pub.data);
    expect(m.headers).toEqual({
      ce_specversion: '1.0',
      ce_id: pub.id,
      ce_source: '/adcp-gateway',
      ce_type: 'media_buy.status_changed.v1',
      ce_time: AT,
      ce_subject: `${T}/mb_9`,
      ce_tenant: T,
      ce_position: String(pub.position),
      'content-type': 'application/json',
    });
  });
});
