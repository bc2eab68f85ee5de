import { z } from 'zod';

/**
 * The public event contract (issue 37): what leaves the process for event-stream subscribers,
 * distinct from the internal log (DESIGN §3.15). Each type is named `<domain>.<what_happened>`,
 * carries a version, and has one zod definition here from which its JSON Schema and the AsyncAPI
 * document are generated. Objects are strict: a field that is not listed here is not published,
 * and a schema with `additionalProperties: false` lets every consumer check that.
 *
 * Changing a published type's shape means a new version (a new entry), never an edit of this one.
 */

const isoTime = z.iso.datetime({ offset: true });

/** AdCP 3.0 `media-buy-status`. */
export const MediaBuyStatus3 = z.enum(['pending_creatives', 'pending_start', 'active', 'paused', 'completed', 'rejected', 'canceled']);
/** AdCP 3.0 `task-status`. */
export const TaskStatus3 = z.enum(['submitted', 'working', 'input-required', 'completed', 'canceled', 'failed', 'rejected', 'auth-required', 'unknown']);
/** AdCP 3.0 `creative-status`. */
export const CreativeStatus3 = z.enum(['processing', 'pending_review', 'approved', 'suspended', 'rejected', 'archived']);

/** An AdCP 3.0 package as create/get_media_buys show it (the buyer's own fields, no targeting or measurement terms). */
const Package = z.strictObject({
  package_id: z.string(),
  product_id: z.string(),
  pricing_option_id: z.string(),
  budget: z.number(),
  bid_price: z.number().optional(),
  paused: z.boolean().optional(),
  canceled: z.boolean().optional(),
  creative_assignments: z.array(z.strictObject({ creative_id: z.string() })),
});

const Flight = {
  media_buy_id: z.string(),
  buyer_ref: z.string(),
  account_id: z.string().optional(),
  start_time: isoTime,
  end_time: isoTime,
  currency: z.string(),
  total_budget: z.number(),
  packages: z.array(Package),
};

/** One package's delivery in one hour; spend in `currency` units (AdCP `delivery-metrics` names). */
const HourDelivery = z.strictObject({
  package_id: z.string(),
  hour_start: isoTime,
  impressions: z.number().int(),
  clicks: z.number().int(),
  spend: z.number(),
});

