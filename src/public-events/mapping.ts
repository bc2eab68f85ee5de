import type { PublisherEvent } from '../domain/adagents/events';
import type { CreativeEvent } from '../domain/creative/creative';
import type { DeliveryEvent, HourDelivery } from '../domain/delivery/delivery';
import type { FeedEvent } from '../domain/feed/events';
import type { MediaBuyEvent, MediaBuyStatus, MediaBuyTerms } from '../domain/media-buy/media-buy';
import type { ReportLogEvent } from '../domain/reporting/report-log';
import type { TaskEvent } from '../domain/task/task';
import type { WebhookEvent } from '../domain/webhook/webhook';
import type { EventStore, StoredEvent } from '../eventstore/port';
import { mediaBuyStream } from '../domain/media-buy/media-buy';
import { publicId } from '../shared/ids';
import { SHARED_TENANT, type TenantKeyer } from './tenants';
import { MediaBuyStatus3, type PublicEventData, type PublicEventName } from './types';

/** One public event, ready for any transport (CloudEvents on Kafka, GraphQL, the CLI's tail). */
export interface PublicEvent<N extends PublicEventName = PublicEventName> {
  /** The internal event's id: stable across a relay's republish, so consumers dedupe by it. */
  readonly id: string;
  readonly name: N;
  /**
   * Whose event it is: the owner's opaque tenant key (tenants.ts), or `shared` for the registry's.
   * The CloudEvents extension `tenant` (`ce_tenant`).
   */
  readonly tenant: string;
  /**
   * The entity the event is about, unique across tenants: `<tenant>/<id>` (a media buy, task,
   * creative or webhook id as its buyer knows it), or a registry entity (a publisher domain, a feed
   * entity) for shared events. The Kafka key, for per-entity order; two buyers' `hero` creatives
   * are two subjects, so a compacted topic or per-subject state never merges them.
   */
  readonly subject: string;
  readonly time: string;
  /** The internal log position, for resuming a tail. */
  readonly position: number;
  readonly data: PublicEventData<N>;
}

/**
 * Who an internal event belongs to, as its mapper knows it: the org it names, the stream whose
 * first event names it (a status change names no owner; the buy's creation does), or nobody.
 */
type Owner = { readonly org: string } | { readonly stream: string } | typeof SHARED_TENANT;

/** What a mapper makes of an event: the public type, the entity id its buyer knows, its owner, the payload. */
interface Mapped {
  readonly name: PublicEventName;
  readonly entity: string;
  readonly owner: Owner;
  readonly data: PublicEventData<PublicEventName>;
}

type DataOf<U extends { type: string; data: unknown }, T extends U['type']> = Extract<U, { type: T }>['data'];

/** An internal event of type T as its mapper sees it. */
type Mapper<U extends { type: string; data: unknown }, T extends U['type']> = (data: DataOf<U, T>, e: StoredEvent) => Mapped | undefined;

/**
 * The 3.0 status a domain status shows as when the event alone is known: `pending` (awaiting the
 * seller) is `pending_start`, as every 3.0 answer tells it; the finer `pending_creatives` depends on
 * the buy's packages and the clock, which a status change does not carry.
 */
function status3(status: MediaBuyStatus, forced?: string): PublicEventData<'media_buy.status_changed'>['status'] {
  const f = MediaBuyStatus3.safeParse(forced);
  if (f.success) return f.data;
  return status === 'pending' ? 'pending_start' : status;
}

function flight(t: MediaBuyTerms) {
  return {
    media_buy_id: pid(t.media_buy_id),
    buyer_ref: t.buyer_ref,
    ...(t.account_id !== undefined ? { account_id: pid(t.account_id) } : {}),
    start_time: t.start_time,
    end_time: t.end_time,
    currency: t.currency,
    total_budget: t.total_budget,
    packages: t.packages.map((p) => ({
      package_id: p.package_id,
      product_id: p.product_id,
      pricing_option_id: p.pricing_option_id,
      budget: p.budget,
      ...(p.bid_price !== undefined ? { bid_price: p.bid_price } : {}),
      ...(p.paused !== undefined ? { paused: p.paused } : {}),
      ...(p.canceled !== undefined ? { canceled: p.canceled } : {}),
      creative_assignments: p.creative_ids.map((creative_id) => ({ creative_id })),
    })),
  };
}

/**
 * Ids as their buyer knows them: a buyer-chosen id (a sandbox fixture's, a task's) is kept
 * internally with a suffix naming its owner (shared/ids.ts), which is bookkeeping, not the id.
 */
