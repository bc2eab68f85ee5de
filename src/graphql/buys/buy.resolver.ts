import DataLoader from 'dataloader';
import { Arg, Ctx, FieldResolver, ID, Int, Mutation, Query, Resolver, Root } from 'type-graphql';
import { deliveryHoursOfBuys, listMediaBuys, mediaBuyHistory, mediaBuysByIds, tasksByIds, waitingTasks, type DeliveryRow, type MediaBuyRow, type TaskRow } from '../../application/media-buy-reads';
import type { Principal } from '../../application/api-keys';
import { AppError } from '../../shared/errors';
import { checkFirst, decodeCursor, encodeCursor, MAX_PAGE } from '../pages';
import { publicId } from '../../shared/ids';
import { storedBuyIds } from '../../application/buy-ids';
import { deliveryMetrics, deliverySeries } from '../../application/tasks/delivery-tasks';
import type { GraphQLContext } from '../context';
import { runTask } from '../tasks';
import { MediaBuyInput } from './buy.input';
import { isOperator, mayRead, mediaBuyChange } from './media-buy-change';
import { Delivery, DeliveryGranularity, MediaBuy, MediaBuyConnection, Task, TimelineEntry } from './buy.type';

export function principalOf(ctx: GraphQLContext): Principal {
  if (!ctx.principal) throw new AppError('UNAUTHENTICATED', 'a Bearer API key or access token is required');
  return ctx.principal;
}


/**
 * What one request loads, batched and cached for that request only (DataLoader): a page of buys
 * asking each for its task and its delivery makes one query per kind, not one per buy.
 */
interface Loaders {
  buys: DataLoader<string, MediaBuyRow | undefined>;
  tasks: DataLoader<string, TaskRow | undefined>;
  delivery: DataLoader<string, DeliveryRow[]>;
}

// Made the first time a request asks (most requests never do), and dropped with the request.
const perRequest = new WeakMap<GraphQLContext, Loaders>();

export function loadersOf(ctx: GraphQLContext): Loaders {
  let loaders = perRequest.get(ctx);
  if (!loaders) {
    const ports = ctx.app.ports;
    const principal = principalOf(ctx);
    loaders = {
      buys: new DataLoader(async (ids) => {
        // A buyer's own buys come from the per-buy cache get_media_buys answers from (an entry
        // lives until an event for that buy is projected): mediaBuy(id) then costs what the JSON
        // field does instead of a SQL read (54 µs of a 350 µs request here). A seller or admin
        // reads any owner's, which the cache (kept per owner) does not hold: SQL as before.
        if (!isOperator(principal)) {
          const cached = await ports.mediaBuyCache.get(ports.readModels, principal.org, ids);
          return ids.map((id) => cached.get(id)?.row);
        }
        const rows = new Map((await mediaBuysByIds(ports, ids)).map((b) => [b.media_buy_id, b]));
        return ids.map((id) => {
          const row = rows.get(id);
          return row && mayRead(principal, row.owner) ? row : undefined;
        });
      }),
      tasks: new DataLoader(async (ids) => {
        const rows = new Map((await tasksByIds(ports, ids)).map((t) => [t.task_id, t]));
        return ids.map((id) => {
          const row = rows.get(id);
          return row && mayRead(principal, row.owner) ? row : undefined;
        });
      }),
      // Keyed `range|id`: one query per range for every buy asking for it.
      delivery: new DataLoader(async (keys) => {
        const byRange = new Map<string, string[]>();
        for (const key of keys) {
          const cut = key.lastIndexOf('|');
          const range = key.slice(0, cut);
          byRange.set(range, [...(byRange.get(range) ?? []), key.slice(cut + 1)]);
        }
        const found = new Map<string, DeliveryRow[]>();
        for (const [range, ids] of byRange) {
          const [from, to] = range.split('~');
          for (const [id, rows] of await deliveryHoursOfBuys(ports, ids, from || undefined, to || undefined)) found.set(`${range}|${id}`, rows);
        }
        return keys.map((k) => found.get(k) ?? []);
      }),
    };
    perRequest.set(ctx, loaders);
  }
  return loaders;
}

