import { Field, Float, ID, Int, ObjectType } from 'type-graphql';

@ObjectType({ description: 'What one package delivered in one hour.' })
export class HourFigures {
  @Field(() => Int) impressions!: number;
  @Field(() => Int) clicks!: number;
  @Field(() => Float, { description: 'In the buy’s currency.' }) spend!: number;
}

@ObjectType({ description: 'An hour of delivery restated: the figures before and after.' })
export class DeliveryAdjustment {
  @Field(() => ID) mediaBuyId!: string;
  @Field() packageId!: string;
  @Field() hourStart!: string;
  @Field(() => HourFigures) hour!: HourFigures;
  @Field(() => HourFigures) previous!: HourFigures;
  @Field() reason!: string;
  @Field({ description: 'When it was restated (ISO 8601).' }) at!: string;
}

@ObjectType({ description: 'Late delivery data, announced to the buyer in a `delayed` report.' })
export class DeliveryDelay {
  @Field(() => ID) mediaBuyId!: string;
  @Field() expectedAvailability!: string;
  @Field() reason!: string;
  @Field() at!: string;
}