const pid = publicId;

const hour = (h: HourDelivery) => ({ package_id: h.package_id, hour_start: h.hour_start, impressions: h.impressions, clicks: h.clicks, spend: h.spend_cents / 100 });

/** Events on the entity's own stream whose first event (the creation) names the owner. */
const ofStream = (e: StoredEvent): Owner => ({ stream: e.streamId });

const mediaBuy: { [T in MediaBuyEvent['type']]: Mapper<MediaBuyEvent, T> } = {
  MediaBuyCreated: (d) => ({
    name: 'media_buy.created',
    entity: pid(d.media_buy_id),
    owner: { org: d.owner },
    data: {
      ...flight(d),
      status: status3(d.status),
      ...(d.proposal_id !== undefined ? { proposal_id: d.proposal_id } : {}),
      ...(d.sandbox !== undefined ? { sandbox: d.sandbox } : {}),
      created_at: d.at,
    },
  }),
  MediaBuyApproved: (d, e) => ({
    name: 'media_buy.status_changed',
    entity: pid(d.media_buy_id),
    owner: ofStream(e),
    data: { media_buy_id: pid(d.media_buy_id), previous_status: 'pending_start', status: 'active', ...(d.note ? { reason: d.note } : {}), changed_at: d.at },
  }),
  MediaBuyRejected: (d, e) => ({
    name: 'media_buy.status_changed',
    entity: pid(d.media_buy_id),
    owner: ofStream(e),
    data: { media_buy_id: pid(d.media_buy_id), previous_status: 'pending_start', status: 'rejected', reason: d.reason, changed_at: d.at },
  }),
  MediaBuyStatusChanged: (d, e) => ({
    name: 'media_buy.status_changed',
    entity: pid(d.media_buy_id),
    owner: ofStream(e),
    data: {
      media_buy_id: pid(d.media_buy_id),
      previous_status: status3(d.from),
      status: status3(d.status, d.forced_status),
      ...(d.reason !== undefined ? { reason: d.reason } : {}),
      changed_at: d.at,
    },
  }),
  MediaBuyUpdated: (d) => ({ name: 'media_buy.updated', entity: pid(d.media_buy_id), owner: { org: d.terms.owner }, data: { ...flight(d.terms), changed: [...d.changed], updated_at: d.at } }),
};

const delivery: { [T in DeliveryEvent['type']]: Mapper<DeliveryEvent, T> } = {
  DeliveryRecorded: (d) => ({
    name: 'media_buy.delivery_recorded',
    entity: pid(d.media_buy_id),
    owner: { org: d.owner },
    data: { media_buy_id: pid(d.media_buy_id), currency: d.currency, through: d.through, hours: d.hours.map(hour) },
  }),
  DeliveryAdjusted: (d) => ({
    name: 'media_buy.delivery_adjusted',
    entity: pid(d.media_buy_id),
    owner: { org: d.owner },
    data: { media_buy_id: pid(d.media_buy_id), hour: hour(d.hour), previous: hour(d.previous), reason: d.reason, adjusted_at: d.at },
  }),
  DeliveryDelayed: (d) => ({
    name: 'media_buy.delivery_delayed',
    entity: pid(d.media_buy_id),
    owner: { org: d.owner },
    data: { media_buy_id: pid(d.media_buy_id), expected_availability: d.expected_availability, reason: d.reason, at: d.at },
  }),
};

const reports: { [T in ReportLogEvent['type']]: Mapper<ReportLogEvent, T> } = {
  DeliveryReportSequenced: (d) => ({
    name: 'media_buy.delivery_report_issued',
    entity: pid(d.media_buy_id),
    // The report log names no owner: the buy's creation does.
    owner: { stream: mediaBuyStream(d.media_buy_id) },
    data: {
      media_buy_id: pid(d.media_buy_id),
      notification_type: d.notification_type,
      sequence_number: d.sequence_number,
      reporting_period: { start: d.period.start, end: d.period.end },
      ...(d.expected_availability !== undefined ? { expected_availability: d.expected_availability } : {}),
      issued_at: d.at,
    },
  }),
  // Bookkeeping: the report's webhook was appended (the webhook's own attempts are published).
  DeliveryReportScheduled: () => undefined,
};

/**
 * The task types whose `resource_id` is an entity the buyer knows (the buy a create made). Others
 * keep bookkeeping there — a sync_creatives task records its owner org — which is never published.
 */
const PUBLIC_RESOURCE_TASKS: ReadonlySet<string> = new Set(['create_media_buy']);