export function toMediaBuy(row: MediaBuyRow): MediaBuy {
  const t = row.terms;
  return {
    id: publicId(row.media_buy_id),
    buyerRef: row.buyer_ref,
    status: row.status,
    currency: t.currency,
    totalBudget: t.total_budget,
    startTime: t.start_time,
    endTime: t.end_time,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    revision: row.revision,
    packages: t.packages.map((p) => ({
      id: p.package_id,
      buyerRef: p.buyer_ref ?? null,
      productId: p.product_id,
      pricingOptionId: p.pricing_option_id,
      budget: p.budget,
      bidPrice: p.bid_price ?? null,
      creativeIds: [...(p.creative_ids ?? [])],
      paused: p.paused === true,
      canceled: p.canceled === true,
    })),
    taskId: row.task_id,
    internalId: row.media_buy_id,
    owner: row.owner,
  };
}

function toTask(row: TaskRow): Task {
  return {
    id: publicId(row.task_id),
    type: row.task_type,
    status: row.status,
    message: row.message,
    resourceId: publicId(row.resource_id),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    history: row.history.map((h) => ({ status: h.status, message: h.message, at: h.at })),
    internalResourceId: row.resource_id,
  };
}

/** The statuses in which a task waits for the seller. */
const WAITING = ['submitted', 'input-required'];

/** Tasks as a typed graph: the seller's inbox, and the buy a task is about. */
@Resolver(() => Task)
export class TaskResolver {
  @Query(() => [Task], { description: 'Operator (seller or admin): every buyer’s tasks waiting for the seller (submitted or input-required), oldest first: the approvals inbox.' })
  async approvals(@Ctx() ctx: GraphQLContext, @Arg('first', () => Int, { defaultValue: 50, description: `At most this many, 1 to ${MAX_PAGE}.` }) first: number): Promise<Task[]> {
    const principal = principalOf(ctx);
    if (!isOperator(principal)) throw new AppError('FORBIDDEN', 'seller or admin role required');
    checkFirst(first);
    const rows = await waitingTasks(ctx.app.ports, WAITING, first);
    const { tasks } = loadersOf(ctx);
    for (const row of rows) tasks.prime(row.task_id, row);
    return rows.map(toTask);
  }

  @FieldResolver(() => MediaBuy, { nullable: true, description: 'The media buy the task is about (create or update of a buy), if it is one you may see.' })
  async mediaBuy(@Root() task: Task, @Ctx() ctx: GraphQLContext): Promise<MediaBuy | null> {
    if (task.type !== 'create_media_buy' && task.type !== 'update_media_buy') return null;
    const row = await loadersOf(ctx).buys.load(task.internalResourceId);
    return row ? toMediaBuy(row) : null;
  }
}

const instant = (value: string | null | undefined, field: string): string | undefined => {
  if (value === null || value === undefined) return undefined;
  const t = Date.parse(value);
  if (Number.isNaN(t)) throw new AppError('VALIDATION_ERROR', `${field} must be an ISO 8601 date or date-time`, field);
  return new Date(t).toISOString();
};

/** The buy a caller names, by the rule every binding follows (storedBuyIds: a fixture id is kept under its buyer). */
export async function buyByCallerId(ctx: GraphQLContext, id: string): Promise<MediaBuyRow | undefined> {
  const { buys } = loadersOf(ctx);
  for (const stored of storedBuyIds(principalOf(ctx).org, id)) {
    const row = await buys.load(stored);
    if (row) return row;
  }
  return undefined;
}

/** Media buys as a typed graph: what buyer and seller UIs select field by field. */
@Resolver(() => MediaBuy)
export class BuyResolver {
  @Query(() => MediaBuy, { nullable: true, description: 'One media buy by id (null when there is none you may see): yours, or any for a seller or admin.' })
  async mediaBuy(@Ctx() ctx: GraphQLContext, @Arg('id', () => ID) id: string): Promise<MediaBuy | null> {
    const row = await buyByCallerId(ctx, id);
    return row ? toMediaBuy(row) : null;
  }

