import DataLoader from 'dataloader';
import { Arg, Ctx, FieldResolver, Int, Query, Resolver, Root } from 'type-graphql';
import { impairmentsOfBuys } from '../../application/media-buy-reads';
import { recentReceivedWebhooks } from '../../application/receiver-reads';
import { webhookAttemptsOfBuys, type WebhookActivityRow } from '../../application/webhook-reads';
import type { Impairment as ImpairmentDoc } from '../../domain/impairment/impairment';
import { AppError } from '../../shared/errors';
import { publicId } from '../../shared/ids';
import { hasUnstorableText } from '../../shared/nul';
import { isObject } from '../../shared/objects';
import { checkFirst, MAX_PAGE } from '../pages';
import { MediaBuy } from '../buys/buy.type';
import type { GraphQLContext } from '../context';
import { Impairment, ReceivedWebhook, WebhookActivity } from './webhook.type';

/** Attempt rows read per buy: enough for the newest fires with their retries. */
const ATTEMPT_ROWS_PER_BUY = 500;
/** The most received webhooks one call answers. */
const MAX_RECEIVED = 500;

interface Loaders {
  /** Keyed by the buy's owner and its stored id (the activity table is indexed by owner, then buy). */
  activity: DataLoader<{ owner: string; id: string }, WebhookActivity[], string>;
  impairments: DataLoader<string, Impairment[]>;
}

const perRequest = new WeakMap<GraphQLContext, Loaders>();

/** A fire's attempts as one delivery: where it stands follows from its last attempt. */
function toActivity(rows: WebhookActivityRow[]): WebhookActivity {
  const attempts = [...rows].sort((a, b) => a.attempt - b.attempt);
  const first = attempts[0]!;
  const last = attempts.at(-1)!;
  const state = attempts.some((a) => a.status === 'success') ? 'delivered' : last.status === 'pending' ? (attempts.length > 1 ? 'retrying' : 'scheduled') : 'gave_up';
  return {
    idempotencyKey: first.idempotency_key,
    notificationType: first.notification_type,
    taskId: first.task_id ? publicId(first.task_id) : null,
    url: first.url,
    state,
    payloadBytes: first.payload_size_bytes,
    sequenceNumber: first.sequence_number,
    attempts: attempts.map((a) => ({
      attempt: a.attempt,
      outcome: a.status,
      httpStatus: a.http_status_code,
      errorMessage: a.error_message,
      startedAt: a.fired_at,
      completedAt: a.completed_at,
      durationMs: a.response_time_ms,
    })),
  };
}

function loadersOf(ctx: GraphQLContext): Loaders {
  let loaders = perRequest.get(ctx);
  if (!loaders) {
    const ports = ctx.app.ports;
    loaders = {
      activity: new DataLoader(
        async (keys) => {
          const fires = new Map<string, Map<string, WebhookActivityRow[]>>(keys.map((k) => [k.id, new Map()]));
          const byOwner = new Map<string, string[]>();
          for (const k of keys) byOwner.set(k.owner, [...(byOwner.get(k.owner) ?? []), k.id]);
          for (const [owner, ids] of byOwner) {
            for (const row of await webhookAttemptsOfBuys(ports, owner, ids, ATTEMPT_ROWS_PER_BUY)) {
              const ofBuy = fires.get(row.media_buy_id!);
              if (ofBuy) ofBuy.set(row.idempotency_key, [...(ofBuy.get(row.idempotency_key) ?? []), row]);
            }
          }
          // Newest fire first, by when its first attempt was due or made.
          return keys.map((k) => [...fires.get(k.id)!.values()].map(toActivity).sort((a, b) => b.attempts[0]!.startedAt.localeCompare(a.attempts[0]!.startedAt)));
        },
        { cacheKeyFn: (k) => JSON.stringify([k.owner, k.id]) },
      ),
      impairments: new DataLoader(async (ids) => {
        const found = new Map<string, Impairment[]>(ids.map((id) => [id, []]));
        for (const row of await impairmentsOfBuys(ports, ids)) {
          const d = JSON.parse(row.doc) as ImpairmentDoc;
          found.get(row.media_buy_id)?.push({ id: d.impairment_id, reasonCode: d.reason_code, reason: d.reason, resourceId: d.resource_id, packageIds: [...d.package_ids], observedAt: d.observed_at, resolvedAt: row.resolved_at, remediation: d.remediation ?? null });
        }
        return ids.map((id) => found.get(id)!);
      }),
    };
    perRequest.set(ctx, loaders);
  }
  return loaders;
}

/** A buy's webhooks and health, as the seller side records them (the buy is one its caller may read). */
@Resolver(() => MediaBuy)
export class BuyWebhooksResolver {
  @FieldResolver(() => [WebhookActivity], { description: 'The webhooks sent about it (its task’s status, delivery reports, …), newest first, each with its attempts.' })
  async webhookActivity(@Root() buy: MediaBuy, @Ctx() ctx: GraphQLContext, @Arg('first', () => Int, { defaultValue: 10, description: `At most this many, 1 to ${MAX_PAGE}.` }) first: number): Promise<WebhookActivity[]> {
    checkFirst(first);
    return (await loadersOf(ctx).activity.load({ owner: buy.owner, id: buy.internalId })).slice(0, first);
  }

  @FieldResolver(() => [Impairment], { description: 'Its impairments, open and resolved, oldest first.' })
  async impairments(@Root() buy: MediaBuy, @Ctx() ctx: GraphQLContext, @Arg('first', () => Int, { defaultValue: 20, description: `At most this many, 1 to ${MAX_PAGE}.` }) first: number): Promise<Impairment[]> {
    checkFirst(first);
    return (await loadersOf(ctx).impairments.load(buy.internalId)).slice(0, first);
  }
}

/** The buyer's receiver, typed. */
@Resolver(() => ReceivedWebhook)
export class ReceivedWebhookResolver {
  @Query(() => [ReceivedWebhook], { description: `Webhooks your receiver endpoints accepted (after verification and dedup), newest first; filter by task. limit: 1 to ${MAX_RECEIVED} (default 50). Buyer key required.` })
  async receivedWebhooks(
    @Ctx() ctx: GraphQLContext,
    @Arg('taskId', () => String, { nullable: true }) taskId?: string | null,
    @Arg('limit', () => Int, { nullable: true }) limit?: number | null,
  ): Promise<ReceivedWebhook[]> {
    if (!ctx.principal || ctx.principal.role !== 'buyer') throw new AppError('UNAUTHENTICATED', 'a Bearer API key with role buyer is required');
    // Refused rather than quietly cut: a client asking for more than a page holds learns the page size.
    if (limit !== undefined && limit !== null && (!Number.isInteger(limit) || limit < 1 || limit > MAX_RECEIVED)) throw new AppError('VALIDATION_ERROR', `limit must be between 1 and ${MAX_RECEIVED}`, 'limit');
    if (taskId && hasUnstorableText(taskId)) throw new AppError('VALIDATION_ERROR', 'taskId contains U+0000 or an unpaired surrogate', 'taskId');
    const rows = await recentReceivedWebhooks(ctx.app.ports, ctx.principal.org, { ...(taskId ? { taskId } : {}), limit: limit ?? 50 });
    return rows.map((r) => ({
      id: `${r.dedup_scope} ${r.dedup_key}`,
      endpointId: r.endpoint_id,
      sender: r.sender,
      taskId: r.task_id,
      taskType: r.task_type,
      status: r.status,
      notificationType: r.notification_type,
      sentAt: r.sent_at,
      receivedAt: r.received_at,
      data: isObject(r.data) ? r.data : null,
    }));
  }
}
