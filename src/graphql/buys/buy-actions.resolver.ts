import { Arg, Ctx, ID, Mutation, Resolver } from 'type-graphql';
import { AppError } from '../../shared/errors';
import type { GraphQLContext } from '../context';
import { runTask, withFieldsRenamed } from '../tasks';
import { MediaBuyBudgetInput } from './buy-actions.input';
import { buyByCallerId, loadersOf, toMediaBuy } from './buy.resolver';
import { MediaBuy } from './buy.type';
import type { MediaBuyRow } from '../../application/media-buy-reads';

/** The most a cancellation's reason may hold (update_media_buy's `reason`). */
const MAX_REASON = 500;

/** The buy a caller names by id, as mediaBuy(id) finds it; NOT_FOUND at `field` when it is none they may see. */
async function buyNamed(ctx: GraphQLContext, id: string, field: string): Promise<MediaBuyRow> {
  const row = await buyByCallerId(ctx, id);
  if (!row) throw new AppError('MEDIA_BUY_NOT_FOUND', 'no media buy of yours has this id', field);
  return row;
}

/**
 * update_media_buy names its fields in the task's terms (`updates.packages[0].budget`, camelCased
 * by runTask); the caller knows only this mutation's arguments, so each error is moved onto the
 * argument it is about. `rename` maps the task's field to the argument, undefined for the whole input.
 */
async function update(ctx: GraphQLContext, row: MediaBuyRow, updates: Record<string, unknown>, rename: (field: string) => string | undefined): Promise<MediaBuy> {
  await withFieldsRenamed(() => runTask(ctx, 'update_media_buy', { media_buy_id: row.media_buy_id, updates }), rename);
  const { buys } = loadersOf(ctx);
  buys.clear(row.media_buy_id); // this request read it before the change
  const after = await buys.load(row.media_buy_id);
  if (!after) throw new AppError('UNAVAILABLE', 'the media buy was changed but cannot be read back yet; read it with mediaBuy(id)');
  return toMediaBuy(after);
}

/** A status change's errors are about the buy the caller named (its status forbids it), or the reason. */
const statusField = (idArg: string) => (field: string) => (field === 'updates.reason' ? 'reason' : idArg);

/** What a buyer does to a live buy, typed: pause, resume, cancel, new budgets or end. Buyer key required. */
@Resolver(() => MediaBuy)
export class BuyActionsResolver {
  @Mutation(() => MediaBuy, { description: 'Pauses an active media buy (update_media_buy status pause) and answers it as it now is. INVALID_STATE at `id` when it is not active. Buyer key required.' })
  async pauseMediaBuy(@Ctx() ctx: GraphQLContext, @Arg('id', () => ID) id: string): Promise<MediaBuy> {
    return update(ctx, await buyNamed(ctx, id, 'id'), { status: 'pause' }, statusField('id'));
  }

  @Mutation(() => MediaBuy, { description: 'Resumes a paused media buy (update_media_buy status resume). INVALID_STATE at `id` when it is not paused. Buyer key required.' })
  async resumeMediaBuy(@Ctx() ctx: GraphQLContext, @Arg('id', () => ID) id: string): Promise<MediaBuy> {
    return update(ctx, await buyNamed(ctx, id, 'id'), { status: 'resume' }, statusField('id'));
  }

  @Mutation(() => MediaBuy, { description: 'Cancels a pending, active or paused media buy for good (update_media_buy status cancel), with the reason recorded on its timeline. Buyer key required.' })
  async cancelMediaBuy(@Ctx() ctx: GraphQLContext, @Arg('id', () => ID) id: string, @Arg('reason', { description: `Why (1 to ${MAX_REASON} characters); shown on the buy’s timeline.` }) reason: string): Promise<MediaBuy> {
    if (reason.trim().length === 0 || reason.length > MAX_REASON) throw new AppError('VALIDATION_ERROR', `reason must be 1 to ${MAX_REASON} characters`, 'reason');
    return update(ctx, await buyNamed(ctx, id, 'id'), { status: 'cancel', reason }, statusField('id'));
  }

  @Mutation(() => MediaBuy, { description: 'Changes package budgets and/or the end of the flight (update_media_buy); the total follows the packages. Errors name the input field (`packages[0].budget`, `endTime`). Buyer key required.' })
  async changeMediaBuyBudget(@Ctx() ctx: GraphQLContext, @Arg('input', () => MediaBuyBudgetInput) input: MediaBuyBudgetInput): Promise<MediaBuy> {
    const packages = input.packages ?? [];
    if (packages.length === 0 && !input.endTime) throw new AppError('VALIDATION_ERROR', 'name a package budget or an end time to change', 'packages');
    if (packages.length > 100) throw new AppError('VALIDATION_ERROR', 'at most 100 packages at a time', 'packages');
    const row = await buyNamed(ctx, input.mediaBuyId, 'mediaBuyId');
    const updates = {
      ...(packages.length ? { packages: packages.map((p) => ({ package_id: p.packageId, budget: p.budget })) } : {}),
      ...(input.endTime ? { end_time: input.endTime } : {}),
    };
    return update(ctx, row, updates, (field) => {
      if (field === 'mediaBuyId' || field === 'media_buy_id') return 'mediaBuyId';
      if (field === 'updates.endTime') return 'endTime';
      const p = /^updates\.packages(\[\d+\])(?:\.(packageId|budget))?/.exec(field);
      if (p) return `packages${p[1]}.${p[2] === 'packageId' ? 'packageId' : 'budget'}`;
      return field.startsWith('updates.packages') ? 'packages' : undefined;
    });
  }
}