  @Query(() => MediaBuyConnection, { description: 'Your media buys (every buyer’s for a seller or admin), a page at a time by id (a cursor connection); statuses filters them.' })
  async mediaBuysConnection(
    @Ctx() ctx: GraphQLContext,
    @Arg('first', () => Int, { defaultValue: 20, description: `Buys per page, 1 to ${MAX_PAGE}.` }) first: number,
    @Arg('after', () => String, { nullable: true, description: 'The endCursor of the page before.' }) after?: string | null,
    @Arg('statuses', () => [String], { nullable: true }) statuses?: string[] | null,
  ): Promise<MediaBuyConnection> {
    const principal = principalOf(ctx);
    checkFirst(first);
    const after_ = after ? decodeCursor(after) : undefined;
    // Sellers and admins approve and deliver every buyer's buys: they page through all of them.
    const rows = await listMediaBuys(ctx.app.ports, isOperator(principal) ? null : principal.org, { statuses: statuses ?? undefined, limit: first + 1, after: after_ });
    const page = rows.slice(0, first);
    const loaders = loadersOf(ctx);
    for (const row of page) loaders.buys.prime(row.media_buy_id, row);
    const edges = page.map((row) => ({ cursor: encodeCursor(row.media_buy_id), node: toMediaBuy(row) }));
    return { edges, pageInfo: { hasNextPage: rows.length > first, endCursor: edges.at(-1)?.cursor ?? null } };
  }

  @Mutation(() => MediaBuy, { description: 'Places a media buy (create_media_buy) and answers it typed: status pending with its task when the seller must approve. Buyer key required.' })
  async placeMediaBuy(@Ctx() ctx: GraphQLContext, @Arg('input', () => MediaBuyInput) input: MediaBuyInput): Promise<MediaBuy> {
    const placed = await runTask(ctx, 'create_media_buy', {
      buyer_ref: input.buyerRef,
      brand_manifest: { url: input.brandUrl },
      packages: input.packages.map((p) => ({
        product_id: p.productId,
        pricing_option_id: p.pricingOptionId,
        budget: p.budget,
        ...(p.bidPrice !== null && p.bidPrice !== undefined ? { bid_price: p.bidPrice } : {}),
        ...(p.buyerRef ? { buyer_ref: p.buyerRef } : {}),
      })),
      start_time: input.startTime ? input.startTime : { type: 'asap' },
      end_time: input.endTime,
    });
    const row = await loadersOf(ctx).buys.load(String(placed.media_buy_id));
    if (!row) throw new AppError('UNAVAILABLE', 'the media buy was placed but cannot be read back yet; read it with mediaBuy(id)');
    return toMediaBuy(row);
  }

  @FieldResolver(() => Task, { nullable: true, description: 'The task it waited on for the seller’s approval, if it did.' })
  async task(@Root() buy: MediaBuy, @Ctx() ctx: GraphQLContext): Promise<Task | null> {
    if (!buy.taskId) return null;
    const row = await loadersOf(ctx).tasks.load(buy.taskId);
    return row ? toTask(row) : null;
  }

  @FieldResolver(() => Delivery, { description: 'Delivery over a range (default: the whole flight so far): totals, per package, and a series in hours or days.' })
  async delivery(
    @Root() buy: MediaBuy,
    @Ctx() ctx: GraphQLContext,
    @Arg('granularity', () => DeliveryGranularity, { defaultValue: DeliveryGranularity.DAILY }) granularity: DeliveryGranularity,
    @Arg('from', () => String, { nullable: true, description: 'From this instant (inclusive).' }) from?: string | null,
    @Arg('to', () => String, { nullable: true, description: 'Up to this instant (exclusive).' }) to?: string | null,
  ): Promise<Delivery> {
    const range = `${instant(from, 'from') ?? ''}~${instant(to, 'to') ?? ''}`;
    const rows = await loadersOf(ctx).delivery.load(`${range}|${buy.internalId}`);
    return {
      currency: buy.currency,
      granularity,
      totals: deliveryMetrics(rows),
      byPackage: buy.packages.map((p) => ({ packageId: p.id, ...deliveryMetrics(rows.filter((r) => r.package_id === p.id)) })),
      series: deliverySeries(rows, granularity),
    };
  }

  @FieldResolver(() => [TimelineEntry], { description: 'Its history from the event log: created, approved or rejected, updated, each status change.' })
  async timeline(@Root() buy: MediaBuy, @Ctx() ctx: GraphQLContext): Promise<TimelineEntry[]> {
    const events = await mediaBuyHistory(ctx.app.ports, buy.internalId);
    return events.map(mediaBuyChange);
  }
}
