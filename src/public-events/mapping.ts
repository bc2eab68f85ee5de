import type { PublisherEvent } from '../domain/adagents/events';
import type { CreativeEvent } from '../domain/creative/creative';
import type { DeliveryEvent, HourDelivery } from '../domain/delivery/delivery';
import type { FeedEvent } from '../domain/feed/events';
import type { MediaBuyEvent, MediaBuyStatus, MediaBuyTerms } from '../domain/media-buy/media-buy';
import type { ReportLogEvent } from '../domain/reporting/report-log';
import type { TaskEvent } from '../domain/task/task';
import type { WebhookEvent } from '../domain/webhook/webhook';
import type { StoredEvent } from '../eventstore/port';
import { publicId } from '../shared/ids';
import { MediaBuyStatus3, type PublicEventData, type PublicEventName } from './types';

/** One public event, ready for any transport (CloudEvents on Kafka, GraphQL, the CLI's tail). */
export interface PublicEvent<N extends PublicEventName = PublicEventName> {
  /** The internal event's id: stable across a relay's republish, so consumers dedupe by it. */
  readonly id: string;
  readonly name: N;
  /** The entity the event is about (a media buy, task, creative, webhook, publisher…): the Kafka key, for per-entity order. */
  readonly subject: string;
  readonly time: string;
  /** The internal log position, for resuming a tail. */
  readonly position: number;
  readonly data: PublicEventData<N>;
}

type DataOf<U extends { type: string; data: unknown }, T extends U['type']> = Extract<U, { type: T }>['data'];

/** An internal event of type T as its mapper sees it. */
type Mapper<U extends { type: string; data: unknown }, T extends U['type']> = (data: DataOf<U, T>, e: StoredEvent) => Omit<PublicEvent, 'id' | 'position' | 'time'> | undefined;

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

const mediaBuy: { [T in MediaBuyEvent['type']]: Mapper<MediaBuyEvent, T> } = {
  MediaBuyCreated: (d) => ({
    name: 'media_buy.created',
    subject: pid(d.media_buy_id),
    data: {
      ...flight(d),
      status: status3(d.status),
      ...(d.proposal_id !== undefined ? { proposal_id: d.proposal_id } : {}),
      ...(d.sandbox !== undefined ? { sandbox: d.sandbox } : {}),
      created_at: d.at,
    },
  }),
  MediaBuyApproved: (d) => ({
    name: 'media_buy.status_changed',
    subject: pid(d.media_buy_id),
    data: { media_buy_id: pid(d.media_buy_id), previous_status: 'pending_start', status: 'active', ...(d.note ? { reason: d.note } : {}), changed_at: d.at },
  }),
  MediaBuyRejected: (d) => ({
    name: 'media_buy.status_changed',
    subject: pid(d.media_buy_id),
    data: { media_buy_id: pid(d.media_buy_id), previous_status: 'pending_start', status: 'rejected', reason: d.reason, changed_at: d.at },
  }),
  MediaBuyStatusChanged: (d) => ({
    name: 'media_buy.status_changed',
    subject: pid(d.media_buy_id),
    data: {
      media_buy_id: pid(d.media_buy_id),
      previous_status: status3(d.from),
      status: status3(d.status, d.forced_status),
      ...(d.reason !== undefined ? { reason: d.reason } : {}),
      changed_at: d.at,
    },
  }),
  MediaBuyUpdated: (d) => ({ name: 'media_buy.updated', subject: pid(d.media_buy_id), data: { ...flight(d.terms), changed: [...d.changed], updated_at: d.at } }),
};

const delivery: { [T in DeliveryEvent['type']]: Mapper<DeliveryEvent, T> } = {
  DeliveryRecorded: (d) => ({ name: 'media_buy.delivery_recorded', subject: pid(d.media_buy_id), data: { media_buy_id: pid(d.media_buy_id), currency: d.currency, through: d.through, hours: d.hours.map(hour) } }),
  DeliveryAdjusted: (d) => ({
    name: 'media_buy.delivery_adjusted',
    subject: pid(d.media_buy_id),
    data: { media_buy_id: pid(d.media_buy_id), hour: hour(d.hour), previous: hour(d.previous), reason: d.reason, adjusted_at: d.at },
  }),
  DeliveryDelayed: (d) => ({
    name: 'media_buy.delivery_delayed',
    subject: pid(d.media_buy_id),
    data: { media_buy_id: pid(d.media_buy_id), expected_availability: d.expected_availability, reason: d.reason, at: d.at },
  }),
};

const reports: { [T in ReportLogEvent['type']]: Mapper<ReportLogEvent, T> } = {
  DeliveryReportSequenced: (d) => ({
    name: 'media_buy.delivery_report_issued',
    subject: pid(d.media_buy_id),
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

const tasks: { [T in TaskEvent['type']]: Mapper<TaskEvent, T> } = {
  // The request, context, push config (with its credentials) and A2A registration stay inside.
  TaskSubmitted: (d) => ({
    name: 'task.status_changed',
    subject: pid(d.task_id),
    data: { task_id: pid(d.task_id), task_type: d.task_type, resource_id: pid(d.resource_id), status: 'submitted', message: d.message, timestamp: d.at },
  }),
  TaskStatusChanged: (d) => ({
    name: 'task.status_changed',
    subject: pid(d.task_id),
    data: { task_id: pid(d.task_id), previous_status: d.from, status: d.status, message: d.message, timestamp: d.at },
  }),
};

const creatives: { [T in CreativeEvent['type']]: Mapper<CreativeEvent, T> } = {
  CreativeSynced: (d) => ({
    name: 'creative.synced',
    subject: d.creative_id,
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
    subject: d.creative_id,
    data: { creative_id: d.creative_id, previous_status: d.from, status: d.status, ...(d.reason !== undefined ? { reason: d.reason } : {}), changed_at: d.at },
  }),
  CreativeArchived: (d) => ({ name: 'creative.status_changed', subject: d.creative_id, data: { creative_id: d.creative_id, status: 'archived', changed_at: d.at } }),
};

const webhooks: { [T in WebhookEvent['type']]: Mapper<WebhookEvent, T> } = {
  // Carries the receiver's URL, its auth (an HMAC secret or bearer token) and the body: never published.
  WebhookScheduled: () => undefined,
  WebhookAttempted: (d) => ({
    name: 'webhook.delivery_attempted',
    subject: d.idempotency_key,
    data: {
      idempotency_key: d.idempotency_key,
      attempt: d.attempt,
      status: d.status,
      http_status_code: d.http_status_code,
      response_time_ms: d.response_time_ms,
      error_message: d.error_message,
      attempted_at: d.started_at,
      next_attempt_at: d.next_attempt_at,
    },
  }),
};

const registry: { [T in FeedEvent['type'] | PublisherEvent['type']]: Mapper<FeedEvent | PublisherEvent, T> } = {
  FeedEntryRecorded: (d) => ({ name: 'registry.change_recorded', subject: d.entity_id, data: { ...d, payload: { ...d.payload } } }),
  AdagentsRevalidated: (d) => ({
    name: 'registry.adagents_revalidated',
    subject: d.domain,
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
 * The public event an internal one becomes, or undefined when it is not published, or when its
 * data is not of the shape its type has (a log appended to past the gateway): then `unmappable`
 * hears why, and the event is skipped, never thrown on (a throw stopped the relay and the tail
 * at that event for good).
 */
export function toPublicEvent(e: StoredEvent, unmappable: (reason: string) => void = () => {}): PublicEvent | undefined {
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
  return { id: e.id, position: e.position, time: e.metadata.time, ...mapped } as PublicEvent;
}
