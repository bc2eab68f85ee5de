import { Arg, Float, Resolver, Root, Subscription, type SubscribeResolverData } from 'type-graphql';
import type { Principal } from '../../application/api-keys';
import { followLog, logHead, ownerOfEvent, streamOrigin, type StoredEvent } from '../../application/live';
import { AppError } from '../../shared/errors';
import { publicId } from '../../shared/ids';
import { MAX_FEED_TYPES } from '../../application/registry-reads';
import type { GraphQLContext } from '../context';
import { mayRead, mediaBuyChange } from '../buys/media-buy-change';
import { CLOUDEVENTS_SOURCE } from '../../public-events/cloudevents';
import { PUBLISHED_INTERNAL_TYPES, attributePublicEvent, type Attribution } from '../../public-events/mapping';
import { cloudEventType, selectTypes } from '../../public-events/types';
import { DeliveryUpdate, MediaBuyUpdate, PublicEventMessage, ReceivedWebhookEvent, RegistryFeedEntry, TaskStatusChange, WebhookActivityEvent } from './live.type';

/** How far back a subscription may resume: further, a client should read the state and follow from now. */
export const MAX_RESUME_EVENTS = 100_000;

type Args = { after?: number | null } & Record<string, unknown>;

function principalOf(ctx: GraphQLContext): Principal {
  if (!ctx.principal) throw new AppError('UNAUTHENTICATED', 'subscriptions need a Bearer API key or access token');
  return ctx.principal;
}

async function resumeFrom(ctx: GraphQLContext, after: number | null | undefined): Promise<number | undefined> {
  if (after === null || after === undefined) return undefined;
  if (!Number.isSafeInteger(after) || after < 0) throw new AppError('VALIDATION_ERROR', 'after must be a log position (a whole number ≥ 0) from an earlier payload', 'after');
  const behind = (await logHead(ctx.app.ports)) - after;
  if (behind > MAX_RESUME_EVENTS) {
    throw new AppError('VALIDATION_ERROR', `after is ${behind} events behind the log, more than the ${MAX_RESUME_EVENTS} a subscription resumes over; read the current state and subscribe from now`, 'after');
  }
  return after;
}

/**
 * The most items a subscription's list filter (ids, taskIds, mediaBuyIds) may hold: each event of
 * the log is looked up in it, for every subscriber, as long as the subscription lasts.
 */
export const MAX_FILTER_ITEMS = 100;

/** A subscription over the log: the caller's events, as `select` maps them (undefined: not theirs or not wanted). */
async function follow<T>({ args, context }: SubscribeResolverData<unknown, Record<string, unknown>, GraphQLContext>, select: (event: StoredEvent, principal: Principal) => Promise<T | undefined> | T | undefined): Promise<AsyncIterableIterator<T>> {
  for (const [name, value] of Object.entries(args)) {
    if (Array.isArray(value) && value.length > MAX_FILTER_ITEMS) throw new AppError('VALIDATION_ERROR', `${name} holds ${value.length} items; at most ${MAX_FILTER_ITEMS} are allowed`, name);
  }
  const principal = principalOf(context);
  const after = await resumeFrom(context, (args as Args).after);
  return followLog(context.app.ports, after, (event) => select(event, principal));
}

const oneOf = (wanted: unknown, value: string) => !Array.isArray(wanted) || wanted.length === 0 || wanted.includes(value);
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

const MEDIA_BUY_EVENTS = new Set(['MediaBuyCreated', 'MediaBuyApproved', 'MediaBuyRejected', 'MediaBuyUpdated', 'MediaBuyStatusChanged']);
const DELIVERY_EVENTS: Record<string, string> = { DeliveryRecorded: 'recorded', DeliveryAdjusted: 'adjusted', DeliveryDelayed: 'delayed' };

