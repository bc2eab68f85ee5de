import { Arg, Ctx, Mutation, Resolver } from 'type-graphql';
import { adjustDelivery, reportDeliveryDelay } from '../../application/delivery-corrections';
import type { HourDelivery } from '../../domain/delivery/delivery';
import type { GraphQLContext } from '../context';
import { operatorCommand, settled } from '../media-buys/media-buy.resolver';
import { inCallerSpelling } from '../tasks';
import { DeliveryAdjustmentInput, DeliveryDelayInput } from './delivery.input';
import { DeliveryAdjustment, DeliveryDelay } from './delivery.type';

const figures = (h: HourDelivery) => ({ impressions: h.impressions, clicks: h.clicks, spend: h.spend_cents / 100 });

/** The seller's corrections to recorded delivery (late or restated data from the ad server). */
@Resolver()
export class DeliveryResolver {
  @Mutation(() => DeliveryAdjustment, {
    description: 'Operator (late data from the ad server): restates one recorded hour of a package. A period already reported gets an `adjusted` delivery report. Seller or admin key.',
  })
  async adjustDelivery(@Ctx() ctx: GraphQLContext, @Arg('input', () => DeliveryAdjustmentInput) input: DeliveryAdjustmentInput): Promise<DeliveryAdjustment> {
    const c = operatorCommand(ctx);
    const { media_buy_id, hour, previous, reason, at } = await inCallerSpelling(() =>
      adjustDelivery(ctx.app.ports.store, { media_buy_id: input.mediaBuyId, package_id: input.packageId, hour_start: input.hourStart, impressions: input.impressions, clicks: input.clicks, spend: input.spend, reason: input.reason }, c),
    );
    return settled(ctx, { mediaBuyId: media_buy_id, packageId: hour.package_id, hourStart: hour.hour_start, hour: figures(hour), previous: figures(previous), reason, at });
  }

  @Mutation(() => DeliveryDelay, {
    description: 'Operator: the ad server’s data for a live buy is late. Sends a `delayed` delivery report (status reporting_delayed) with expected_availability. Seller or admin key.',
  })
  async reportDeliveryDelay(@Ctx() ctx: GraphQLContext, @Arg('input', () => DeliveryDelayInput) input: DeliveryDelayInput): Promise<DeliveryDelay> {
    const c = operatorCommand(ctx);
    const d = await inCallerSpelling(() => reportDeliveryDelay(ctx.app.ports.store, { media_buy_id: input.mediaBuyId, expected_availability: input.expectedAvailability, reason: input.reason }, c));
    return settled(ctx, { mediaBuyId: d.media_buy_id, expectedAvailability: d.expected_availability, reason: d.reason, at: d.at });
  }
}