const tasks: { [T in TaskEvent['type']]: Mapper<TaskEvent, T> } = {
  // The request, context, push config (with its credentials) and A2A registration stay inside.
  TaskSubmitted: (d) => ({
    name: 'task.status_changed',
    entity: pid(d.task_id),
    owner: { org: d.owner },
    data: {
      task_id: pid(d.task_id),
      task_type: d.task_type,
      ...(PUBLIC_RESOURCE_TASKS.has(d.task_type) ? { resource_id: pid(d.resource_id) } : {}),
      status: 'submitted',
      message: d.message,
      timestamp: d.at,
    },
  }),
  TaskStatusChanged: (d, e) => ({
    name: 'task.status_changed',
    entity: pid(d.task_id),
    owner: ofStream(e),
    data: { task_id: pid(d.task_id), previous_status: d.from, status: d.status, message: d.message, timestamp: d.at },
  }),
};

const creatives: { [T in CreativeEvent['type']]: Mapper<CreativeEvent, T> } = {
  CreativeSynced: (d) => ({
    name: 'creative.synced',
    entity: d.creative_id,
    owner: { org: d.owner },
    data: {
      creative_id: d.creative_id,
      name: d.name,
      format_id: { agent_url: d.format_id.agent_url, id: d.format_id.id },
      status: d.status,
      created: d.created,
      assigned_to: [...d.assigned_to],
      synced_at: d.at,
    },
  }),
  CreativeStatusChanged: (d) => ({
    name: 'creative.status_changed',
    entity: d.creative_id,
    owner: { org: d.owner },
    data: { creative_id: d.creative_id, previous_status: d.from, status: d.status, ...(d.reason !== undefined ? { reason: d.reason } : {}), changed_at: d.at },
  }),
  CreativeArchived: (d) => ({ name: 'creative.status_changed', entity: d.creative_id, owner: { org: d.owner }, data: { creative_id: d.creative_id, status: 'archived', changed_at: d.at } }),
};

type Attempt = DataOf<WebhookEvent, 'WebhookAttempted'>;

/**
 * What an attempt's failure says publicly: told from its outcome alone, never the recorded text.
 * That text is for the owner (webhook activity): a connection error names the receiver's host and
 * address, and a reason phrase is whatever the receiver chose to send.
 */
export function publicAttemptError(d: Pick<Attempt, 'status' | 'http_status_code' | 'error_message'>): string | null {
  switch (d.status) {
    case 'success':
      return null;
    case 'failed':
      return d.http_status_code !== null ? `HTTP ${d.http_status_code}` : 'failed';
    case 'timeout':
      return 'no response in time';
    case 'connection_error': {
      if (d.error_message?.startsWith('refused: ')) return 'refused: the URL resolves to a non-public address';
      // Node's error code (ECONNREFUSED, ENOTFOUND, …) says what went wrong and nothing of where.
      const code = /^(E[A-Z0-9_]{2,30}):/.exec(d.error_message ?? '')?.[1];
      return code ? `connection error (${code})` : 'connection error';
    }
  }
}

const webhooks: { [T in WebhookEvent['type']]: Mapper<WebhookEvent, T> } = {
  // Carries the receiver's URL, its auth (an HMAC secret or bearer token) and the body: never published.
  WebhookScheduled: () => undefined,
  WebhookAttempted: (d, e) => ({
    name: 'webhook.delivery_attempted',
    entity: d.idempotency_key,
    owner: ofStream(e),
    data: {
      idempotency_key: d.idempotency_key,
      attempt: d.attempt,
      status: d.status,
      http_status_code: d.http_status_code,
      response_time_ms: d.response_time_ms,
      error_message: publicAttemptError(d),
      attempted_at: d.started_at,
      next_attempt_at: d.next_attempt_at,
    },
  }),
};

const registry: { [T in FeedEvent['type'] | PublisherEvent['type']]: Mapper<FeedEvent | PublisherEvent, T> } = {
  FeedEntryRecorded: (d) => ({ name: 'registry.change_recorded', entity: d.entity_id, owner: SHARED_TENANT, data: { ...d, payload: { ...d.payload } } }),
  AdagentsRevalidated: (d) => ({
    name: 'registry.adagents_revalidated',
    entity: d.domain,
    owner: SHARED_TENANT,
    data: {
      domain: d.domain,
      adagents_valid: d.result.adagents_valid,
      transient: d.transient,
      ...(d.result.status_code !== undefined ? { status_code: d.result.status_code } : {}),
      properties_count: d.result.properties_count,
      authorized_agents_count: d.result.authorized_agents_count,
      errors: d.result.issues.errors.map((x) => ({ field: x.field, message: x.message })),
      checked_at: d.result.checked_at,
    },
  }),
};