/**
 * What buyer and seller UIs follow live (graphql-ws at /graphql, graphql-sse at /graphql/stream):
 * each field follows the log from now, or from `after` (the position of the last payload a client
 * received) with nothing missed in between, and sees what the caller's queries would show them.
 */
@Resolver()
export class LiveResolver {
  @Subscription(() => MediaBuyUpdate, {
    description: 'Changes to your media buys (every buyer’s for a seller or admin; all of them, or those in ids): created, approved, rejected, updated, status changed.',
    subscribe: (data: SubscribeResolverData<unknown, Record<string, unknown>, GraphQLContext>) =>
      follow(data, async (event, principal) => {
        if (!MEDIA_BUY_EVENTS.has(event.type)) return undefined;
        const d = event.data as Record<string, unknown>;
        const id = publicId(String(d.media_buy_id));
        if (!oneOf(data.args.ids, id) || !mayRead(principal, await ownerOfEvent(data.context.app.ports, event))) return undefined;
        const update: MediaBuyUpdate = { mediaBuyId: id, ...mediaBuyChange(event) };
        return update;
      }),
  })
  mediaBuyUpdated(
    @Root() update: MediaBuyUpdate,
    @Arg('ids', () => [String], { nullable: true, description: 'Only these buys (default: all of yours; at most 100).' }) _ids?: string[],
    @Arg('after', () => Float, { nullable: true, description: 'Resume after this log position (from an earlier payload).' }) _after?: number,
  ): MediaBuyUpdate {
    return update;
  }

  @Subscription(() => TaskStatusChange, {
    description: 'Tasks submitted and moved on: your own, or every buyer’s for a seller or admin (the approvals inbox).',
    subscribe: (data: SubscribeResolverData<unknown, Record<string, unknown>, GraphQLContext>) =>
      follow(data, async (event, principal) => {
        if (event.type !== 'TaskSubmitted' && event.type !== 'TaskStatusChanged') return undefined;
        const d = event.data as Record<string, unknown>;
        const taskId = publicId(String(d.task_id));
        if (!oneOf(data.args.taskIds, taskId)) return undefined;
        // The task's type and subject are on its first event (TaskSubmitted).
        const o = event.type === 'TaskSubmitted' ? (event.data as Record<string, unknown>) : await streamOrigin(data.context.app.ports, event.streamId);
        if (!mayRead(principal, o.owner as string | undefined)) return undefined;
        const change: TaskStatusChange = {
          position: event.position,
          taskId,
          taskType: String(o.task_type ?? ''),
          resourceId: publicId(String(o.resource_id ?? '')),
          status: event.type === 'TaskSubmitted' ? 'submitted' : String(d.status),
          previousStatus: str(d.from),
          message: String(d.message ?? ''),
          at: str(d.at) ?? event.metadata.time,
        };
        return change;
      }),
  })
  taskStatusChanged(
    @Root() change: TaskStatusChange,
    @Arg('taskIds', () => [String], { nullable: true, description: 'Only these tasks (default: all you may see; at most 100).' }) _taskIds?: string[],
    @Arg('after', () => Float, { nullable: true, description: 'Resume after this log position (from an earlier payload).' }) _after?: number,
  ): TaskStatusChange {
    return change;
  }