/** Every public type: its name, version, Kafka domain (the topic suffix), what it means and its payload. */
export const PUBLIC_EVENT_TYPES = {
  'media_buy.created': {
    version: 1,
    description: 'A buyer created a media buy; `pending_start` while it awaits the seller\'s approval.',
    data: z.strictObject({ ...Flight, status: MediaBuyStatus3, proposal_id: z.string().optional(), sandbox: z.boolean().optional(), created_at: isoTime }),
  },
  'media_buy.status_changed': {
    version: 1,
    description: 'A media buy moved along its lifecycle: approved, rejected, paused, resumed, canceled, completed.',
    data: z.strictObject({
      media_buy_id: z.string(),
      previous_status: MediaBuyStatus3.optional(),
      status: MediaBuyStatus3,
      reason: z.string().optional(),
      changed_at: isoTime,
    }),
  },
  'media_buy.updated': {
    version: 1,
    description: 'A media buy\'s terms changed (budget, dates, packages, creative assignments); the whole current terms follow.',
    data: z.strictObject({ ...Flight, changed: z.array(z.string()), updated_at: isoTime }),
  },
  'media_buy.delivery_recorded': {
    version: 1,
    description: 'The ad server recorded delivery for a buy, hour by hour, up to `through`.',
    data: z.strictObject({ media_buy_id: z.string(), currency: z.string(), through: isoTime, hours: z.array(HourDelivery) }),
  },
  'media_buy.delivery_adjusted': {
    version: 1,
    description: 'An hour already recorded was restated (a late correction).',
    data: z.strictObject({ media_buy_id: z.string(), hour: HourDelivery, previous: HourDelivery, reason: z.string(), adjusted_at: isoTime }),
  },
  'media_buy.delivery_delayed': {
    version: 1,
    description: 'Delivery data for a buy is running late.',
    data: z.strictObject({ media_buy_id: z.string(), expected_availability: isoTime, reason: z.string(), at: isoTime }),
  },
  'media_buy.delivery_report_issued': {
    version: 1,
    description: 'A delivery report took its sequence number (AdCP `notification_type`, `sequence_number`, `reporting_period`).',
    data: z.strictObject({
      media_buy_id: z.string(),
      notification_type: z.enum(['scheduled', 'final', 'adjusted', 'delayed']),
      sequence_number: z.number().int().min(1),
      reporting_period: z.strictObject({ start: isoTime, end: isoTime }),
      expected_availability: isoTime.optional(),
      issued_at: isoTime,
    }),
  },
  'task.status_changed': {
    version: 1,
    description:
      'An asynchronous task was submitted or changed status (AdCP task lifecycle). `resource_id`: the media buy a create_media_buy task is about; `message` is written for the buyer (a failure says what kind, never an internal error\'s text).',
    data: z.strictObject({
      task_id: z.string(),
      task_type: z.string().optional(),
      resource_id: z.string().optional(),
      previous_status: TaskStatus3.optional(),
      status: TaskStatus3,
      message: z.string(),
      timestamp: isoTime,
    }),
  },
  'creative.synced': {
    version: 1,
    description: 'A buyer synced a creative (created or updated) and its package assignments.',
    data: z.strictObject({
      creative_id: z.string(),
      name: z.string(),
      format_id: z.strictObject({ agent_url: z.string(), id: z.string() }),
      status: CreativeStatus3,
      created: z.boolean(),
      assigned_to: z.array(z.string()),
      synced_at: isoTime,
    }),
  },
  'creative.status_changed': {
    version: 1,
    description: 'A creative\'s review status changed (approved, rejected, suspended, archived…).',
    data: z.strictObject({
      creative_id: z.string(),
      previous_status: CreativeStatus3.optional(),
      status: CreativeStatus3,
      reason: z.string().optional(),
      changed_at: isoTime,
    }),
  },
  'webhook.delivery_attempted': {
    version: 1,
    description:
      'One attempt to deliver a webhook (AdCP `webhook_activity` outcome); `next_attempt_at` null when it was the last. ' +
      'Neither the URL nor the authentication is published; `error_message` is told from the outcome alone (`HTTP 503`, `connection error (ECONNREFUSED)`, `no response in time`), never naming the receiver.',
    data: z.strictObject({
      idempotency_key: z.string(),
      attempt: z.number().int().min(1),
      status: z.enum(['success', 'failed', 'timeout', 'connection_error']),
      http_status_code: z.number().int().nullable(),
      response_time_ms: z.number().nullable(),
      error_message: z.string().nullable(),
      attempted_at: isoTime,
      next_attempt_at: isoTime.nullable(),
    }),
  },
  'registry.change_recorded': {
    version: 1,
    description: 'One entry of the registry\'s change feed (the reference registry\'s feed event shape).',
    data: z.strictObject({
      event_id: z.string(),
      event_type: z.string(),
      entity_type: z.enum(['publisher', 'authorization', 'brand', 'storyboards']),
      entity_id: z.string(),
      payload: z.record(z.string(), z.unknown()),
      actor: z.string(),
      created_at: isoTime,
    }),
  },
  'registry.adagents_revalidated': {
    version: 1,
    description: 'A publisher\'s adagents.json was revalidated; `transient` failures leave the earlier verdict standing.',
    data: z.strictObject({
      domain: z.string(),
      adagents_valid: z.boolean(),
      transient: z.boolean(),
      status_code: z.number().int().optional(),
      properties_count: z.number().int(),
      authorized_agents_count: z.number().int(),
      errors: z.array(z.strictObject({ field: z.string(), message: z.string() })),
      checked_at: isoTime,
    }),
  },
} as const satisfies Record<string, { version: number; description: string; data: z.ZodType }>;

export type PublicEventName = keyof typeof PUBLIC_EVENT_TYPES;
export type PublicEventData<N extends PublicEventName> = z.output<(typeof PUBLIC_EVENT_TYPES)[N]['data']>;

/** The topic suffix a type is published under: its domain, the name's first segment. */
export function domainOf(name: PublicEventName): string {
  return name.slice(0, name.indexOf('.'));
}

/** The CloudEvents `type` of a public event: its name and version (`media_buy.status_changed.v1`). */
export function cloudEventType(name: PublicEventName): string {
  return `${name}.v${PUBLIC_EVENT_TYPES[name].version}`;
}

const NAMES = Object.keys(PUBLIC_EVENT_TYPES) as PublicEventName[];

/** Every domain a public topic exists for. */
export const PUBLIC_DOMAINS: readonly string[] = [...new Set(NAMES.map(domainOf))];

/** Type selectors (`events tail --type`, the publicEvents subscription's `types`: names `media_buy.status_changed`, versioned names `….v1`, domains `media_buy`) to the names they select; none: all. */
export function selectTypes(selectors: readonly string[]): { names: ReadonlySet<PublicEventName> } | { unknown: string } {
  if (selectors.length === 0) return { names: new Set(NAMES) };
  const names = new Set<PublicEventName>();
  for (const s of selectors) {
    const matched = NAMES.filter((n) => s === n || s === cloudEventType(n) || s === domainOf(n));
    if (matched.length === 0) return { unknown: s };
    for (const n of matched) names.add(n);
  }
  return { names };
}
