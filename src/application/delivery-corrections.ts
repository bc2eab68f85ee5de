import { decideAdjustment, deliveryStream, foldDelivery, type DeliveryEvent, type DeliveryState } from '../domain/delivery/delivery';
import { ENDED_STATUSES, mediaBuyDecider, mediaBuyStream } from '../domain/media-buy/media-buy';
import { ConcurrencyError, type EventStore } from '../eventstore/port';
import { AppError } from '../shared/errors';
import { loadState, type CommandContext } from './command-handler';


async function liveBuy(store: EventStore, mediaBuyId: string) {
  const { state } = await loadState(store, mediaBuyStream(mediaBuyId), mediaBuyDecider);
  if (state.status === 'none') throw new AppError('MEDIA_BUY_NOT_FOUND', `no media buy ${mediaBuyId}`, 'media_buy_id');
  return state;
}

/**
 * Late data from the ad server (an operator command): one recorded hour restated. Appended to
 * the buy's delivery stream at the version read, so it cannot race the ad server's own records;
 * the delivery read model and the reporter (an `adjusted` report) follow from the event.
 */
export async function adjustDelivery(
  store: EventStore,
  input: { media_buy_id: string; package_id: string; hour_start: string; impressions: number; clicks: number; spend: number; reason: string },
  ctx: CommandContext,
): Promise<Extract<DeliveryEvent, { type: 'DeliveryAdjusted' }>['data']> {
  const buy = await liveBuy(store, input.media_buy_id);
  const spendCents = Math.round(input.spend * 100);
  if (!Number.isFinite(input.spend) || Math.abs(input.spend * 100 - spendCents) > 1e-6) throw new AppError('VALIDATION_ERROR', 'spend must be an amount with at most two decimals', 'spend');
  const [event] = await appendDelivery(
    store,
    input.media_buy_id,
    (state) => [decideAdjustment(state, { media_buy_id: input.media_buy_id, owner: buy.terms.owner, packages: buy.terms.packages }, { ...input, spend_cents: spendCents, now: ctx.now })],
    ctx,
  );
  return event!.data;
}

/**
 * Appends what `decide` makes of a buy's delivery stream at the version it read, so nothing can
 * race the ad server's own records: on a concurrent append it reads, folds and decides again
 * (three retries). Answers the events appended.
 */
export async function appendDelivery<E extends DeliveryEvent>(
  store: EventStore,
  mediaBuyId: string,
  decide: (state: DeliveryState) => readonly E[],
  ctx: CommandContext,
): Promise<readonly E[]> {
  const stream = deliveryStream(mediaBuyId);
  for (let attempt = 0; ; attempt++) {
    const history = await store.readStream(stream);
    const events = decide(foldDelivery(history));
    const metadata = { time: ctx.now, principal: ctx.principal };
    try {
      await store.append(stream, events.map((e) => ({ type: e.type, data: e.data, metadata })), { expectedVersion: history.length });
      return events;
    } catch (err) {
      if (err instanceof ConcurrencyError && attempt < 3) continue;
      throw err;
    }
  }
}

/** The ad server's data for a live buy is late: the reporter tells the buyer (a `delayed` report). */
export async function reportDeliveryDelay(
  store: EventStore,
  input: { media_buy_id: string; expected_availability: string; reason: string },
  ctx: CommandContext,
): Promise<Extract<DeliveryEvent, { type: 'DeliveryDelayed' }>['data']> {
  const buy = await liveBuy(store, input.media_buy_id);
  if (ENDED_STATUSES.has(buy.status)) throw new AppError('INVALID_STATE', `media buy ${input.media_buy_id} is ${buy.status}`, 'media_buy_id');
  const expected = Date.parse(input.expected_availability);
  if (Number.isNaN(expected)) throw new AppError('VALIDATION_ERROR', 'expected_availability must be an ISO 8601 date-time', 'expected_availability');
  if (expected <= Date.parse(ctx.now)) throw new AppError('VALIDATION_ERROR', 'expected_availability must be in the future', 'expected_availability');
  if (!input.reason.trim()) throw new AppError('VALIDATION_ERROR', 'reason is required', 'reason');
  const data = { media_buy_id: input.media_buy_id, owner: buy.terms.owner, expected_availability: new Date(expected).toISOString(), reason: input.reason.trim(), at: ctx.now };
  await store.append(deliveryStream(input.media_buy_id), [{ type: 'DeliveryDelayed', data, metadata: { time: ctx.now, principal: ctx.principal } }]);
  return data;
}