  @Subscription(() => DeliveryUpdate, {
    description: 'Delivery of your media buys as the ad server records it, restates it or reports it late.',
    subscribe: (data: SubscribeResolverData<unknown, Record<string, unknown>, GraphQLContext>) =>
      follow(data, (event, principal) => {
        const kind = DELIVERY_EVENTS[event.type];
        if (!kind) return undefined;
        const d = event.data as Record<string, unknown> & { owner: string; media_buy_id: string };
        const mediaBuyId = publicId(d.media_buy_id);
        if (d.owner !== principal.org || !oneOf(data.args.mediaBuyIds, mediaBuyId)) return undefined;
        const hours = (kind === 'recorded' ? d.hours : kind === 'adjusted' ? [d.hour] : []) as { impressions: number; spend_cents: number }[];
        const previous = kind === 'adjusted' ? (d.previous as { impressions: number; spend_cents: number }) : undefined;
        const sum = (f: 'impressions' | 'spend_cents') => hours.reduce((t, h) => t + h[f], 0) - (previous ? previous[f] : 0);
        const update: DeliveryUpdate = {
          position: event.position,
          mediaBuyId,
          kind,
          hours: hours.length,
          impressions: sum('impressions'),
          spend: sum('spend_cents') / 100,
          currency: str(d.currency),
          through: str(d.through) ?? str(d.expected_availability),
          reason: str(d.reason),
        };
        return update;
      }),
  })
  deliveryUpdated(
    @Root() update: DeliveryUpdate,
    @Arg('mediaBuyIds', () => [String], { nullable: true, description: 'Only these buys (default: all of yours; at most 100).' }) _mediaBuyIds?: string[],
    @Arg('after', () => Float, { nullable: true, description: 'Resume after this log position (from an earlier payload).' }) _after?: number,
  ): DeliveryUpdate {
    return update;
  }

  @Subscription(() => WebhookActivityEvent, {
    description: 'Webhooks the seller schedules and attempts to your endpoints (every buyer’s, for a seller or admin).',
    subscribe: (data: SubscribeResolverData<unknown, Record<string, unknown>, GraphQLContext>) =>
      follow(data, async (event, principal) => {
        if (event.type !== 'WebhookScheduled' && event.type !== 'WebhookAttempted') return undefined;
        const o = event.type === 'WebhookScheduled' ? (event.data as Record<string, unknown>) : await streamOrigin(data.context.app.ports, event.streamId);
        if (!mayRead(principal, o.owner as string | undefined)) return undefined;
        const d = event.data as Record<string, unknown>;
        const attempted = event.type === 'WebhookAttempted';
        const activity: WebhookActivityEvent = {
          position: event.position,
          idempotencyKey: String(d.idempotency_key),
          kind: attempted ? 'attempted' : 'scheduled',
          notificationType: str(o.notification_type),
          taskId: o.task_id ? publicId(o.task_id as string) : null,
          mediaBuyId: o.media_buy_id ? publicId(o.media_buy_id as string) : null,
          attempt: attempted ? Number(d.attempt) : null,
          outcome: attempted ? str(d.status) : null,
          httpStatus: attempted && typeof d.http_status_code === 'number' ? d.http_status_code : null,
          nextAttemptAt: attempted ? str(d.next_attempt_at) : null,
          at: str(d.at) ?? str(d.scheduled_at) ?? event.metadata.time,
        };
        return activity;
      }),
  })
  webhookActivity(
    @Root() activity: WebhookActivityEvent,
    @Arg('after', () => Float, { nullable: true, description: 'Resume after this log position (from an earlier payload).' }) _after?: number,
  ): WebhookActivityEvent {
    return activity;
  }

  @Subscription(() => ReceivedWebhookEvent, {
    description: 'Webhooks your receiver endpoints accepted (verified; each first copy once).',
    subscribe: (data: SubscribeResolverData<unknown, Record<string, unknown>, GraphQLContext>) =>
      follow(data, (event, principal) => {
        if (event.type !== 'WebhookReceived') return undefined;
        const d = event.data as Record<string, unknown>;
        if (d.owner !== principal.org) return undefined;
        const received: ReceivedWebhookEvent = { position: event.position, endpointId: String(d.endpoint_id), sender: String(d.sender), format: String(d.format), receivedAt: String(d.received_at) };
        return received;
      }),
  })
  receivedWebhook(
    @Root() received: ReceivedWebhookEvent,
    @Arg('after', () => Float, { nullable: true, description: 'Resume after this log position (from an earlier payload).' }) _after?: number,
  ): ReceivedWebhookEvent {
    return received;
  }