/**
 * The allow-list: internal event type → its mapper. An internal type that is not a key here is
 * never published (credentials — ApiKeyIssued, OAuth grants and clients — and bookkeeping alike).
 * Each aggregate's table is typed over its whole event union, so a new internal event type of a
 * published aggregate fails to compile until it is mapped or explicitly left out (→ undefined).
 */
const MAPPERS: Readonly<Record<string, Mapper<never, never>>> = { ...mediaBuy, ...delivery, ...reports, ...tasks, ...creatives, ...webhooks, ...registry } as never;

/** The internal event types that can yield a public event. */
export const PUBLISHED_INTERNAL_TYPES: ReadonlySet<string> = new Set(Object.keys(MAPPERS));

/**
 * How the public events learn whose each one is: the operator's tenant keys, and the owner a
 * stream's first event names (the relay and the tail read it from the store; GraphQL from the
 * live log's cache). The same for every transport, so Kafka, GraphQL and the tail agree.
 */
export interface Attribution {
  readonly tenantKey: TenantKeyer;
  streamOwner(streamId: string): Promise<string | undefined>;
}

/** A public event with the org it belongs to (undefined: the registry's), for a transport that scopes by it. */
export interface AttributedEvent {
  readonly event: PublicEvent;
  readonly owner: string | undefined;
}

/**
 * The public event an internal one becomes and whose it is, or undefined when it is not published.
 * An event whose owner cannot be found (a stream without its creation, which the log never holds)
 * is not published: it would be attributed to nobody. Nor is one whose data is not of the shape
 * its type has (a log appended to past the gateway): then `unmappable` hears why, and the event
 * is skipped, never thrown on (a throw stopped the relay and the tail at that event for good).
 */
export async function attributePublicEvent(e: StoredEvent, by: Attribution, unmappable: (reason: string) => void = () => {}): Promise<AttributedEvent | undefined> {
  const map = Object.hasOwn(MAPPERS, e.type) ? MAPPERS[e.type] : undefined;
  if (!map) return undefined;
  let mapped: ReturnType<typeof map>;
  try {
    mapped = map(e.data as never, e);
  } catch (err) {
    unmappable(`position ${e.position}: ${e.type} cannot be mapped to its public event (${(err as Error).message}); skipped`);
    return undefined;
  }
  if (!mapped) return undefined;
  const owner = mapped.owner === SHARED_TENANT ? undefined : 'org' in mapped.owner ? mapped.owner.org : await by.streamOwner(mapped.owner.stream);
  if (mapped.owner !== SHARED_TENANT && owner === undefined) return undefined;
  const tenant = owner === undefined ? SHARED_TENANT : by.tenantKey(owner);
  const subject = owner === undefined ? mapped.entity : `${tenant}/${mapped.entity}`;
  const event = { id: e.id, name: mapped.name, tenant, subject, time: e.metadata.time, position: e.position, data: mapped.data } as PublicEvent;
  return { event, owner };
}

/** The public event an internal one becomes, or undefined when it is not published (attributePublicEvent). */
export async function toPublicEvent(e: StoredEvent, by: Attribution, unmappable?: (reason: string) => void): Promise<PublicEvent | undefined> {
  return (await attributePublicEvent(e, by, unmappable))?.event;
}

/** A stream's owner: the `owner` its first event names (a buy's, a task's, a webhook's creation). */
function ownerNamedBy(data: unknown): string | undefined {
  const d = data as { owner?: unknown; terms?: { owner?: unknown } } | null;
  const owner = d?.owner ?? d?.terms?.owner;
  return typeof owner === 'string' ? owner : undefined;
}

/**
 * Attribution straight from the log (the relay, `events tail`): each stream's first event read
 * once, its owner kept for a bounded number of streams (a first event never changes).
 */
export function storeAttribution(store: Pick<EventStore, 'readStream'>, tenantKey: TenantKeyer): Attribution {
  const owners = new Map<string, string | undefined>();
  return {
    tenantKey,
    async streamOwner(streamId) {
      if (owners.has(streamId)) return owners.get(streamId);
      const [first] = await store.readStream(streamId, { limit: 1 });
      const owner = ownerNamedBy(first?.data);
      if (owners.size >= 10_000) owners.clear();
      if (first) owners.set(streamId, owner);
      return owner;
    },
  };
}
