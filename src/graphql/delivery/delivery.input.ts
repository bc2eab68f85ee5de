import { Field, Float, ID, InputType, Int } from 'type-graphql';

@InputType({ description: 'One recorded hour of a package, restated (late data from the ad server). Errors name the field they are about in `extensions.field`.' })
export class DeliveryAdjustmentInput {
  @Field(() => ID) mediaBuyId!: string;
  @Field() packageId!: string;
  @Field({ description: 'The UTC hour restated, e.g. 2026-11-23T10:00:00Z.' }) hourStart!: string;
  @Field(() => Int) impressions!: number;
  @Field(() => Int) clicks!: number;
  @Field(() => Float, { description: 'In the buy’s currency, at most two decimals.' }) spend!: number;
  @Field({ description: 'Why the hour is restated (sent in the `adjusted` delivery report).' }) reason!: string;
}

@InputType({ description: 'The ad server’s data for a live buy is late.' })
export class DeliveryDelayInput {
  @Field(() => ID) mediaBuyId!: string;
  @Field({ description: 'When the data is expected (ISO 8601).' }) expectedAvailability!: string;
  @Field() reason!: string;
}