  @Subscription(() => PublicEventMessage, {
    description:
      'The public event contract live (docs/events.md): the CloudEvents the Kafka public topics carry, for what you may see — your own events (every buyer’s for a seller or admin) and the registry’s (anyone signed in).',
    subscribe: (data: SubscribeResolverData<unknown, Record<string, unknown>, GraphQLContext>) => {
      const types = (data.args.types as string[] | null | undefined) ?? [];
      if (types.length > MAX_FILTER_ITEMS) throw new AppError('VALIDATION_ERROR', `types holds ${types.length} items; at most ${MAX_FILTER_ITEMS} are allowed`, 'types');
      const selected = selectTypes(types);
      if ('unknown' in selected) throw new AppError('VALIDATION_ERROR', `unknown public event type "${selected.unknown}": give a name (media_buy.status_changed), a versioned name (…v1) or a domain (media_buy)`, 'types');
      const ports = data.context.app.ports;
      // Owners as the relay finds them (the stream's creation), from the live log's cache.
      const attribution: Attribution = { tenantKey: ports.publicTenantKey, streamOwner: async (streamId) => (await streamOrigin(ports, streamId)).owner };
      return follow(data, async (event, principal) => {
        if (!PUBLISHED_INTERNAL_TYPES.has(event.type)) return undefined;
        const attributed = await attributePublicEvent(event, attribution);
        if (!attributed || !selected.names.has(attributed.event.name)) return undefined;
        const { event: pub, owner } = attributed;
        // The registry's are everyone's; a buyer's, its own (every buyer's for a seller or admin).
        if (owner !== undefined && !mayRead(principal, owner)) return undefined;
        const message: PublicEventMessage = { position: pub.position, id: pub.id, type: cloudEventType(pub.name), source: CLOUDEVENTS_SOURCE, subject: pub.subject, tenant: pub.tenant, time: pub.time, data: pub.data as Record<string, unknown> };
        return message;
      });
    },
  })
  publicEvents(
    @Root() message: PublicEventMessage,
    @Arg('types', () => [String], { nullable: true, description: 'Only these: names, versioned names or domains (default: all; at most 100).' }) _types?: string[],
    @Arg('after', () => Float, { nullable: true, description: 'Resume after this log position (from an earlier payload).' }) _after?: number,
  ): PublicEventMessage {
    return message;
  }

  @Subscription(() => RegistryFeedEntry, {
    description: 'The registry’s change feed as entries are recorded (any signed-in caller, like the REST feed).',
    subscribe: (data: SubscribeResolverData<unknown, Record<string, unknown>, GraphQLContext>) => {
      // Each entry is looked up in the list: bounded as the feed query's is.
      const types = data.args.types as string[] | null | undefined;
      if (types && types.length > MAX_FEED_TYPES) throw new AppError('VALIDATION_ERROR', `types holds ${types.length} filters; at most ${MAX_FEED_TYPES} are allowed`, 'types');
      return follow(data, (event) => {
        if (event.type !== 'FeedEntryRecorded') return undefined;
        const d = event.data as Record<string, string>;
        if (!oneOf(data.args.types, d.entity_type!) && !oneOf(data.args.types, d.event_type!)) return undefined;
        const entry: RegistryFeedEntry = { position: event.position, eventId: d.event_id!, eventType: d.event_type!, entityType: d.entity_type!, entityId: d.entity_id!, actor: d.actor!, createdAt: d.created_at! };
        return entry;
      });
    },
  })
  registryFeed(
    @Root() entry: RegistryFeedEntry,
    @Arg('types', () => [String], { nullable: true, description: 'Only these entity types (publisher, authorization, brand, storyboards) or event types (default: all; at most 100).' }) _types?: string[],
    @Arg('after', () => Float, { nullable: true, description: 'Resume after this log position (from an earlier payload).' }) _after?: number,
  ): RegistryFeedEntry {
    return entry;
  }
}
